"""Forward FLOPs per image, counted from the model's own graph by TensorFlow's profiler."""

from __future__ import annotations

COUNTER = "TensorFlow's profiler over the traced graph"


def graph_gflops(graph) -> float:
    """GFLOP (10^9 floating-point operations) of every op in a traced graph.

    The profiler adds each op's registered cost (a multiply-add is two
    operations; convolutions, matmuls, bias adds, pooling and batch norm are
    all counted), so nothing is typed in by hand.
    """
    import tensorflow as tf

    options = tf.compat.v1.profiler.ProfileOptionBuilder.float_operation()
    options["output"] = "none"
    profile = tf.compat.v1.profiler.profile(
        graph=graph, run_meta=tf.compat.v1.RunMetadata(), cmd="op", options=options
    )
    return profile.total_float_ops / 1e9


def forward_gflops(model, size: int, dtype: str = "float32") -> float:
    """GFLOP of one inference forward pass of one size x size image through a Keras model."""
    import tensorflow as tf

    function = tf.function(lambda images: model(images, training=False))
    return graph_gflops(function.get_concrete_function(tf.TensorSpec([1, size, size, 3], dtype)).graph)
