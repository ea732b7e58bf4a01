"""Before anything is measured: can the chosen backend use the GPUs the CUDA driver shows this process?

A renter's run must not time the CPU without a word because the framework could not load its CUDA libraries
(TensorFlow says so at WARNING, which TF_CPP_MIN_LOG_LEVEL=2 hides; jax's CPU build never looks), nor die in
a traceback. So every command that computes asks here first. Where the driver shows no GPU nothing is asked
(no framework is imported: this costs nothing on a CPU machine). Where it shows GPUs, the backend is asked in a
child (backends.probe) and a backend that sees none stops the run in one line: the GPUs, the backend and its
version, what it said, and the fix. `--devices cpu` runs on the CPU on purpose: the GPUs are hidden from the
backend (CUDA_VISIBLE_DEVICES, JAX_PLATFORMS) and the record's env says which were present.

The choice travels to child processes (a study's steps, the sweep's workers) in $L40SBENCH_DEVICE_CHOICE,
which core.env.fingerprint copies into every record; a child that finds it set does not ask again.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass

from l40sbench.errors import UserError

CHOICE_VARIABLE = "L40SBENCH_DEVICE_CHOICE"
BUILD_VARIABLE = "L40SBENCH_BUILD"  # run.sh: gpu, cpu or auto (the default: gpu where a driver shows a GPU)
CPU = "cpu"
# How each backend gets its CUDA build; run.sh installs the `gpu` extra where a driver shows a GPU.
FIX = {
    "tensorflow": f"{BUILD_VARIABLE}=gpu ./run.sh env reinstalls with tensorflow[and-cuda] (CUDA and cuDNN "
                  "as wheels)",
    "jax": f"{BUILD_VARIABLE}=gpu ./run.sh env reinstalls with jax[cuda12] (jax's CUDA plugin)",
    "torch": "install a CUDA build of torch (pytorch.org, 'Get started')",
}
PROBE_SECONDS = 120  # a framework's first import on a cold disk, and its CUDA start


@dataclass(frozen=True)
class View:
    """What one backend makes of the GPUs: how many it sees, and where none, why (its own words or the
    library it could not load); the CUDA version it was built for where it says."""

    gpus: int
    said: str | None = None
    built_for: str | None = None

    def to_dict(self) -> dict:
        return {"gpus": self.gpus, "said": self.said, "built_for": self.built_for}


def first_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {(str(exc).strip().splitlines() or ['(no message)'])[0]}"


def first_missing(libraries) -> str | None:
    """The first of `libraries` that cannot be loaded, where a framework looks: the NVIDIA wheels' folders
    (site-packages/nvidia/*/lib, what tensorflow[and-cuda] and jax[cuda12] install), then the loader's path."""
    import ctypes
    from pathlib import Path

    wheels = [folder for entry in sys.path if entry for folder in Path(entry).glob("nvidia/*/lib")]
    for name in libraries:
        if any((folder / name).exists() for folder in wheels):
            continue
        try:
            ctypes.CDLL(name)
        except OSError:
            return name
    return None


def shown_text(gpus) -> str:
    """'1 x NVIDIA L40S (GPU 0)', '2 x NVIDIA H100 (GPU 0, 1)': the driver's GPUs by model."""
    by_name = Counter(g["name"] for g in gpus)
    return "; ".join(f"{count} x {name} (GPU {', '.join(str(g['ordinal']) for g in gpus if g['name'] == name)})"
                     for name, count in by_name.items())


def refusal(backend: str, version: str | None, gpus, view: View) -> str:
    """The one line a run stops with where the driver shows `gpus` and `backend` sees none."""
    built = f" (built for CUDA {view.built_for})" if view.built_for else ""
    return (f"the CUDA driver shows {shown_text(gpus)}, but {backend} {version or ''}{built} sees no GPU: "
            f"{view.said or 'no reason given'}. Fix: {FIX[backend]}; or --devices cpu runs on the CPU on purpose "
            "(CUDA_VISIBLE_DEVICES picks GPUs)").replace("  ", " ")


def _driver_gpus_in_child() -> list[dict]:
    """The driver's GPUs, asked in a child: initialising the driver here would fix what this process sees
    before CUDA_VISIBLE_DEVICES hides them."""
    done = subprocess.run([sys.executable, "-m", "l40sbench.backends.cuda_driver"], capture_output=True, text=True,
                          timeout=PROBE_SECONDS)
    return json.loads(done.stdout) if done.returncode == 0 and done.stdout.strip() else []


def ask(backend: str) -> tuple[str | None, View]:
    """The backend's version and View, from a child (backends.probe): the framework is not loaded here."""
    try:
        done = subprocess.run([sys.executable, "-m", "l40sbench.backends.probe", backend], capture_output=True,
                              text=True, timeout=PROBE_SECONDS)
    except subprocess.TimeoutExpired:
        return None, View(0, f"no answer from {backend} in {PROBE_SECONDS} s")
    if done.returncode != 0 or not done.stdout.strip():
        return None, View(0, (done.stderr.strip().splitlines() or ["it exited without a word"])[-1])
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    return answer.get("version"), View(**answer["view"])


def choose(backend: str, cpu: bool, asker=None) -> dict:
    """The device choice of a command that computes on `backend`, before anything is measured; set in the
    environment for this process and its children (and so in the record).

    Raises:
      UserError: the driver shows GPUs and `backend` can use none of them (and cpu was not asked for).
    """
    if CHOICE_VARIABLE in os.environ:  # a parent (a study, the sweep) chose already
        return json.loads(os.environ[CHOICE_VARIABLE])
    if cpu:
        present = _driver_gpus_in_child()
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
        os.environ["JAX_PLATFORMS"] = "cpu"
        choice = {"chosen": "cpu", "why": "--devices cpu", "gpus_present": present}
    else:
        from l40sbench.backends import cuda_driver

        present = [vars(d) for d in cuda_driver.devices()]
        if not present:
            return {"chosen": "cpu", "why": "the CUDA driver shows no GPU", "gpus_present": []}
        version, view = (asker or ask)(backend)
        if not view.gpus:
            raise UserError(refusal(backend, version, present, view))
        choice = {"chosen": "gpu", "why": f"{backend} sees {view.gpus} of the driver's {len(present)} GPU(s)",
                  "gpus_present": present}
    os.environ[CHOICE_VARIABLE] = json.dumps(choice)
    return choice


def recorded() -> dict | None:
    """The choice made for this process, for the record (None where no command chose: a library caller)."""
    text = os.environ.get(CHOICE_VARIABLE)
    return json.loads(text) if text else None
