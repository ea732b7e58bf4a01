"""A stand-in for nvidia-ml-py's pynvml, for child processes of the tests (this folder first on PYTHONPATH): the
NVML calls backends/cuda_driver.py makes, answering from $STANDIN_NVML, a JSON object
{"driver": "580.82", "boards": [{"name", "uuid", "mig_mode": 0|1, "migs": [MIG uuids], "processes":
[{"pid", "name", "memory_mb"}]}]}; without it, NVML is not there (as on a machine without the driver)."""

import json
import os
from types import SimpleNamespace


class NVMLError(Exception):
    pass


def _boards():
    text = os.environ.get("STANDIN_NVML")
    if not text:
        raise NVMLError("NVML Shared Library Not Found")
    return json.loads(text)


def nvmlInit():
    _boards()


def nvmlShutdown():
    pass


def nvmlSystemGetDriverVersion():
    return _boards().get("driver", "580.82")


def nvmlDeviceGetCount():
    return len(_boards()["boards"])


def nvmlDeviceGetHandleByIndex(index):
    return ("board", index)


def _board(handle):
    return _boards()["boards"][handle[1]]


def nvmlDeviceGetUUID(handle):
    if handle[0] == "mig":
        return _board(("board", handle[1]))["migs"][handle[2]]
    return _board(handle)["uuid"]


def nvmlDeviceGetName(handle):
    return _board(handle)["name"]


def nvmlDeviceGetMigMode(handle):
    mode = int(_board(handle).get("mig_mode", 0))
    return [mode, mode]


def nvmlDeviceGetMaxMigDeviceCount(handle):
    return 7 if _board(handle).get("mig_mode") else 0


def nvmlDeviceGetMigDeviceHandleByIndex(handle, slot):
    if slot >= len(_board(handle).get("migs", ())):
        raise NVMLError("Not Found")
    return ("mig", handle[1], slot)


def nvmlDeviceGetComputeRunningProcesses(handle):
    return [SimpleNamespace(pid=p["pid"], usedGpuMemory=int(p.get("memory_mb", 0)) << 20)
            for p in _board(handle).get("processes", ())]


def nvmlSystemGetProcessName(pid):
    for board in _boards()["boards"]:
        for p in board.get("processes", ()):
            if p["pid"] == pid:
                return p.get("name", "python")
    raise NVMLError("Not Found")
