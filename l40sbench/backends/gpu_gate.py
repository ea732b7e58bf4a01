"""Before anything is measured: can the chosen backend use the GPUs the CUDA driver shows this process?

The one place of the GPU check: the gate of every command that computes, `env` and run.sh's choice of build
(its one driver query, cuda_driver.py run as a file) ask the same driver query with the same limit, and every
refusal is worded here.

A renter's run must not time the CPU without a word because the framework could not load its CUDA libraries
(TensorFlow says so at WARNING, which TF_CPP_MIN_LOG_LEVEL=2 hides; jax's CPU build never looks), nor hang on a
stuck driver, nor die mid-measurement on a board another process holds. So, in order:
1. the driver is asked in a child within cuda_driver.LIMIT_SECONDS; no answer stops the command;
2. CUDA_VISIBLE_DEVICES (or a container's setting) that hides every GPU of the host stops it; one that hides
   some is said; a board in MIG mode with no instance stops it;
3. where the driver shows GPUs, the backend is asked in a child (backends.probe), which makes a context and
   computes on each GPU; a backend that sees none, or a board it cannot compute on, stops the command in one
   line: what the backend said and the fix for that cause (the build, the driver's age, the process holding
   the board, MIG). A backend's good answer is kept per venv, driver and visible devices (CHECK_FILE), so a
   GPU command imports its framework once.
`--devices cpu` runs on the CPU on purpose and never asks the driver: the GPUs are hidden from the backend
(CUDA_VISIBLE_DEVICES, JAX_PLATFORMS).

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
from pathlib import Path

from l40sbench.backends import cuda_driver
from l40sbench.errors import UserError

CHOICE_VARIABLE = "L40SBENCH_DEVICE_CHOICE"
TF_LOG_VARIABLE, TF_LOG_DEFAULT = "TF_CPP_MIN_LOG_LEVEL", "2"  # the CLI's and run.sh's; a CPU choice sets 3
# What choose() sets in the environment for the command and its children; cli.main puts them back after it
SET_BY_CHOICE = (CHOICE_VARIABLE, cuda_driver.VISIBLE_VARIABLE, "JAX_PLATFORMS", TF_LOG_VARIABLE)
BUILD_VARIABLE = "L40SBENCH_BUILD"  # run.sh: gpu, cpu or auto (the default: gpu where a driver shows a GPU)
CPU = "cpu"
CPU_ON_PURPOSE = "--devices cpu runs on the CPU on purpose"
# How each backend gets its CUDA build; run.sh installs the `gpu` extra where a driver shows a GPU.
FIX = {
    "tensorflow": f"{BUILD_VARIABLE}=gpu ./run.sh env reinstalls with tensorflow[and-cuda] (CUDA and cuDNN "
                  "as wheels)",
    "jax": f"{BUILD_VARIABLE}=gpu ./run.sh env reinstalls with jax[cuda12] (jax's CUDA plugin)",
    "torch": "install a CUDA build of torch (pytorch.org, 'Get started')",
}
# The first driver branch of each CUDA release (NVIDIA's CUDA toolkit release notes, table 3): what a build
# for that CUDA needs.
DRIVER_FOR_CUDA = {"11.8": "R520", "12.0": "R525", "12.1": "R530", "12.2": "R535", "12.3": "R545",
                   "12.4": "R550", "12.5": "R555", "12.6": "R560", "12.8": "R570", "12.9": "R575", "13.0": "R580"}
PROBE_SECONDS = 120  # a framework's first import on a cold disk, its CUDA start and one small computation
CHECK_FILE = ".l40sbench-gpu-check.json"  # in the venv (sys.prefix): the backends' good answers


@dataclass(frozen=True)
class View:
    """What one backend makes of the GPUs: how many it sees and computed on, and where none, why (its own
    words or the library it could not load); the CUDA version it was built for where it says; the boards it
    sees but could not compute on (each {"index", "said"}: busy, full, exclusive, in a bad state)."""

    gpus: int
    said: str | None = None
    built_for: str | None = None
    failed: tuple[dict, ...] = ()

    def to_dict(self) -> dict:
        return {"gpus": self.gpus, "said": self.said, "built_for": self.built_for, "failed": list(self.failed)}

    @classmethod
    def from_dict(cls, data: dict) -> View:
        return cls(data["gpus"], data.get("said"), data.get("built_for"), tuple(data.get("failed") or ()))


def shown_text(gpus) -> str:
    """'1 x NVIDIA L40S (GPU 0)', '2 x NVIDIA H100 (GPU 0, 1)': the driver's GPUs by model."""
    by_name = Counter(g["name"] for g in gpus)
    return "; ".join(f"{count} x {name} (GPU {', '.join(str(g['ordinal']) for g in gpus if g['name'] == name)})"
                     for name, count in by_name.items())


def _release(version: str | None) -> tuple[int, ...] | None:
    try:
        return tuple(int(part) for part in (version or "").split(".")[:2])
    except ValueError:
        return None


def _holders(driver: cuda_driver.DriverView, uuid: str | None) -> str:
    """' (held by pid 4242 python, 40000 MB)': who NVML says computes on the board of `uuid`, or ''."""
    for board in driver.boards:
        if uuid and (board["uuid"] == uuid or uuid in board.get("mig_uuids", ())):
            held = [f"pid {p['pid']}" + (f" {p['name']}" if p.get("name") else "")
                    + (f", {p['memory_mb']:.0f} MB" if p.get("memory_mb") else "") for p in board["processes"]]
            return f" (held by {'; '.join(held)})" if held else ""
    return ""


def fix_for(backend: str, driver: cuda_driver.DriverView, view: View) -> str:
    """The fix that fits why `backend` sees no GPU: the wrong build, a driver older than the build's CUDA, a
    busy board, or the backend's own words to read further."""
    said = view.said or ""
    built, supported = _release(view.built_for), _release(driver.version)
    if built and supported and supported < built:
        wanted = ".".join(map(str, built))
        return (f"the driver supports CUDA {driver.version}, older than the CUDA {view.built_for} {backend} was "
                f"built for: install a driver for CUDA {wanted} or newer "
                f"({DRIVER_FOR_CUDA.get(wanted, 'see NVIDIA CUDA release notes')} or later)")
    if view.built_for is None or said.startswith("it could not load"):
        return FIX[backend]
    holders = "".join(_holders(driver, d.uuid) for d in driver.devices)
    if holders:
        return f"the board is in use{holders}: wait for it, or pick another with CUDA_VISIBLE_DEVICES"
    return (f"{backend} is the GPU build and the driver answers: its log says more "
            "(TF_CPP_MIN_LOG_LEVEL=0 for TensorFlow), and nvidia-smi shows the boards' state")


def refusal(backend: str, version: str | None, driver: cuda_driver.DriverView, view: View) -> str:
    """The one line a run stops with where the driver shows GPUs and `backend` cannot compute on them all."""
    gpus = [vars(d) for d in driver.devices]
    built = f" (built for CUDA {view.built_for})" if view.built_for else ""
    who = f"{backend} {version or ''}{built}".replace("  ", " ")
    if view.gpus and view.failed:
        board = view.failed[0]
        device = driver.devices[board["index"]] if board["index"] < len(driver.devices) else None
        named = f"GPU {board['index']} ({device.name}, {device.uuid})" if device else f"GPU {board['index']}"
        held = _holders(driver, device.uuid if device else None)
        return (f"{who} cannot compute on {named}{held}: {board['said']}. Fix: wait for the board or pick the others "
                f"with CUDA_VISIBLE_DEVICES; or {CPU_ON_PURPOSE}")
    return (f"the CUDA driver shows {shown_text(gpus)}, but {who} sees no GPU: {view.said or 'no reason given'}. "
            f"Fix: {fix_for(backend, driver, view)}; or {CPU_ON_PURPOSE} (CUDA_VISIBLE_DEVICES picks GPUs)")


def start_probe(backend: str) -> subprocess.Popen:
    """The child that asks `backend` (backends.probe), started now; answer() reads it."""
    return subprocess.Popen([sys.executable, "-m", "l40sbench.backends.probe", backend], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})


def answer(backend: str, child: subprocess.Popen) -> dict:
    """The probe's answer ({"version", "view", "devices"}), or {"error": why} where it gave none in time."""
    try:
        out, err = child.communicate(timeout=PROBE_SECONDS)
    except subprocess.TimeoutExpired:
        child.kill()
        return {"error": f"no answer from {backend} within {PROBE_SECONDS} s"}
    if child.returncode != 0 or not out.strip():
        return {"error": (err.strip().splitlines() or ["it exited without a word"])[-1]}
    return json.loads(out.strip().splitlines()[-1])


def _check_key(backend: str, driver: cuda_driver.DriverView) -> str:
    from importlib import metadata

    try:
        installed = metadata.version(backend)
    except metadata.PackageNotFoundError:
        installed = None
    return json.dumps([backend, installed, driver.version, os.environ.get(cuda_driver.VISIBLE_VARIABLE),
                       [d.uuid for d in driver.devices]])


def ask(backend: str, driver: cuda_driver.DriverView) -> tuple[str | None, View]:
    """The backend's version and View: kept from an earlier good answer in this venv for the same driver,
    backend version and visible devices, else from a child (backends.probe): the framework is not loaded here.
    Where NVML shows another process on a visible board, the kept answer is not trusted: the board may be busy
    or full now, and only the backend's own check says so."""
    kept_file = Path(sys.prefix) / CHECK_FILE
    key = _check_key(backend, driver)
    try:
        kept = json.loads(kept_file.read_text())
    except (OSError, ValueError):
        kept = {}
    if key in kept and not any(_holders(driver, d.uuid) for d in driver.devices):
        return kept[key]["version"], View.from_dict(kept[key]["view"])
    got = answer(backend, start_probe(backend))
    if "error" in got:
        return None, View(0, got["error"])
    version, view = got.get("version"), View.from_dict(got["view"])
    if view.gpus and not view.failed:  # a failure is asked again next time: the board may be free by then
        try:
            kept_file.write_text(json.dumps({**kept, key: {"version": version, "view": view.to_dict()}}))
        except OSError:  # a read-only venv: asked every time
            pass
    return version, view


def driver_problem(driver: cuda_driver.DriverView, host: cuda_driver.DriverView) -> str | None:
    """Why the driver's answer alone stops a command that would compute on a GPU, or None: no answer, every
    GPU hidden, a board in MIG mode with no instance."""
    if not driver.answered:
        return (f"{driver.said} ({os.environ.get(cuda_driver.DRIVER_VARIABLE) or 'libcuda.so.1'}): a stuck driver, "
                "as after an Xid error (nvidia-smi hangs too; dmesg shows the Xid). Fix: reset the GPU (nvidia-smi "
                f"-r) or reboot the host; or {CPU_ON_PURPOSE}, without asking the driver")
    visible = os.environ.get(cuda_driver.VISIBLE_VARIABLE)
    if not driver.devices and host.devices:
        return (f"CUDA_VISIBLE_DEVICES={visible!r} hides every GPU the driver shows this host "
                f"({shown_text([vars(d) for d in host.devices])}; UUIDs {', '.join(d.uuid for d in host.devices)}). "
                f"Fix: name boards by index or UUID, or unset it; or {CPU_ON_PURPOSE}")
    empty = [b for b in driver.boards if b.get("mig_mode") and not b.get("mig_uuids")]
    if not driver.devices and empty:
        b = empty[0]
        return (f"GPU {b['index']} ({b['name']}, {b['uuid']}) is in MIG mode with no MIG instance: CUDA can use no "
                f"part of it. Fix: make one (sudo nvidia-smi mig -i {b['index']} -cgi 0 -C, the smallest profile; "
                f"nvidia-smi mig -lgip lists them) or turn MIG off (sudo nvidia-smi -i {b['index']} -mig 0); or "
                f"{CPU_ON_PURPOSE}")
    return None


def notices(driver: cuda_driver.DriverView, host: cuda_driver.DriverView) -> list[str]:
    """What a GPU run says first where some boards are hidden, or where it runs on a MIG instance."""
    lines = []
    hidden = [d for d in host.devices if d.uuid not in {v.uuid for v in driver.devices}]
    if driver.devices and hidden:
        lines.append(f"GPUs: running on {', '.join(f'{d.name} {d.uuid}' for d in driver.devices)}; "
                     f"CUDA_VISIBLE_DEVICES={os.environ.get(cuda_driver.VISIBLE_VARIABLE)!r} hides "
                     f"{', '.join(f'{d.name} {d.uuid}' for d in hidden)}")
    migs = [d for d in driver.devices if d.mig]
    if migs:
        lines.append(f"GPUs: MIG instance {migs[0].uuid} ({migs[0].name}); telemetry reads its parent board"
                     + (f"; {len(migs)} instances visible, CUDA uses one a process: CUDA_VISIBLE_DEVICES=MIG-... picks"
                        if len(migs) > 1 else ""))
    return lines


def choose(backend: str | None, cpu: bool, asker=None, why_cpu: str = "--devices cpu") -> dict:
    """The device choice of a command that computes on `backend`, before anything is measured; set in the
    environment for this process and its children (and so in the record). `backend` None with `cpu`: the
    command's figures run on the CPU whatever the host has (an ONNX file on onnxruntime), `why_cpu` says why.

    Raises:
      UserError: the driver gives no answer, hides every GPU, shows a MIG board with no instance, or shows GPUs
        that `backend` cannot compute on (and cpu was not asked for).
    """
    if CHOICE_VARIABLE in os.environ:  # a parent (a study, the sweep) chose already
        return json.loads(os.environ[CHOICE_VARIABLE])
    if cpu:
        os.environ[cuda_driver.VISIBLE_VARIABLE] = ""
        os.environ["JAX_PLATFORMS"] = "cpu"
        choice = {"chosen": "cpu", "why": why_cpu, "gpus_present": None, "notices": []}
    else:
        driver = cuda_driver.view()
        host = cuda_driver.host_view() if driver.answered else driver
        problem = driver_problem(driver, host)
        if problem:
            raise UserError(problem)
        present = [vars(d) for d in driver.devices]
        if present:
            version, view = (asker or ask)(backend, driver)
            if not view.gpus or view.failed:
                raise UserError(refusal(backend, version, driver, view))
            choice = {"chosen": "gpu", "why": f"{backend} computed on {view.gpus} of the driver's {len(present)} "
                      "GPU(s)", "gpus_present": present, "gpus_hidden": len(host.devices) - len(present),
                      "notices": notices(driver, host)}
        else:
            choice = {"chosen": "cpu", "why": "the CUDA driver shows no GPU", "gpus_present": [], "notices": []}
    if choice["chosen"] == "cpu" and os.environ.get(TF_LOG_VARIABLE, TF_LOG_DEFAULT) == TF_LOG_DEFAULT:
        os.environ[TF_LOG_VARIABLE] = "3"  # TensorFlow's "E ... failed call to cuInit" says only what the gate knows
    os.environ[CHOICE_VARIABLE] = json.dumps(choice)  # kept: a study's steps and the sweep's workers ask nothing
    return choice


def recorded() -> dict | None:
    """The choice made for this process, for the record (None where no command chose: a library caller)."""
    text = os.environ.get(CHOICE_VARIABLE)
    return json.loads(text) if text else None
