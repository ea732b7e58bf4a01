"""The one answer to "which devices does this run use": a frozen record per device, made by the run's Keras
backend (backends.<name>.devices) and read by everything that asks (placement, telemetry, the peak, the
guard, the sweep, env). Pure data: the backends fill it in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

GPU, CPU = "GPU", "CPU"


@dataclass(frozen=True)
class Device:
    """One device a run computes on.

    kind: "GPU" or "CPU".
    name: the framework's own name for it (cuda:0, /device:GPU:0, cpu:0).
    index: its ordinal among the devices of its kind the process sees (a GPU's CUDA ordinal, which
      CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER decide).
    model: the GPU's product name, or the CPU model.
    uuid: the CUDA UUID (NVML's form, "GPU-8hex-4hex-4hex-4hex-12hex") where there is one: how telemetry finds
      the same board in NVML, which numbers boards in PCI order and ignores CUDA_VISIBLE_DEVICES.
    memory_mb: the device's total memory where the driver reports it.
    """

    kind: str
    name: str
    index: int
    model: str
    uuid: str | None = None
    memory_mb: float | None = None

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Device:
        return cls(**{key: data.get(key) for key in ("kind", "name", "index", "model", "uuid", "memory_mb")})


def kind_of(devices: Sequence[Device]) -> str:
    """GPU where any device the run uses is one, else CPU (an empty list: CPU)."""
    return GPU if any(d.kind == GPU for d in devices) else CPU


def gpus(devices: Sequence[Device]) -> list[Device]:
    return [d for d in devices if d.kind == GPU]
