"""What NVML says of the host's boards, whatever CUDA_VISIBLE_DEVICES holds: each board's UUID, name, memory,
power limit and top clocks, its MIG mode and instances, and the processes on it (what names the holder of a busy
board). The one reading of NVML's list of boards: the driver's view (cuda_driver), `env`, the GPU run's preflight
and its pack take it. nvidia-ml-py (pynvml); a value NVML does not give is None."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Boards:
    """NVML's boards, the driver version it reports, and why there are none where it did not start."""

    boards: tuple[dict, ...]
    driver: str | None
    said: str | None


def text(value) -> str | None:
    """NVML's answer as text (it gives bytes in older bindings); None stays None."""
    return value.decode() if isinstance(value, bytes) else None if value is None else str(value)


def read() -> Boards:
    """Every board NVML shows the host (whatever CUDA_VISIBLE_DEVICES holds), with the driver's version; no boards
    and why, where NVML does not start (no driver, no library)."""
    try:
        import pynvml as nvml

        nvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - no driver, no library: one line either way
        return Boards((), None, f"NVML does not start ({type(exc).__name__}: {exc})")
    boards = []
    for index in range(nvml.nvmlDeviceGetCount()):
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
        migs = mig_uuids(nvml, handle)
        processes = []
        for p in _asked(nvml, "nvmlDeviceGetComputeRunningProcesses", handle) or ():
            memory = getattr(p, "usedGpuMemory", None)
            processes.append({"pid": int(p.pid), "name": text(_asked(nvml, "nvmlSystemGetProcessName", p.pid)),
                              "memory_mb": memory / 2**20 if isinstance(memory, int) else None})
        memory = _asked(nvml, "nvmlDeviceGetMemoryInfo", handle)
        limit_mw = _asked(nvml, "nvmlDeviceGetPowerManagementLimit", handle)
        boards.append({"index": index, "uuid": text(nvml.nvmlDeviceGetUUID(handle)),
                       "name": text(nvml.nvmlDeviceGetName(handle)), "mig_mode": _mig_mode(nvml, handle),
                       "mig_uuids": list(migs), "processes": processes,
                       "memory_gib": memory.total / 2**30 if memory is not None else None,
                       "memory_free_gib": memory.free / 2**30 if memory is not None else None,
                       "power_limit_w": limit_mw / 1000 if limit_mw is not None else None,
                       "max_sm_clock_mhz": _asked(nvml, "nvmlDeviceGetMaxClockInfo", handle, 1),  # NVML_CLOCK_SM
                       "max_memory_clock_mhz": _asked(nvml, "nvmlDeviceGetMaxClockInfo", handle, 2)})  # _MEM
    return Boards(tuple(boards), text(reading(nvml.nvmlSystemGetDriverVersion)), None)


def _mig_mode(nvml, handle) -> bool:
    try:
        return bool(nvml.nvmlDeviceGetMigMode(handle)[0])
    except Exception:  # NVMLError_NotSupported on a board without MIG, or a stand-in without the call
        return False


def mig_uuids(nvml, handle) -> tuple[str, ...]:
    """The UUIDs of a board's MIG instances (MIG-...); () where MIG is off or the driver has no MIG calls."""
    if not _mig_mode(nvml, handle):
        return ()
    found = []
    for slot in range(reading(nvml.nvmlDeviceGetMaxMigDeviceCount, handle) or 0):
        uuid = reading(lambda s: nvml.nvmlDeviceGetUUID(nvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, s)), slot)
        if uuid is not None:  # else an empty slot
            found.append(text(uuid))
    return tuple(found)


def _asked(nvml, name: str, *args):
    """NVML's `name`(*args), None where this NVML has no such call or does not say."""
    call = getattr(nvml, name, None)
    return reading(call, *args) if call is not None else None


def reading(call, *args):
    """call(*args), None where NVML (or the board) does not say."""
    try:
        return call(*args)
    except Exception:
        return None
