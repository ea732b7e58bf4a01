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


def _backend_facts(name: str | None) -> dict:
    """The Keras backend this process computes on (`name`, else keras' if loaded) and its version; off
    tensorflow, its devices too."""
    keras = sys.modules.get("keras")
    name = name or (keras.backend.backend() if keras is not None else None)
    if name is None:
        return {"backend": None, "backend_version": None}
    from l40sbench.backends import load

    facts = {"backend": name, "backend_version": load(name).version()}
    if name != "tensorflow":
        facts["devices"] = load(name).device_facts()
    return facts


def fingerprint(backend: str | None = None) -> dict:
    """Versions, the Keras backend (`backend`, else keras' own once imported), devices, CPU, OS, suite commit
    and a UTC timestamp."""
    keras = sys.modules.get("keras")
    return {
        "python": platform.python_version(),
        "keras": getattr(keras, "__version__", None),
        "tf_keras": getattr(sys.modules.get("tf_keras"), "__version__", None),  # Model Garden's Keras 2
        **_tensorflow_facts(),
        **_backend_facts(backend),
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "os": platform.platform(),
        "suite_commit": _git_commit(),
        "timestamp_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
