"""--fine-tune N's training FLOPs, counted per layer (l40sbench.classify.train_flops): against a hand count on a
small base, and against TensorFlow's profiler over a traced gradient step of a real keras.applications base."""

import pytest

from l40sbench.classify import train_flops


def _small_base():
    import keras

    inputs = keras.Input((8, 8, 3))
    a = keras.layers.Conv2D(4, 3, padding="same", name="a")(inputs)  # 8x8x4, 3x3x3 kernel
    b = keras.layers.Conv2D(4, 1, name="b")(a)  # frozen branch from a
    c = keras.layers.DepthwiseConv2D(3, padding="same", name="c")(a)  # 8x8x4, 3x3 per channel
    d = keras.layers.Concatenate(name="d")([b, c])  # 8x8x8
    e = keras.layers.SeparableConv2D(2, 3, padding="same", name="e")(d)  # depthwise 3x3x8, pointwise 8 -> 2
    return keras.Model(inputs, e)


def test_the_per_layer_count_equals_a_hand_count():
    base = _small_base()
    for layer in base.layers:
        layer.trainable = layer.name in ("c", "e")  # the lowest trainable layer is c; b stays frozen beside it
    flops = {"a": 2 * 64 * 27 * 4, "b": 2 * 64 * 4 * 4, "c": 2 * 64 * 9 * 4, "e": 2 * 64 * (9 * 8 + 8 * 2)}
    assert {name: train_flops.layer_gflops(base.get_layer(name)) * 1e9 for name in flops} == pytest.approx(flops)
    total, parts = train_flops.fine_tune_gflops(base, forward_gflops=1.0)
    # Activation gradients: only e's input (the concatenation) depends on a trainable weight (c's);
    # neither c's input (a's output) nor b's does. Weight gradients: c and e.
    assert parts["activation_gradient_gflops"] * 1e9 == pytest.approx(flops["e"])
    assert parts["weight_gradient_gflops"] * 1e9 == pytest.approx(flops["c"] + flops["e"])
    assert total == pytest.approx(1.0 + (2 * flops["e"] + flops["c"]) / 1e9)


@pytest.mark.parametrize("top", [4, 12])
def test_the_count_agrees_with_the_profiler_over_a_traced_gradient_step(top):
    """vgg19 at 64 px with its top `top` layers training: the forward and the gradients of the trainable
    weights traced as one graph and counted by TensorFlow's profiler, against forward + the per-layer count."""
    import keras
    import tensorflow as tf

    from l40sbench.backends.tf_flops import graph_gflops

    base = keras.applications.VGG19(include_top=False, weights=None, input_shape=(64, 64, 3))
    for layer in base.layers[:-top]:
        layer.trainable = False

    def forward(images):
        return base(images, training=False)

    def step(images):
        # Only the trainable weights watched: a frozen Keras 3 layer's tf.Variable keeps trainable=True, so a
        # default tape would also build the frozen layers' gradients, which no output uses (the traced graph
        # holds them; TensorFlow prunes them before running, but the profiler counts the graph).
        trainable = [w.value for w in base.trainable_weights]
        with tf.GradientTape(watch_accessed_variables=False) as tape:
            tape.watch(trainable)
            loss = tf.reduce_sum(base(images, training=False))
        return tape.gradient(loss, trainable)

    spec = tf.TensorSpec([1, 64, 64, 3], tf.float32)
    forward_gflops = graph_gflops(tf.function(forward).get_concrete_function(spec).graph)
    profiled = graph_gflops(tf.function(step).get_concrete_function(spec).graph)
    counted, parts = train_flops.fine_tune_gflops(base, forward_gflops)
    assert parts["weight_gradient_gflops"] > 0 and parts["activation_gradient_gflops"] > 0
    assert counted == pytest.approx(profiled, rel=0.05), (counted, profiled, parts)
    assert forward_gflops < counted < 3 * forward_gflops
