"""What the torch backend does differently: eager (or torch.compile) forwards and steps, PyTorch's devices.

PyTorch runs on the CPU synchronously; on a GPU the clocks' sync is
torch.cuda.synchronize. Keras on torch trains on one device: the sweep says so
for N > 1.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import numpy as np

from l40sbench.backends.flop_convention import CONVENTION, positive_gflops
from l40sbench.core.devices import CPU, GPU, Device

NAME = "torch"
SWEEP_STEP = "eager: forward, backward, optimizer.apply (as Keras' torch trainer)"
FLOP_COUNTER = f"{CONVENTION}, by torch.utils.flop_counter over one eager forward"


def version() -> str:
    import torch

    return torch.__version__


def devices() -> list[Device]:
    """The devices Keras puts tensors on: the CUDA GPUs (each with the driver's UUID), else the CPU."""
    import torch

    from l40sbench.backends.device_match import gpu_device, place
    from l40sbench.core.env import cpu_model

    if torch.cuda.is_available():
        models = [torch.cuda.get_device_properties(i).name for i in range(torch.cuda.device_count())]
        placed, _ = place(models)
        return [gpu_device(known, i, f"cuda:{i}", model) for i, (model, known) in enumerate(zip(models, placed))]
    return [Device(CPU, "cpu", 0, cpu_model())]


def _on_gpu() -> bool:
    return devices()[0].kind == GPU


def sync():
    """sync() waits for all queued CUDA work; sync(output) only where the output is not on the host yet."""
    import torch

    from l40sbench.core.timing import no_sync, on_host

    if not _on_gpu():
        return no_sync

    def wait(*output: object) -> None:
        if output and on_host(output[0]):
            return
        torch.cuda.synchronize()

    return wait


def training_compile(xla: bool) -> tuple[bool, str]:
    """--xla on torch means torch.compile (Keras' jit_compile there)."""
    return xla, "torch.compile" if xla else "eager"


def forward(model, image_size: int, xla: bool) -> Callable[[np.ndarray], np.ndarray]:
    """The single-image forward the latency probe times: eager, or torch.compile with --xla."""
    import keras
    import torch

    call = torch.compile(model) if xla else model

    def run(image: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return keras.ops.convert_to_numpy(call(keras.ops.convert_to_tensor(image[None]), training=False))[0]

    return run


def forward_label(xla: bool) -> str:
    return "torch.compile" if xla else "eager, torch.no_grad"


def forward_gflops(model, size: int, dtype: str = "float32") -> float:
    """GFLOP of one size x size image's forward pass, by the suite's convention: PyTorch's flop counter counts
    only matmuls and convolutions, 2 x multiply-adds."""
    import keras
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        model(keras.ops.zeros((1, size, size, 3), dtype), training=False)
    return positive_gflops(counter.get_total_flops(), "torch.utils.flop_counter")


def peak_memory_mb(kind: str) -> float | None:
    """The most the caching allocator held on any one GPU; None on the CPU."""
    import torch

    if kind != "GPU":
        return None
    return max(torch.cuda.max_memory_allocated(i) for i in range(torch.cuda.device_count())) / 2**20


# --- the peak's kernels ---------------------------------------------------------------------

def _device_name() -> str:
    return "cuda" if _on_gpu() else "cpu"


def matmul(precision: str) -> Callable[[int], Callable[[], object]]:
    import torch

    dtype = {"float32": torch.float32, "tf32": torch.float32, "bfloat16": torch.bfloat16,
             "float16": torch.float16}[precision]

    def make(n: int):
        generator = torch.Generator(device=_device_name()).manual_seed(0)
        a = torch.randn(n, n, generator=generator, device=_device_name()).to(dtype)
        b = torch.randn(n, n, generator=generator, device=_device_name()).to(dtype)
        return lambda: torch.matmul(a, b)

    return make


def conv(shape: tuple, filters: int):
    import torch

    generator = torch.Generator(device=_device_name()).manual_seed(0)
    n, h, w, c = shape
    x = torch.randn(n, c, h, w, generator=generator, device=_device_name())  # PyTorch's own layout, NCHW
    k = torch.randn(filters, c, 3, 3, generator=generator, device=_device_name())
    return lambda: torch.nn.functional.conv2d(x, k, padding="same")


def tf32_flags(torch) -> dict:
    """torch's two TF32 switches: matmuls (off by default) and cuDNN convolutions (on by default)."""
    return {"matmul": bool(torch.backends.cuda.matmul.allow_tf32), "cudnn": bool(torch.backends.cudnn.allow_tf32)}


def peak_context(kind: str) -> dict:
    """What a kept peak must share with this run. A convolutional net's float32 work is mostly cuDNN's, which
    runs TF32 unless switched off: float32 runs are divided by the TF32 peak where either switch is on."""
    import torch

    flags = tf32_flags(torch)
    return {"logical_devices": 1, "tf32_enabled": kind == "GPU" and (flags["matmul"] or flags["cudnn"]),
            "tf32_allowed": flags, "intra_op_threads": torch.get_num_threads()}


@contextlib.contextmanager
def precision_mode(kind: str, precision: str):
    """On a GPU, float32 with TF32 off and tf32 with it on, for matmuls and cuDNN's convolutions alike;
    restored afterwards."""
    if kind != "GPU":
        yield
        return
    import torch

    defaults = tf32_flags(torch)
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = precision == "tf32"
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = defaults["matmul"]
        torch.backends.cudnn.allow_tf32 = defaults["cudnn"]


# --- the sweep's step ---------------------------------------------------------------------------

def sweep_step(model_spec, job, optimizer, loss):
    """(step, names, replicas, model): one eager train (or inference) step of a fresh model on one device,
    as Keras' own torch trainer steps; synthetic data made once on the device."""
    import keras
    import torch

    if job.devices > 1:
        raise ValueError(f"Keras on torch trains on one device here; {job.devices} asked (use --backend jax or "
                         "tensorflow for several)")
    model = model_spec.build()
    size = model.input_shape[1]
    x = keras.random.uniform((job.per_device_batch, size, size, 3), seed=0)
    y = keras.random.randint((job.per_device_batch,), 0, 1000, seed=1)
    names = [devices()[0].name]
    if job.settings.mode == "inference":
        def infer():
            with torch.no_grad():
                return keras.ops.sum(keras.ops.cast(model(x, training=False), "float32"))

        return infer, names, 1, model
    trainable = model.trainable_variables
    optimizer.build(trainable)

    def train():
        value = keras.ops.mean(loss(y, keras.ops.cast(model(x, training=True), "float32")))
        model.zero_grad()
        value.backward()
        with torch.no_grad():
            optimizer.apply([v.value.grad for v in trainable], trainable)
        return value

    return train, names, 1, model
