"""Forward FLOPs per image, counted from the model's own graph by TensorFlow's profiler, by the suite's convention.

The profiler has no cost for an Einsum between two activations (attention's scores and weighted values), so
those are counted here from their equations and shapes, as jax's dot_general is (flop_convention.einsum_flops).
"""

from __future__ import annotations

from l40sbench.backends.flop_convention import CONVENTION, TF_OPS, einsum_flops

COUNTER = f"{CONVENTION}, by TensorFlow's profiler over the traced graph (Einsum ops from their shapes)"
CALLS = ("PartitionedCall", "StatefulPartitionedCall")


def graph_gflops(graph) -> float:
    """GFLOP (10^9 floating-point operations) of a traced graph's convolutions, matmuls and einsums.

    The profiler gives each op type's registered cost (a multiply-add is two operations); only the
    convention's op types are kept (flop_convention.TF_OPS: forward, and backward where a training step
    is traced), so bias adds, pooling and batch norm are left out, as the other backends leave them. Its
    own deprecation warnings (it walks the graph through TensorFlow 1's helpers) are silenced.
    """
    import tensorflow as tf
    from tensorflow.python.util import deprecation

    options = tf.compat.v1.profiler.ProfileOptionBuilder.float_operation()
    options["output"] = "none"
    with deprecation.silence():
        profile = tf.compat.v1.profiler.profile(
            graph=graph, run_meta=tf.compat.v1.RunMetadata(), cmd="op", options=options
        )
    return (sum(_own_flops(profile, TF_OPS)) + _einsum_flops(graph)) / 1e9


def _einsum_flops(graph) -> int:
    """FLOPs of the graph's Einsum ops, from each op's equation and its operands' static shapes.

    Raises:
      ValueError: an Einsum whose operands' shapes are not known when traced (a count would be a guess).
    """
    total = 0
    for op in graph.get_operations():
        if op.type != "Einsum":
            continue
        shapes = [tensor.shape.as_list() for tensor in op.inputs]
        if any(shape is None or None in shape for shape in shapes):
            raise ValueError(f"Einsum {op.name} has operands of unknown shape {shapes}")
        total += einsum_flops(op.get_attr("equation").decode(), shapes)
    return total


def _own_flops(node, kept: frozenset):
    """Each kept op type's own count; the profiler nests its per-type nodes one inside the next."""
    if node.name in kept:
        yield node.float_ops
    for child in node.children:
        yield from _own_flops(child, kept)


def forward_gflops(model, size: int, dtype: str = "float32") -> float:
    """GFLOP of one inference forward pass of one size x size image through a Keras model."""
    import tensorflow as tf

    function = tf.function(lambda images: model(images, training=False))
    concrete = function.get_concrete_function(tf.TensorSpec([1, size, size, 3], dtype))
    graph = concrete.graph
    if any(op.type in CALLS for op in graph.get_operations()):
        # A function called from the graph (a SavedModel restored in a TFSMLayer) is opaque to the profiler:
        # freezing inlines it, so its convolutions and matmuls are counted as if traced here.
        from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

        graph = convert_variables_to_constants_v2(concrete).graph
    return graph_gflops(graph)
