"""tf_cnn_benchmarks-style synthetic throughput sweeps on TensorFlow 2 (the LeaderGPU study's tables)."""
