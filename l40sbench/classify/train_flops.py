"""Training FLOPs of a partial fine-tune (--fine-tune N), counted layer by layer from the base's shapes.

A training step runs the forward everywhere, then the backward where gradients are needed: an activation
gradient (the gradient with respect to a layer's input, as costly as its forward) through every layer whose
input depends on a trainable weight, and a weight gradient (as costly again) for every layer that trains.
Both are counted for the layers that carry the arithmetic (convolutions, depthwise and separable ones, dense
layers), from each layer's kernel and output shape, 2 x multiply-adds; the element-wise layers' backward
(batch norm, activations, additions) is left out, a few per cent of a convolutional network's step.
Pure Keras: the same on every backend.
"""

from __future__ import annotations

import math

CONVENTION = ("counted: the forward, then per layer of the base (2 x multiply-adds of its convolutions and "
              "dense layers) an activation gradient where its input depends on a trainable weight and a weight "
              "gradient where it trains; element-wise layers' backward left out")


def _dims(shape) -> list[int]:
    return [int(d) for d in shape[1:]]  # without the batch


def layer_gflops(layer) -> float:
    """GFLOP of one image through `layer`'s convolution or matmul (0 for a layer without one)."""
    kind = type(layer).__name__
    if kind not in ("Conv2D", "DepthwiseConv2D", "SeparableConv2D", "Dense"):
        return 0.0
    out = _dims(layer.output.shape)
    channels_in = _dims(layer.input.shape)[-1]
    if kind == "Dense":
        return 2 * math.prod(out[:-1]) * channels_in * out[-1] / 1e9
    kh, kw = layer.kernel_size
    positions = math.prod(out[:-1])
    if kind == "Conv2D":
        return 2 * positions * kh * kw * channels_in // layer.groups * out[-1] / 1e9
    multiplier = layer.depth_multiplier
    depthwise = 2 * positions * kh * kw * channels_in * multiplier
    pointwise = 2 * positions * channels_in * multiplier * out[-1] if kind == "SeparableConv2D" else 0
    return (depthwise + pointwise) / 1e9


def _parents(layer) -> list:
    return [parent.operation for node in layer._inbound_nodes for parent in node.parent_nodes]


def fine_tune_gflops(base, forward_gflops: float) -> tuple[float, dict]:
    """(training GFLOP per image, its parts) of a classifier whose base trains only some layers.

    `forward_gflops` is the whole classifier's counted forward; the head above the base (pooling and one
    dense layer) trains too, and its backward is negligible.
    """
    depends: set[int] = set()  # ids of the layers whose input depends on a trainable weight
    activation = weight = 0.0
    for layer in base.layers:
        trains = bool(layer.trainable and layer.trainable_weights)
        upstream = any(id(parent) in depends or (parent.trainable and parent.trainable_weights)
                       for parent in _parents(layer))
        if upstream:
            depends.add(id(layer))
            activation += layer_gflops(layer)
        if trains:
            weight += layer_gflops(layer)
    return forward_gflops + activation + weight, {
        "forward_gflops": forward_gflops, "activation_gradient_gflops": activation, "weight_gradient_gflops": weight}
