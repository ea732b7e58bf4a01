"""What this machine is and what a run would use, gathered for `env`: the environment block every record carries,
each installed Keras backend with the devices it would compute on (each asked in a child process of its own),
the CUDA driver's GPUs, the telemetry source a run would read with NVML's boards now, the neighbours now, and
the kept peak. The CUDA driver is asked first, within its limit: where it does not answer nothing else is."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

from l40sbench.backends.nvml_boards import reading, text

NEIGHBOUR_WINDOW_SECONDS = 0.5


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def _start_probes(driver) -> tuple[dict, dict]:
    """Each Keras backend: installed or not and its version; a child asking the installed ones for their
    devices, all started at once (TensorFlow's import alone takes 5-8 s here, so everything else overlaps it).
    None asked where the driver did not answer: each framework would hang on it in turn."""
    from l40sbench.backends import NAMES
    from l40sbench.backends.gpu_gate import start_probe

    found, children = {}, {}
    for name in NAMES:
        version = _version(name)
        found[name] = {"installed": version is not None, "version": version}
        if version is not None and not driver.answered:
            found[name]["error"] = f"not asked: {driver.said}"
        elif version is not None:
            children[name] = start_probe(name)
    return found, children


def _backends(started: tuple[dict, dict]) -> dict:
    """_start_probes' backends with the devices each child reported (or why it could not)."""
    from l40sbench.backends.gpu_gate import answer

    found, children = started
    for name, child in children.items():
        got = answer(name, child)
        if "error" in got:
            found[name]["error"] = got["error"]
        else:
            found[name].update(devices=got["devices"], gpu_view=got["view"])
    return found


def _telemetry(used) -> dict:
    from l40sbench.backends.cuda_driver import LIMIT_SECONDS
    from l40sbench.backends.telemetry import nvml_boards, source
    from l40sbench.core.deadline import within

    found, why = source(used)
    block = {"source": found.name if found else None, "why_none": why or None,
             "facts": found.facts if found else None}
    try:
        import pynvml

        within(LIMIT_SECONDS, pynvml.nvmlInit)
        used_uuids = {b["uuid"] for b in (found.facts or {}).get("boards", [])} if found else set()
        block["nvml_boards"] = [{**b.describe(), **_board_now(pynvml, b.handle), "used": b.uuid in used_uuids}
                                for b in nvml_boards(pynvml)]
        block["nvml_driver"] = text(reading(pynvml.nvmlSystemGetDriverVersion))
    except Exception as exc:  # no driver, no library: the reason is the answer
        block["nvml_boards"] = f"unavailable: {type(exc).__name__}: {exc}"
    return block


def _board_now(nvml, handle) -> dict:
    """A board's power limit and its SM clock now and at most: what a run's figures on it hang on."""
    return {"power_limit_w": reading(lambda: nvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000),
            "sm_clock_mhz": reading(lambda: nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM)),
            "max_sm_clock_mhz": reading(lambda: nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_SM))}


def _neighbours() -> dict:
    """Who else is busy now, over NEIGHBOUR_WINDOW_SECONDS: on the GPUs the CUDA driver shows (NVML's
    processes), and on the CPU."""
    from l40sbench.backends import cuda_driver
    from l40sbench.backends.device_match import gpu_device
    from l40sbench.backends.telemetry import source
    from l40sbench.core.neighbours import Watch

    found, _ = source([gpu_device(d, d.ordinal, f"cuda:{d.ordinal}") for d in cuda_driver.devices()])
    watch = Watch(found.processes if found is not None else None)
    start = watch.snapshot(time.monotonic())
    time.sleep(NEIGHBOUR_WINDOW_SECONDS)
    return watch.between(start, watch.snapshot(time.monotonic()))


def _peak(backend: str, measure: bool) -> dict | None:
    from l40sbench.peak.cache import PEAK_FILE_VARIABLE, peak_file

    if measure:
        done = subprocess.run([sys.executable, "-m", "l40sbench.peak"], capture_output=True, text=True,
                              env={**os.environ, "KERAS_BACKEND": backend})
        if done.returncode != 0:
            return {"error": (done.stderr.strip().splitlines() or ["no output"])[-1]}
        return {"source": "measured now", **_peak_summary(json.loads(done.stdout))}
    named = os.environ.get(PEAK_FILE_VARIABLE)
    path = peak_file(Path(named), backend) if named else None
    if path is None or not path.is_file():
        return None
    try:
        return {"source": str(path), **_peak_summary(json.loads(path.read_text()))}
    except (OSError, ValueError) as exc:
        return {"source": str(path), "error": f"unreadable: {exc}"}


def _peak_summary(peak: dict) -> dict:
    return {"device": peak.get("device"), "device_kind": peak.get("device_kind"),
            "matmul_gflops": {p: k.get("gflops") for p, k in (peak.get("matmul") or {}).items()},
            "measured_utc": peak.get("measured_utc")}


def collect(backend: str, measure_peak: bool) -> dict:
    from l40sbench import __version__
    from l40sbench.backends import cuda_driver
    from l40sbench.core.devices import Device
    from l40sbench.core.env import fingerprint

    driver = cuda_driver.view()
    started = _start_probes(driver)
    env = fingerprint()
    neighbours = _neighbours() if driver.answered else {"reasons": [], "cpu_share_others": 0.0, "steal_share": None}
    backends = _backends(started)
    used = [Device.from_dict(d) for d in (backends.get(backend) or {}).get("devices", [])[:1]]
    telemetry = _telemetry(used) if driver.answered else {
        "source": None, "why_none": f"not asked: {driver.said}", "facts": None, "nvml_boards": f"not asked: {driver.said}"}
    return {
        "l40sbench": __version__, "suite_commit": env["suite_commit"], "python": env["python"], "os": env["os"],
        "cpu": env["cpu"], "cpu_count": env["cpu_count"], "timestamp_utc": env["timestamp_utc"],
        "versions": {name: _version(name) for name in ("keras", "tensorflow", "tf-models-official", "jax",
                                                         "torch", "nvidia-ml-py", "onnxruntime", "openvino")},
        "backend": backend, "backends": backends,
        "run_would_use": [d.to_dict() for d in used],
        "cuda_driver": driver.to_dict(),
        "cuda_driver_gpus": [vars(d) for d in driver.devices],
        "cuda_driver_version": driver.version,
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "cuda_device_order": os.environ.get("CUDA_DEVICE_ORDER"),
        "telemetry": telemetry, "neighbours_now": neighbours, "peak": _peak(backend, measure_peak),
    }
