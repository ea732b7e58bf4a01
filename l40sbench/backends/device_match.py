"""A framework's GPUs matched to the CUDA driver's devices (cuda_driver): by the product name each framework
reports, in its own order, so that every backend's device record carries the board's CUDA ordinal, UUID and
memory, and the boards a framework skipped are named."""

from __future__ import annotations

from l40sbench.backends import cuda_driver
from l40sbench.backends.cuda_driver import CudaDevice


def place(models) -> tuple[list[CudaDevice | None], list[CudaDevice]]:
    """A framework's GPUs, by the product name each reports (TensorFlow's device details, jax's device_kind,
    torch's device properties) in its own order, matched to the driver's devices; and the driver's devices
    none matched: the boards the framework skipped (TensorFlow skips a board below its compute capability, so
    its GPU:k need not be CUDA device k). A name the driver does not give falls back to the next ordinal."""
    known, placed, at = list(cuda_driver.devices()), [], 0
    for model in models:
        match = next((i for i in range(at, len(known)) if known[i].name == model), at)
        placed.append(known[match] if match < len(known) else None)
        at = match + 1
    matched = {d.uuid for d in placed if d is not None}
    return placed, [d for d in known if d.uuid not in matched]


def gpu_device(known: CudaDevice | None, index: int, name: str, model: str | None = None):
    """The device record of a framework's GPU `name` (its `index`-th), on the driver's device `known` (place):
    its CUDA ordinal, UUID and memory where the driver answers (a framework's own model name wins)."""
    from l40sbench.core.devices import GPU, Device

    return Device(GPU, name, known.ordinal if known else index, model or (known.name if known else "unknown GPU"),
                  uuid=known.uuid if known else None, memory_mb=known.memory_mb if known else None)
