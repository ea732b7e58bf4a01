"""How fast this machine does the two kinds of arithmetic the models are made of.

Machines of one kind differ by CPU generation (with or without AVX-512, older
or newer cores): the same run can take 3-4x longer on one than another. A
time is only comparable across machines beside a rate measured in the same
run, so every result and every figure in docs/PERFORMANCE.md carries one.
(The CI gate does not divide by it: docs/PERFORMANCE.md section 9 says why.)

Two kernels, because TensorFlow runs them on different libraries on the CPU:
a float32 matmul (Eigen) and a float32 3x3 convolution (oneDNN, which picks
its instruction set at run time and honours ONEDNN_MAX_CPU_ISA). Each is
timed as the median of `repeats` calls after two warm-up calls, so one
interruption by another tenant does not move it. TensorFlow is imported
only when a measurement is made.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass

from l40sbench.core.timing import Clock, Sync, no_sync, time_calls

MATMUL_N = 1024  # [N, N] x [N, N]
CONV_SHAPE = (8, 56, 56, 64)  # NHWC input; 3x3 kernel, 64 filters, stride 1, SAME: a ResNet stage-2 layer
CONV_FILTERS = 64
MATMUL_FLOP = 2 * MATMUL_N**3
CONV_FLOP = 2 * CONV_SHAPE[0] * CONV_SHAPE[1] * CONV_SHAPE[2] * CONV_SHAPE[3] * CONV_FILTERS * 9


@dataclass(frozen=True)
class Calibration:
    """Median seconds of one call of each kernel and the rates they give.

    Attributes:
      matmul_seconds: one float32 1024x1024 by 1024x1024 matmul.
      conv_seconds: one float32 3x3 convolution, 8x56x56x64 in, 64 filters.
      matmul_gflops, conv_gflops: the same as rates (10^9 float ops per second).
      repeats: calls timed for each median.
    """

    matmul_seconds: float
    conv_seconds: float
    matmul_gflops: float
    conv_gflops: float
    repeats: int

    def to_dict(self) -> dict:
        return asdict(self)


def median_seconds(fn, repeats: int, *, warmup: int = 2, clock: Clock = time.perf_counter, sync: Sync = no_sync) -> float:
    """Median wall time of fn() over `repeats` calls, after `warmup` untimed calls."""
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1. Received: repeats={repeats}")
    for _ in range(warmup):
        fn()
    return statistics.median(time_calls(lambda _: fn(), range(repeats), clock=clock, sync=sync))


def kernels():
    """The two compiled kernels as zero-argument calls that return host arrays."""
    import tensorflow as tf

    generator = tf.random.Generator.from_seed(0)
    a = generator.normal([MATMUL_N, MATMUL_N])
    b = generator.normal([MATMUL_N, MATMUL_N])
    x = generator.normal(CONV_SHAPE)
    k = generator.normal([3, 3, CONV_SHAPE[3], CONV_FILTERS])
    matmul = tf.function(lambda: tf.linalg.matmul(a, b))
    conv = tf.function(lambda: tf.nn.conv2d(x, k, strides=1, padding="SAME"))
    return (lambda: matmul().numpy()), (lambda: conv().numpy())


def measure(repeats: int = 10, sync: Sync = no_sync) -> Calibration:
    """Times both kernels on the default TensorFlow device (a second or so on 2 CPU cores)."""
    matmul, conv = kernels()
    matmul_s = median_seconds(matmul, repeats, sync=sync)
    conv_s = median_seconds(conv, repeats, sync=sync)
    return Calibration(
        matmul_seconds=matmul_s,
        conv_seconds=conv_s,
        matmul_gflops=MATMUL_FLOP / matmul_s / 1e9,
        conv_gflops=CONV_FLOP / conv_s / 1e9,
        repeats=repeats,
    )
