"""What the CUDA driver says of each GPU this process sees: its UUID, name and memory, by CUDA ordinal, with
NVML's boards (nvml_boards) beside them, asked in a child process within LIMIT_SECONDS. A framework's GPUs are
matched to these devices in device_match; a call made in this process gets its limit from core.deadline.

The driver (libcuda) numbers devices as every framework on it does: after CUDA_VISIBLE_DEVICES and in
CUDA_DEVICE_ORDER (fastest first unless PCI_BUS_ID). Asking it once, here, gives the backends one way to put
a UUID on the devices they use, and telemetry one way to find those boards in NVML, whichever framework runs.

A stuck driver (after an Xid error, where nvidia-smi hangs too) never returns from cuInit: no process of the
suite calls the driver without a limit. The query runs in a child (`python -m l40sbench.backends.cuda_driver`,
also run.sh's one query, as a file, before the venv exists) that the caller abandons after LIMIT_SECONDS;
initialising the driver in the child also leaves the caller free to hide GPUs (CUDA_VISIBLE_DEVICES) later.
Read through ctypes and nvidia-ml-py: no framework. $L40SBENCH_CUDA_DRIVER names another library to read
instead of libcuda.so.1 (the tests' stand-in driver).
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from functools import lru_cache

DRIVER_VARIABLE = "L40SBENCH_CUDA_DRIVER"
NO_ANSWER_VARIABLE = "L40SBENCH_DRIVER_NO_ANSWER"  # run.sh sets it where its own query got no answer: not asked again
VISIBLE_VARIABLE = "CUDA_VISIBLE_DEVICES"
LIMIT_SECONDS = 10.0  # every driver and NVML query; an answering driver takes well under 1 s
NO_ANSWER = f"the CUDA driver gave no answer within {LIMIT_SECONDS:.0f} s"
MIG_MARK = " MIG "  # CUDA names a MIG instance "<board> MIG <profile>" ("NVIDIA H100 80GB HBM3 MIG 1g.10gb")


@dataclass(frozen=True)
class CudaDevice:
    ordinal: int
    uuid: str
    name: str
    memory_mb: float

    @property
    def mig(self) -> bool:
        return self.uuid.startswith("MIG-")


@dataclass(frozen=True)
class DriverView:
    """One answer of the driver: the GPUs this process sees, the CUDA version the driver supports, and NVML's
    boards (each: index, uuid, name, mig_mode, mig_uuids, processes) where NVML answered.

    library: whether a CUDA driver library loaded at all (False: a machine without NVIDIA's driver).
    said: why there is no answer (the driver did not answer within the limit, or its child failed); None where
      it answered.
    """

    library: bool = False
    version: str | None = None
    devices: tuple[CudaDevice, ...] = ()
    boards: tuple[dict, ...] = ()
    nvml_driver: str | None = None
    said: str | None = None

    @property
    def answered(self) -> bool:
        return self.said is None

    def to_dict(self) -> dict:
        return {"library": self.library, "version": self.version, "devices": [vars(d) for d in self.devices],
                "boards": list(self.boards), "nvml_driver": self.nvml_driver, "said": self.said}

    @classmethod
    def from_dict(cls, data: dict) -> DriverView:
        return cls(data.get("library", False), data.get("version"),
                   tuple(CudaDevice(**d) for d in data.get("devices", ())), tuple(data.get("boards", ())),
                   data.get("nvml_driver"), data.get("said"))


def format_uuid(raw: bytes, prefix: str = "GPU") -> str:
    """The 16 bytes of a CUDA UUID in NVML's text form, GPU-8-4-4-4-12 hex digits (MIG- for a MIG instance)."""
    hexed = raw.hex()
    return f"{prefix}-" + "-".join(hexed[a:b] for a, b in ((0, 8), (8, 12), (12, 16), (16, 20), (20, 32)))


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
        text = name.value.decode(errors="replace")
        found.append(CudaDevice(ordinal, format_uuid(bytes(raw), "MIG" if MIG_MARK in f"{text} " else "GPU"), text,
                                memory.value / 2**20))
    return found


def _driver_version(lib) -> str | None:
    version = ctypes.c_int(0)
    if lib.cuDriverGetVersion(ctypes.byref(version)) != 0:
        return None
    return f"{version.value // 1000}.{version.value % 1000 // 10}"


def ask_here(with_nvml: bool = True) -> DriverView:
    """The driver's answer, asked in this process with no limit: the child's body (view() runs it)."""
    try:
        lib = ctypes.CDLL(os.environ.get(DRIVER_VARIABLE) or "libcuda.so.1")
    except OSError:
        return DriverView(library=False)
    try:
        version, found = _driver_version(lib), tuple(_query(lib))
    except AttributeError:  # a driver too old for a symbol: no UUIDs, and NVML falls back
        version, found = None, ()
    if not with_nvml:  # run.sh's count, run as a file before the venv holds l40sbench
        return DriverView(True, version, found)
    from l40sbench.backends.nvml_boards import read

    nvml = read()
    return DriverView(True, version, found, nvml.boards, nvml.driver)


def _start(environ: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "l40sbench.backends.cuda_driver"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=environ)


def _answer(child: subprocess.Popen, seconds: float) -> DriverView:
    """The child's view, or why there is none; a child past the limit is killed and left (a process stuck in
    the driver may not even die, and waiting for it is what the limit is there to avoid)."""
    try:
        out, err = child.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        child.kill()
        return DriverView(library=True, said=NO_ANSWER)
    if child.returncode != 0 or not out.strip():
        return DriverView(library=True, said=f"asking the CUDA driver failed: "
                                             f"{(err.strip().splitlines() or ['no output'])[-1]}")
    return DriverView.from_dict(json.loads(out.strip().splitlines()[-1]))


@lru_cache(maxsize=8)
def _asked(library: str | None, visible: str | None) -> DriverView:
    """The child's answer with CUDA_VISIBLE_DEVICES set to `visible` (None: unset), the driver's `library`
    named as now (the cache's key: these two decide the answer)."""
    del library
    environ = {k: v for k, v in os.environ.items() if k != VISIBLE_VARIABLE}
    return _answer(_start(environ if visible is None else {**environ, VISIBLE_VARIABLE: visible}), LIMIT_SECONDS)


def view() -> DriverView:
    """The driver's answer for this process (after CUDA_VISIBLE_DEVICES), within LIMIT_SECONDS, asked once per
    process and setting. Where CUDA_VISIBLE_DEVICES is empty (--devices cpu hides every GPU) no GPU can be
    seen, and the driver is not asked at all."""
    visible = os.environ.get(VISIBLE_VARIABLE)
    if visible == "":
        return DriverView()
    if os.environ.get(NO_ANSWER_VARIABLE):  # the same driver, a moment ago: one wait per command, not two
        return DriverView(library=True, said=NO_ANSWER)
    return _asked(os.environ.get(DRIVER_VARIABLE), visible)


def host_view() -> DriverView:
    """What the driver shows with CUDA_VISIBLE_DEVICES unset: every GPU of the host (view()'s own answer where
    it is unset)."""
    if os.environ.get(NO_ANSWER_VARIABLE):
        return view()
    return _asked(os.environ.get(DRIVER_VARIABLE), None)


def forget() -> None:
    """Asks the driver afresh next time (tests, which change the stand-in driver's answer)."""
    _asked.cache_clear()


def devices() -> tuple[CudaDevice, ...]:
    """The GPUs this process sees, in CUDA's order; empty without the driver, a GPU or an answer."""
    return view().devices


def driver_version() -> str | None:
    """The CUDA version the driver supports ('12.8'), the ceiling of every framework's CUDA build; None
    without a driver or an answer."""
    return view().version


if __name__ == "__main__":  # --count: run.sh's query, one line, the number of GPUs shown (no NVML needed)
    shown = ask_here(with_nvml=sys.argv[1:] != ["--count"])
    print(len(shown.devices) if sys.argv[1:] == ["--count"] else json.dumps(shown.to_dict()))
