"""One FLOP convention for every backend: 2 x the multiply-accumulates of convolutions and matmuls.

timm's tables and the architecture papers count this way. Element-wise ops, bias adds, pooling and batch norm
are left out, and a padded window counts its whole kernel (the taps that fall outside the image too), as the
layers' shapes say. Each backend counts with its own tool and keeps only these ops (TensorFlow's profiler,
the jaxpr jax traces, PyTorch's flop counter), so the same Keras model's count agrees across backends and
with `shape_gflops`, which reads the layers' weight and output shapes and runs nothing.

Imports no framework at the top: the shape count imports Keras when it is called, the jaxpr count reads the
objects it is given.
"""

from __future__ import annotations

import math

CONVENTION = "2 x multiply-accumulates of convolutions and matmuls"

# TensorFlow op types of the convention, forward and backward (a training step's count).
TF_OPS = frozenset({
    "Conv2D", "Conv3D", "DepthwiseConv2dNative", "MatMul", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3",
    "Conv2DBackpropInput", "Conv2DBackpropFilter", "Conv3DBackpropInputV2", "Conv3DBackpropFilterV2",
    "DepthwiseConv2dNativeBackpropInput", "DepthwiseConv2dNativeBackpropFilter",
})


def positive_gflops(flops, counter: str) -> float:
    """GFLOP of a count, refusing one that is missing or not positive (utilisation then says why).

    Raises:
      ValueError: naming the counter and what it gave.
    """
    if flops is None or not float(flops) > 0:
        raise ValueError(f"{counter} counted {flops!r} FLOPs for the forward")
    return float(flops) / 1e9


def jaxpr_flops(closed) -> int:
    """FLOPs of a traced jaxpr's conv_general_dilated and dot_general equations, from their shapes.

    Nested jaxprs (jit, custom derivatives, remat) count once, a scan's body once per step, and a cond's
    costliest branch.
    """
    return _jaxpr_flops(closed.jaxpr if hasattr(closed, "consts") else closed)


def _jaxpr_flops(jaxpr) -> int:
    total = 0
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        if name == "conv_general_dilated":
            kernel = eqn.invars[1].aval.shape
            out_features = kernel[eqn.params["dimension_numbers"].rhs_spec[0]]
            total += 2 * math.prod(eqn.outvars[0].aval.shape) * (math.prod(kernel) // out_features)
        elif name == "dot_general":
            (contracting, _), _ = eqn.params["dimension_numbers"]
            lhs = eqn.invars[0].aval.shape
            total += 2 * math.prod(eqn.outvars[0].aval.shape) * math.prod(lhs[d] for d in contracting)
        inner = [_jaxpr_flops(sub) for sub in _sub_jaxprs(eqn.params.values())]
        if inner:
            total += max(inner) if name == "cond" else sum(inner) * int(eqn.params.get("length", 1))
    return total


def einsum_flops(equation: str, shapes) -> int:
    """FLOPs of one einsum by the convention: 2 x the product of every index's size (each output element
    is a sum over the contracted indices), from its equation and its operands' shapes; an ellipsis stands for
    the leading dimensions an operand has beyond its letters.

    Raises:
      ValueError: an equation whose letters do not match its operands' ranks.
    """
    operands = equation.replace(" ", "").split("->")[0].split(",")
    if len(operands) != len(shapes):
        raise ValueError(f"einsum {equation!r} names {len(operands)} operands; {len(shapes)} given")
    sizes: dict[str, int] = {}
    for letters, shape in zip(operands, shapes, strict=True):
        if "..." in letters:
            head, tail = letters.split("...")
            extra = len(shape) - len(head) - len(tail)
            letters = head + "".join(chr(0x100 + i) for i in range(extra)) + tail  # the ellipsis' own indices
        if len(letters) != len(shape):
            raise ValueError(f"einsum {equation!r}: operand {letters!r} against shape {tuple(shape)}")
        for letter, size in zip(letters, shape, strict=True):
            sizes[letter] = max(sizes.get(letter, 1), int(size))  # a broadcast index of size 1 takes the other's
    return 2 * math.prod(sizes.values())


def _sub_jaxprs(values):
    for value in values:
        if hasattr(value, "eqns"):
            yield value
        elif hasattr(value, "jaxpr") and hasattr(value, "consts"):
            yield value.jaxpr
        elif isinstance(value, (list, tuple)):
            yield from _sub_jaxprs(value)


def shape_gflops(model) -> float:
    """GFLOP of one image's forward through a built Keras model, from its layers' shapes alone.

    Raises:
      ValueError: a layer with a kernel this count has no rule for, or a layer whose shapes are not fixed.
    """
    return positive_gflops(2 * sum(layer_macs(layer) for layer in _leaves(model)), "the layers' shapes")


def _leaves(layer):
    inner = getattr(layer, "layers", None)
    if inner is None:
        yield layer
        return
    for child in inner:
        yield from _leaves(child)


def layer_macs(layer) -> int:
    """Multiply-accumulates of one image through a layer's convolution or matmul (0 for a layer without one)."""
    import keras

    layers = keras.layers
    kernels = [w for w in layer.weights if w.path.rsplit("/", 1)[-1] in ("kernel", "depthwise_kernel")]
    if not kernels:
        return 0
    try:
        out, given = tuple(layer.output.shape[1:]), tuple(layer.input.shape[1:])
    except (AttributeError, ValueError) as error:
        raise ValueError(f"layer {layer.name}'s shapes cannot be read ({error})") from None
    if None in out or None in given:
        raise ValueError(f"layer {layer.name} has no fixed shape ({given} -> {out}): build the model at one size")
    spatial = out[1:] if getattr(layer, "data_format", "channels_last") == "channels_first" else out[:-1]
    if isinstance(layer, (layers.DepthwiseConv1D, layers.DepthwiseConv2D)):  # kernel: spatial, in, multiplier
        return math.prod(out) * math.prod(layer.kernel.shape[:-2])
    if isinstance(layer, (layers.SeparableConv1D, layers.SeparableConv2D)):  # a depthwise, then a 1x1
        return math.prod(spatial) * (math.prod(layer.depthwise_kernel.shape) + math.prod(layer.pointwise_kernel.shape))
    if isinstance(layer, (layers.Conv1DTranspose, layers.Conv2DTranspose, layers.Conv3DTranspose)):
        return math.prod(given) * math.prod(layer.kernel.shape[:-1])  # every input tap, kernel: spatial, out, in
    if isinstance(layer, (layers.Conv1D, layers.Conv2D, layers.Conv3D)):  # kernel: spatial, in / groups, out
        return math.prod(out) * math.prod(layer.kernel.shape[:-1])
    if isinstance(layer, layers.Dense):
        return math.prod(out) * layer.kernel.shape[0]
    raise ValueError(f"no shape rule for {type(layer).__name__} layer {layer.name}, which has a kernel")
