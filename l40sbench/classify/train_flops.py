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

CONVENTION = ("counted: the forward, then per layer of the base (2 x multiply-adds of its convolutions and "
              "dense layers) an activation gradient where its input depends on a trainable weight and a weight "
              "gradient where it trains; element-wise layers' backward left out")


def layer_gflops(layer) -> float:
    """GFLOP of one image through `layer`'s convolution or matmul (0 for a layer without one), by the suite's
    one convention (backends.flop_convention)."""
    from l40sbench.backends.flop_convention import layer_macs

    return 2 * layer_macs(layer) / 1e9


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
