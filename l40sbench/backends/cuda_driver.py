"""What the CUDA driver says of each GPU this process sees: its UUID, name and memory, by CUDA ordinal.

The driver (libcuda) numbers devices as every framework on it does: after CUDA_VISIBLE_DEVICES and in
CUDA_DEVICE_ORDER (fastest first unless PCI_BUS_ID). Asking it once, here, gives the backends one way to put
a UUID on the devices they use, and telemetry one way to find those boards in NVML, whichever framework runs.
Read through ctypes: no framework, and nothing on a machine without the driver.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class CudaDevice:
    ordinal: int
    uuid: str
    name: str
    memory_mb: float


def format_uuid(raw: bytes) -> str:
    """The 16 bytes of a CUDA UUID in NVML's text form, GPU-8-4-4-4-12 hex digits."""
    hexed = raw.hex()
    return "GPU-" + "-".join(hexed[a:b] for a, b in ((0, 8), (8, 12), (12, 16), (16, 20), (20, 32)))


def _query(lib) -> list[CudaDevice]:
    if lib.cuInit(0) != 0:
        return []
    count = ctypes.c_int(0)
    if lib.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return []
    get_uuid = getattr(lib, "cuDeviceGetUuid_v2", None) or lib.cuDeviceGetUuid
    found = []
    for ordinal in range(count.value):
        device = ctypes.c_int(0)
        raw = (ctypes.c_ubyte * 16)()
        name = ctypes.create_string_buffer(256)
        memory = ctypes.c_size_t(0)
        if (lib.cuDeviceGet(ctypes.byref(device), ordinal) != 0 or get_uuid(raw, device) != 0
                or lib.cuDeviceGetName(name, 256, device) != 0
                or lib.cuDeviceTotalMem_v2(ctypes.byref(memory), device) != 0):
            continue
        found.append(CudaDevice(ordinal, format_uuid(bytes(raw)), name.value.decode(errors="replace"),
                                memory.value / 2**20))
    return found


@lru_cache(maxsize=1)
def devices() -> tuple[CudaDevice, ...]:
    """The GPUs this process sees, in CUDA's order; empty without the driver or a GPU."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return ()
    try:
        return tuple(_query(lib))
    except (AttributeError, OSError):  # a driver too old for a symbol: no UUIDs, and NVML falls back
        return ()


def by_ordinal(ordinal: int) -> CudaDevice | None:
    known = devices()
    return known[ordinal] if 0 <= ordinal < len(known) else None


def gpu_device(ordinal: int, name: str, model: str | None = None):
    """The device record of the GPU at CUDA `ordinal`, which the framework calls `name`: its UUID and memory
    from the driver where it answers (a framework's own model name wins, the driver's stands in)."""
    from l40sbench.core.devices import GPU, Device

    known = by_ordinal(ordinal)
    return Device(GPU, name, ordinal, model or (known.name if known else "unknown GPU"),
                  uuid=known.uuid if known else None, memory_mb=known.memory_mb if known else None)
