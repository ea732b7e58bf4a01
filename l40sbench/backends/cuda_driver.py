"""What the CUDA driver says of each GPU this process sees: its UUID, name and memory, by CUDA ordinal; and
what NVML says of the host's boards (MIG mode and instances, the processes on each), asked in a child process
within LIMIT_SECONDS.

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
import threading
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


def _text(value) -> str | None:
    return value.decode() if isinstance(value, bytes) else None if value is None else str(value)


def _nvml_boards() -> tuple[tuple[dict, ...], str | None]:
    """Every board NVML shows the host (whatever CUDA_VISIBLE_DEVICES holds): its MIG mode and instances, and
    the processes on it (what names the holder of a busy board); ((), None) where NVML does not answer."""
    try:
        import pynvml as nvml

        nvml.nvmlInit()
    except Exception:
        return (), None
    boards = []
    for index in range(nvml.nvmlDeviceGetCount()):
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
        migs = mig_uuids(nvml, handle)
        processes = []
        for p in _reading(nvml.nvmlDeviceGetComputeRunningProcesses, handle) or ():
            memory = getattr(p, "usedGpuMemory", None)
            processes.append({"pid": int(p.pid), "name": _text(_reading(nvml.nvmlSystemGetProcessName, p.pid)),
                              "memory_mb": memory / 2**20 if isinstance(memory, int) else None})
        boards.append({"index": index, "uuid": _text(nvml.nvmlDeviceGetUUID(handle)),
                       "name": _text(nvml.nvmlDeviceGetName(handle)), "mig_mode": _mig_mode(nvml, handle),
                       "mig_uuids": list(migs), "processes": processes})
    return tuple(boards), _text(_reading(nvml.nvmlSystemGetDriverVersion))


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
    for slot in range(_reading(nvml.nvmlDeviceGetMaxMigDeviceCount, handle) or 0):
        uuid = _reading(lambda s: nvml.nvmlDeviceGetUUID(nvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, s)), slot)
        if uuid is not None:  # else an empty slot
            found.append(_text(uuid))
    return tuple(found)


def _reading(call, *args):
    """call(*args), None where NVML does not say."""
    try:
        return call(*args)
    except Exception:
        return None


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
    boards, nvml_driver = _nvml_boards() if with_nvml else ((), None)
    return DriverView(True, version, found, boards, nvml_driver)


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


def within(seconds: float, call, *args):
    """call(*args), or TimeoutError where it has not returned within `seconds`: for a driver or NVML call made
    in this process (NVML's telemetry), in a thread left behind where it hangs (ctypes releases the GIL)."""
    box: list = []

    def run():
        try:
            box.append((True, call(*args)))
        except BaseException as exc:  # handed to the caller's thread
            box.append((False, exc))

    thread = threading.Thread(target=run, daemon=True, name="driver-call")
    thread.start()
    thread.join(seconds)
    if not box:
        raise TimeoutError(f"no answer within {seconds:.0f} s")
    done, value = box[0]
    if not done:
        raise value
    return value


def devices() -> tuple[CudaDevice, ...]:
    """The GPUs this process sees, in CUDA's order; empty without the driver, a GPU or an answer."""
    return view().devices


def driver_version() -> str | None:
    """The CUDA version the driver supports ('12.8'), the ceiling of every framework's CUDA build; None
    without a driver or an answer."""
    return view().version


def place(models) -> tuple[list[CudaDevice | None], list[CudaDevice]]:
    """A framework's GPUs, by the product name each reports (TensorFlow's device details, jax's device_kind,
    torch's device properties) in its own order, matched to the driver's devices; and the driver's devices
    none matched: the boards the framework skipped (TensorFlow skips a board below its compute capability, so
    its GPU:k need not be CUDA device k). A name the driver does not give falls back to the next ordinal."""
    known, placed, at = list(devices()), [], 0
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


if __name__ == "__main__":  # --count: run.sh's query, one line, the number of GPUs shown (no NVML needed)
    shown = ask_here(with_nvml=sys.argv[1:] != ["--count"])
    print(len(shown.devices) if sys.argv[1:] == ["--count"] else json.dumps(shown.to_dict()))
