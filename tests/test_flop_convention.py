"""One FLOP convention on every backend: 2 x the multiply-accumulates of convolutions and matmuls.

The same Keras classifier is counted by TensorFlow's profiler, by the jaxpr jax traces and by PyTorch's flop
counter, each in its own interpreter (Keras picks its backend once per process), and by the layers' shapes;
the shape count is checked against VGG-19's arithmetic done by hand.
"""

import importlib.util
import inspect
import json
import math
import os
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import REPO

MODELS = {"vgg19": 64, "xception": 71}  # Keras' Xception refuses inputs below 71 px

COUNT = """
    import json
    import keras
    from l40sbench.backends import load
    from l40sbench.backends.flop_convention import shape_gflops
    from l40sbench.classify.bases import BASES
    from l40sbench.classify.model import build_base, build_classifier

    ops, counts = load(keras.backend.backend()), {}
    for name, size in MODELS.items():
        spec = BASES.get(name)
        model = build_classifier(spec, build_base(spec, size, "none", print)[0], size, 2, None)
        counts[name] = {"backend": ops.forward_gflops(model, size, "uint8"), "shapes": shape_gflops(model),
                        "counter": ops.FLOP_COUNTER}
    print("COUNTS", json.dumps(counts))
"""


def _vgg19_by_hand(size: int, classes: int = 2) -> float:
    """GFLOP of VGG-19 without its top, then global pooling and a dense head: 3x3 convolutions, SAME padding."""
    blocks = [(64, 2), (128, 2), (256, 4), (512, 4), (512, 4)]  # (channels, convolutions) per block
    macs, channels_in, side = 0, 3, size
    for channels, convolutions in blocks:
        for _ in range(convolutions):
            macs += side * side * 9 * channels_in * channels
            channels_in = channels
        side //= 2
    return 2 * (macs + 512 * classes) / 1e9


# tensorflow's in this process (the tests' backend); jax's and torch's in an interpreter of their own, in the long
# tier (the merge tier's tiny jax run holds its traced count against TensorFlow's profiler: tests/test_backends.py).
@pytest.mark.parametrize("backend", ["tensorflow", pytest.param("jax", marks=pytest.mark.long),
                                     pytest.param("torch", marks=pytest.mark.long)])
def test_each_backend_counts_the_convention_as_the_layers_shapes_do(backend):
    if importlib.util.find_spec(backend) is None:
        pytest.skip(f"{backend} is not installed here (CI leaves torch out: several GB; l40sbench[torch])")
    code = f"MODELS = {MODELS!r}\n" + textwrap.dedent(COUNT)
    if backend == "tensorflow":
        import contextlib
        import io

        import keras

        assert keras.backend.backend() == "tensorflow"
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(code, {})
        stdout = printed.getvalue()
    else:
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=600,
                                env={**os.environ, "KERAS_BACKEND": backend})
        assert result.returncode == 0, result.stderr[-3000:]
        stdout = result.stdout
    counts = json.loads(stdout.split("COUNTS", 1)[1])
    assert counts["vgg19"]["shapes"] == pytest.approx(_vgg19_by_hand(64), rel=1e-9)
    for name, figures in counts.items():
        assert figures["backend"] == pytest.approx(figures["shapes"], rel=0.03), (name, figures)
        assert figures["counter"].startswith("2 x multiply-accumulates of convolutions and matmuls")


def test_the_jaxpr_count_reads_grouped_convolutions_matmuls_and_scans():
    jax = pytest.importorskip("jax")
    from jax import lax

    from l40sbench.backends.flop_convention import jaxpr_flops

    def forward(images, depthwise, weights):
        maps = lax.conv_general_dilated(images, depthwise, (1, 1), "SAME", feature_group_count=8,
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))  # 3x3 depthwise, 8 channels
        pooled = maps.mean(axis=(1, 2))  # element-wise and reductions: not counted

        def step(carry, _):
            return carry @ weights, None

        return lax.scan(step, pooled, None, length=3)[0]  # three 8x8 matmuls

    traced = jax.make_jaxpr(jax.jit(forward))(jax.numpy.zeros((2, 10, 10, 8)), jax.numpy.zeros((3, 3, 1, 8)),
                                                jax.numpy.zeros((8, 8)))
    assert jaxpr_flops(traced) == 2 * (2 * 10 * 10 * 8 * 9) + 3 * 2 * (2 * 8 * 8)


def test_the_shape_count_refuses_what_it_has_no_rule_for():
    import keras

    from l40sbench.backends.flop_convention import layer_macs, shape_gflops

    inputs = keras.Input((6, 5))
    einsum = keras.layers.EinsumDense("abc,cd->abd", output_shape=(6, 4))
    with pytest.raises(ValueError, match="no shape rule for EinsumDense"):
        shape_gflops(keras.Model(inputs, einsum(inputs)))
    free = keras.Input((None, None, 3))
    with pytest.raises(ValueError, match="has no fixed shape"):
        shape_gflops(keras.Model(free, keras.layers.Conv2D(4, 3)(free)))
    transposed = keras.layers.Conv2DTranspose(4, 3, strides=2)
    transposed(keras.Input((5, 5, 2)))
    assert layer_macs(transposed) == math.prod((5, 5, 2)) * 3 * 3 * 4  # every input tap into the 3x3x4 kernel


def _attention_model():
    """ViT-shaped: 8x8 patches of a 32 px image embedded in 32 dims (16 tokens), one MultiHeadAttention of two
    heads of 16, a two-class head."""
    import keras

    inputs = keras.Input((32, 32, 3))
    x = keras.layers.Reshape((16, 32))(keras.layers.Conv2D(32, 8, strides=8)(inputs))
    x = keras.layers.GlobalAveragePooling1D()(keras.layers.MultiHeadAttention(2, 16)(x, x))
    return keras.Model(inputs, keras.layers.Dense(2)(x))


ATTENTION_BY_HAND = 2 * (16 * 8 * 8 * 3 * 32  # the patch embedding
                         + 3 * 16 * 32 * 32 + 16 * 32 * 32  # query, key, value and output projections
                         + 2 * 2 * 16 * 16 * 16  # each head's scores and weighted values: the einsums
                         + 32 * 2)  # the head


def test_tensorflow_counts_attentions_einsums_as_the_layers_shapes_and_jax_do():
    """The profiler has no cost for an Einsum between two activations: counted from its equation, as jax's
    dot_general is."""
    import jax
    import keras
    import numpy as np

    from l40sbench.backends.flop_convention import einsum_flops, jaxpr_flops
    from l40sbench.backends.tf_flops import forward_gflops

    assert forward_gflops(_attention_model(), 32) * 1e9 == pytest.approx(ATTENTION_BY_HAND, rel=0.01)
    for equation, shapes in (("BTNH,BSNH->BNTS", [(1, 16, 2, 16)] * 2),
                             ("BNTS,BSNH->BTNH", [(1, 2, 16, 16), (1, 16, 2, 16)]),
                             ("...ij,jk->...ik", [(3, 4, 5, 6), (6, 7)])):
        operands = [np.zeros(shape, "float32") for shape in shapes]
        traced = jax.make_jaxpr(lambda *xs, eq=equation: jax.numpy.einsum(eq, *xs))(*operands)
        assert einsum_flops(equation, shapes) == jaxpr_flops(traced), equation
    # an EinsumDense counts what its Dense twin counts
    inputs = keras.Input((16, 16))
    twin = keras.Model(inputs, keras.layers.Dense(8)(inputs))
    einsum = keras.Model(inputs, keras.layers.EinsumDense("abc,cd->abd", output_shape=(None, 8))(inputs))
    counts = [graph_count(model, (1, 16, 16)) for model in (twin, einsum)]
    assert counts[0] == counts[1] == 2 * 16 * 16 * 8
    with pytest.raises(ValueError, match="names 2 operands"):
        einsum_flops("ab,bc->ac", [(2, 3)])
    keras.backend.clear_session()


def graph_count(model, shape) -> float:
    import tensorflow as tf

    from l40sbench.backends.tf_flops import graph_gflops

    traced = tf.function(lambda x: model(x, training=False)).get_concrete_function(tf.TensorSpec(shape))
    return graph_gflops(traced.graph) * 1e9


@pytest.mark.long
def test_keras_on_jax_counts_the_attention_model_as_tensorflow_does():
    if importlib.util.find_spec("jax") is None:
        pytest.skip("jax is not installed here")
    code = (inspect.getsource(_attention_model) + "from l40sbench.backends.jax import forward_gflops\n"
            "print('COUNT', forward_gflops(_attention_model(), 32) * 1e9)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=600,
                            env={**os.environ, "KERAS_BACKEND": "jax"})
    assert result.returncode == 0, result.stderr[-3000:]
    assert float(result.stdout.split("COUNT", 1)[1]) == pytest.approx(ATTENTION_BY_HAND, rel=0.01)
