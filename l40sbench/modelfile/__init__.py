"""A model file of the user's, one place for every command that takes one (classify --model, infer --model).

files: its kind, the image it takes (size, fixed batch, layout), whether its own layers scale that image, and
its identity; scaling: the --preprocess modes and how the suite decides one; keras_file: a .keras file loaded in
the precision asked for, and a Keras file or a SavedModel served on uint8 images; onnx_file: an ONNX file's
input read from its graph, and the file the runtimes load.
"""
