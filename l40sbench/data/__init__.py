"""Data sources both pipelines read: class folders (`folders`), Pascal VOC (`voc`), TFDS sets (`tfds_source`), and
the one image decoder they share (`images`). Nothing here imports a pipeline."""
