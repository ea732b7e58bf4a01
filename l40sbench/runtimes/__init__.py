"""Inference of a fine-tuned model on other runtimes: export, a timing child per runtime, agreement with tf.

registry: the runtimes and what each needs; export: the libraries' own exporters and converters;
forward: each runtime's loaded model as one call (run in the child); child: the child process that
times it; agreement: how far a runtime's outputs are from tf's; measure: the rows, one per runtime.
"""
