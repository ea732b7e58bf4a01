"""What the CUDA driver says of each GPU this process sees: its UUID, name and memory, by CUDA ordinal.

The driver (libcuda) numbers devices as every framework on it does: after CUDA_VISIBLE_DEVICES and in
CUDA_DEVICE_ORDER (fastest first unless PCI_BUS_ID). Asking it once, here, gives the backends one way to put
a UUID on the devices they use, and telemetry one way to find those boards in NVML, whichever framework runs.
Read through ctypes: no framework, and nothing on a machine without the driver. $L40SBENCH_CUDA_DRIVER names
another library to read instead of libcuda.so.1 (the tests' stand-in driver); `python -m
l40sbench.backends.cuda_driver` prints what it says as JSON.
"""

from __future__ import annotations

import ctypes
import json
import os
from dataclasses import dataclass
from functools import lru_cache

DRIVER_VARIABLE = "L40SBENCH_CUDA_DRIVER"


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
def _library():
    """The driver's library (or $L40SBENCH_CUDA_DRIVER's), None where there is none."""
    try:
        return ctypes.CDLL(os.environ.get(DRIVER_VARIABLE) or "libcuda.so.1")
    except OSError:
        return None


@lru_cache(maxsize=1)
def devices() -> tuple[CudaDevice, ...]:
    """The GPUs this process sees, in CUDA's order; empty without the driver or a GPU."""
    lib = _library()
    if lib is None:
        return ()
    try:
        return tuple(_query(lib))
    except (AttributeError, OSError):  # a driver too old for a symbol: no UUIDs, and NVML falls back
        return ()


@lru_cache(maxsize=1)
def driver_version() -> str | None:
    """The CUDA version the driver supports ('12.8'), the ceiling of every framework's CUDA build; None
    without a driver."""
    lib, version = _library(), ctypes.c_int(0)
    try:
        if lib is None or lib.cuDriverGetVersion(ctypes.byref(version)) != 0:
            return None
    except AttributeError:
        return None
    return f"{version.value // 1000}.{version.value % 1000 // 10}"


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


if __name__ == "__main__":
    print(json.dumps([vars(d) for d in devices()]))
