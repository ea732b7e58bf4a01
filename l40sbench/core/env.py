"""Environment fingerprint: the block the seed articles print above each table."""

from __future__ import annotations

import datetime as _dt
import os
import platform
import subprocess
import sys
from pathlib import Path


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _git_commit() -> str | None:
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"],
        cwd=here, capture_output=True, text=True, timeout=5,
    ).stdout.strip()
    return out.stdout.strip() + ("-dirty" if dirty else "")


def gpu_models(env: dict) -> list[str]:
    """The model (else the name) of each GPU an environment block lists; empty on a CPU-only machine."""
    return [d.get("model") or d.get("name") for d in env.get("devices") or () if d.get("type") == "GPU"]


def _tensorflow_facts() -> dict:
    """Versions and devices, read only if the run already imported TensorFlow."""
    tf = sys.modules.get("tensorflow")
    if tf is None:
        return {"tensorflow": None, "devices": [], "cuda": None, "cudnn": None}
    build = tf.sysconfig.get_build_info()
    devices = []
    for device in tf.config.list_physical_devices():
        details = {}
        if device.device_type == "GPU":
            details = tf.config.experimental.get_device_details(device)
        devices.append(
            {
                "name": device.name,
                "type": device.device_type,
                "model": details.get("device_name", cpu_model() if device.device_type == "CPU" else None),
            }
        )
    return {
        "tensorflow": tf.__version__,
        "devices": devices,
        "cuda": build.get("cuda_version"),
        "cudnn": build.get("cudnn_version"),
    }


def host_threads() -> int:
    """The cores this process may run on (its affinity): every runtime is given this many, and an input
    pipeline's --input-threads is checked against it."""
    return len(os.sched_getaffinity(0))


def fingerprint(backend_facts: dict | None = None) -> dict:
    """Versions, the Keras backend's facts (backends.facts: its name, version and devices), CPU, OS, suite
    commit and a UTC timestamp."""
    keras = sys.modules.get("keras")
    return {
        "python": platform.python_version(),
        "keras": getattr(keras, "__version__", None),
        "tf_keras": getattr(sys.modules.get("tf_keras"), "__version__", None),  # Model Garden's Keras 2
        **_tensorflow_facts(),
        **(backend_facts or {"backend": None, "backend_version": None}),
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "os": platform.platform(),
        "suite_commit": _git_commit(),
        "timestamp_utc": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
