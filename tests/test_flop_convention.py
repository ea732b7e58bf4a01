"""One FLOP convention on every backend: 2 x the multiply-accumulates of convolutions and matmuls.

The same Keras classifier is counted by TensorFlow's profiler, by the jaxpr jax traces and by PyTorch's flop
counter, each in its own interpreter (Keras picks its backend once per process), and by the layers' shapes;
the shape count is checked against VGG-19's arithmetic done by hand.
"""

import importlib.util
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
