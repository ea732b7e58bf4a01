"""What the jax backend does differently: jax.jit forwards and steps, JAX's devices, the jaxpr's FLOP count.

JAX dispatches asynchronously on every device, the CPU included. The clocks'
sync waits on what a timed call returned (every output of one jitted call is
ready when its execution ends; host arrays need no wait), and drains every
live array only where no output is given (before a clock starts, an epoch's end).
Without a GPU, N devices are N host-platform devices
(XLA_FLAGS=--xla_force_host_platform_device_count=N, set before JAX starts).
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable

import numpy as np

from l40sbench.backends.flop_convention import CONVENTION, jaxpr_flops, positive_gflops
from l40sbench.core.devices import Device

NAME = "jax"
HOST_DEVICES_FLAG = "--xla_force_host_platform_device_count"
SWEEP_STEP = "jax.jit over stateless_call and the optimizer's stateless_apply, keras.distribution.DataParallel"
# From the traced jaxpr, before XLA rewrites matmuls and convolutions into library calls (which several jax
# releases' cost analysis counts as -1 on GPUs, or not at all) and before it trims padded windows' taps.
FLOP_COUNTER = f"{CONVENTION}, from the traced jaxpr's conv_general_dilated and dot_general"


def host_devices_env(count: int, environ: dict | None = None) -> dict:
    """XLA_FLAGS for a process that needs `count` CPU devices (a GPU's devices are its own)."""
    environ = dict(os.environ if environ is None else environ)
    flags = [f for f in environ.get("XLA_FLAGS", "").split() if not f.startswith(HOST_DEVICES_FLAG)]
    environ["XLA_FLAGS"] = " ".join(flags + [f"{HOST_DEVICES_FLAG}={count}"])
    return environ


def version() -> str:
    import jax
    import jaxlib

    return f"{jax.__version__} (jaxlib {jaxlib.__version__})"


def devices() -> list[Device]:
    """The devices jax computes on, in its order: its GPUs (each with the driver's UUID), else the CPU's."""
    import jax

    from l40sbench.backends.device_match import gpu_device, place
    from l40sbench.core.env import cpu_model

    every = jax.devices()
    gpus = [d for d in every if d.platform in ("gpu", "cuda", "rocm")]
    if gpus:
        placed, _ = place([d.device_kind for d in gpus])
        return [gpu_device(known, d.id, f"{d.platform}:{d.id}", d.device_kind) for d, known in zip(gpus, placed)]
    return [Device(d.platform.upper(), f"{d.platform}:{d.id}", d.id, cpu_model()) for d in every]


def _wait(*output: object) -> None:
    import jax

    from l40sbench.core.timing import on_host

    if output:
        if not on_host(output[0]):
            jax.block_until_ready(output[0])
        return
    for array in jax.live_arrays():
        array.block_until_ready()


def sync():
    """sync(output) blocks until that output is computed, sync() until every live array is (JAX dispatches
    asynchronously, on the CPU too)."""
    return _wait


def training_compile(xla: bool) -> tuple[bool, str]:
    """Keras on jax compiles the train step with jax.jit whatever --xla says (eager steps are not a benchmark)."""
    return True, "jax.jit (XLA), as Keras on jax always compiles"


def stateless_forward(model):
    """The model's inference call, jitted over its variables' values (variable_values) and the images."""
    import jax

    @jax.jit
    def call(trainable, non_trainable, images):
        outputs, _ = model.stateless_call(trainable, non_trainable, images, training=False)
        return outputs

    return call


def variable_values(model) -> tuple[list, list]:
    return [v.value for v in model.trainable_variables], [v.value for v in model.non_trainable_variables]


def forward(model, image_size: int, xla: bool) -> Callable[[np.ndarray], np.ndarray]:
    """The single-image forward the latency probe times: jax.jit over the model's stateless call."""
    del image_size, xla  # jax.jit compiles for the shape it is called with
    call = stateless_forward(model)
    trainable, non_trainable = variable_values(model)

    def run(image: np.ndarray) -> np.ndarray:
        return np.asarray(call(trainable, non_trainable, image[None]))[0]  # host -> device -> host

    return run


def forward_label(xla: bool) -> str:
    return "jax.jit (XLA)"


def forward_gflops(model, size: int, dtype: str = "float32") -> float:
    """GFLOP of one size x size image's forward pass, by the suite's convention, from the traced jaxpr.

    Raises:
      ValueError: the count is not positive: utilisation is then unavailable, and says why.
    """
    import jax
    import jax.numpy as jnp

    trainable, non_trainable = variable_values(model)
    traced = jax.make_jaxpr(stateless_forward(model))(trainable, non_trainable, jnp.zeros((1, size, size, 3), dtype))
    return positive_gflops(jaxpr_flops(traced), "the jaxpr")


def peak_memory_mb(kind: str) -> float | None:
    """The most JAX's allocator held on any one device (GPUs); None where it keeps no count (the CPU)."""
    import jax

    peaks = [(device.memory_stats() or {}).get("peak_bytes_in_use") for device in jax.devices()]
    peaks = [peak for peak in peaks if peak is not None]
    return max(peaks) / 2**20 if peaks else None


# --- the peak's kernels ---------------------------------------------------------------------

def _precision(precision: str):
    import jax

    # float32 at full precision; tf32 is XLA's default on GPUs with tensor cores
    return jax.lax.Precision.HIGHEST if precision == "float32" else jax.lax.Precision.DEFAULT


def matmul(precision: str) -> Callable[[int], Callable[[], object]]:
    """make_call for peak.sweep_sizes: n -> a compiled matmul whose product stays on the device."""
    import jax
    import jax.numpy as jnp

    dtype = {"float32": jnp.float32, "tf32": jnp.float32, "bfloat16": jnp.bfloat16, "float16": jnp.float16}[precision]
    product = jax.jit(lambda a, b: jnp.matmul(a, b, precision=_precision(precision)))

    def make(n: int):
        a_key, b_key = jax.random.split(jax.random.key(0))
        a = jax.random.normal(a_key, (n, n)).astype(dtype)
        b = jax.random.normal(b_key, (n, n)).astype(dtype)
        kept = {}

        def call():
            kept["out"] = product(a, b)  # kept alive, so the sync waits for it
            return kept["out"]

        return call

    return make


def conv(shape: tuple, filters: int):
    """The 3x3 convolution (NHWC, SAME) as a zero-argument compiled call."""
    import jax

    x_key, k_key = jax.random.split(jax.random.key(0))
    x = jax.random.normal(x_key, shape)
    k = jax.random.normal(k_key, (3, 3, shape[3], filters))
    convolve = jax.jit(lambda x, k: jax.lax.conv_general_dilated(
        x, k, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"), precision=jax.lax.Precision.HIGHEST))
    kept = {}

    def call():
        kept["out"] = convolve(x, k)
        return kept["out"]

    return call


# What float32 matmuls and convolutions run as on a GPU under each jax_default_matmul_precision: XLA's default
# (and 'bfloat16', 'tensorfloat32', 'high', its other names for the fast modes) uses TF32 on GPUs that have it;
# 'bfloat16_3x' splits each float32 into three bfloat16 passes, which is neither TF32 nor float32's own units.
GPU_FLOAT32_MATH = {None: "tf32", "default": "tf32", "fastest": "tf32", "bfloat16": "tf32", "tensorfloat32": "tf32",
                    "high": "tf32", "bfloat16_3x": "bfloat16_3x", "float32": "float32", "highest": "float32"}


def float32_math(kind: str, precision: str | None) -> str:
    """What a float32 matmul runs as on this device under jax's default matmul precision."""
    if kind != "GPU":
        return "float32"
    return GPU_FLOAT32_MATH.get(precision.lower() if precision else None, f"unknown ({precision})")


def peak_context(kind: str) -> dict:
    """What a kept peak must share with this run: JAX's device count, and what its float32 work runs as
    (a run's float32 utilisation is divided by the TF32 peak only where float32 runs as TF32)."""
    import jax

    precision = jax.config.jax_default_matmul_precision
    math = float32_math(kind, precision)
    return {"logical_devices": len(jax.devices()), "tf32_enabled": math == "tf32",
            "float32_runs_as": math, "default_matmul_precision": precision or "default"}


@contextlib.contextmanager
def precision_mode(kind: str, precision: str):
    yield  # each kernel names its own precision


# --- the sweep's step ---------------------------------------------------------------------------

def sweep_step(model_spec, job, optimizer, loss):
    """(step, names, replicas): one jax.jit train (or inference) step of a fresh model over the first
    job.devices devices under keras.distribution.DataParallel, on synthetic data made once on the devices."""
    import jax
    import keras

    devices = jax.devices()[:job.devices]
    if len(devices) < job.devices:
        raise ValueError(f"{job.devices} devices asked, {len(jax.devices())} {jax.devices()[0].platform} device(s) "
                         "visible to jax")
    distribution = keras.distribution.DataParallel(devices=devices)
    keras.distribution.set_distribution(distribution)
    model = model_spec.build()
    size = model.input_shape[1]
    total = job.per_device_batch * len(devices)
    batch = distribution.get_data_layout((total, size, size, 3)).backend_layout
    labels = distribution.get_data_layout((total,)).backend_layout
    x_key, y_key = jax.random.split(jax.random.key(0))
    x = jax.device_put(jax.random.uniform(x_key, (total, size, size, 3)), batch)
    y = jax.device_put(jax.random.randint(y_key, (total,), 0, 1000), labels)
    trainable, non_trainable = variable_values(model)
    state = {"trainable": trainable, "non_trainable": non_trainable}
    names = [f"{d.platform}:{d.id}" for d in devices]
    if job.settings.mode == "inference":
        forward = jax.jit(lambda t, n, x: jax.numpy.sum(model.stateless_call(t, n, x, training=False)[0]
                                                        .astype("float32")))

        def infer():
            state["out"] = forward(state["trainable"], state["non_trainable"], x)
            return state["out"]

        return infer, names, len(devices), model

    optimizer.build(model.trainable_variables)
    state["optimizer"] = [v.value for v in optimizer.variables]

    def loss_of(trainable, non_trainable, x, y):
        probabilities, non_trainable = model.stateless_call(trainable, non_trainable, x, training=True)
        return keras.ops.mean(loss(y, keras.ops.cast(probabilities, "float32"))), non_trainable

    gradients = jax.value_and_grad(loss_of, has_aux=True)
    # The step's inputs are donated to its outputs on a GPU, as Keras' own trainer does (the CPU cannot).
    donated = (0, 1, 2) if devices[0].platform != "cpu" else ()

    @functools.partial(jax.jit, donate_argnums=donated)
    def step(trainable, non_trainable, optimizer_variables, x, y):
        (value, non_trainable), grads = gradients(trainable, non_trainable, x, y)
        trainable, optimizer_variables = optimizer.stateless_apply(optimizer_variables, grads, trainable)
        return value, trainable, non_trainable, optimizer_variables

    def train():
        state["out"], state["trainable"], state["non_trainable"], state["optimizer"] = step(
            state["trainable"], state["non_trainable"], state["optimizer"], x, y)
        return state["out"]

    return train, names, len(devices), model
