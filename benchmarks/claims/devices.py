"""Claims on a GPU the backend cannot use, with the stand-in CUDA driver (tests/standin/libcuda.c: one NVIDIA
L40S that no framework can use): how fast each command refuses it, and what the GPU check costs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from unittest import mock

from benchmarks.claims import claim
from benchmarks.claims.figures import figure, timed_rounds
from l40sbench.core.timing import time_calls

REPO = Path(__file__).resolve().parents[2]
COMMANDS = {
    "classify_tensorflow": ["classify", "--base", "vgg19", "--epochs", "1", "--limit", "8", "--image-size", "32"],
    "classify_jax": ["classify", "--backend", "jax", "--base", "vgg19", "--epochs", "1", "--limit", "8",
                     "--image-size", "32"],
    "detect": ["detect", "--base", "ssd_resnet50_fpn", "--epochs", "1", "--limit", "4", "--image-size", "128"],
    "synthetic": ["synthetic", "--models", "lenet", "--batch-sizes", "4", "--steps", "2"],
    "infer": ["infer", "no-such-run"],
    "study_plan": ["study", "l40s", "--plan"],
    "env_peak": ["env", "--peak"],
}


def standin_driver(folder: Path) -> Path:
    """The stand-in CUDA driver built into `folder`.

    Raises:
      RuntimeError: no C compiler.
    """
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise RuntimeError("no C compiler for the stand-in CUDA driver")
    driver = folder / "libcuda-standin.so"
    subprocess.run([compiler, "-shared", "-fPIC", "-o", str(driver), str(REPO / "tests/standin/libcuda.c")],
                   check=True)
    return driver


def _refusal_text(f: dict) -> str:
    return ("with the stand-in driver's L40S, each exit 2, one line, no folder left: "
            + ", ".join(f"{name.replace('_', ' ')} {f[name]['value']:.1f} s" for name in COMMANDS)
            + f" (medians of {f['detect']['n']})")


@claim("gpu-refusal", "devices",
       "a GPU the backend cannot use stops each command that computes before anything is measured",
       "The GPU check on real host shapes", _refusal_text, "classify_tensorflow", sizes={"rounds": 3},
       quick={"rounds": 1})
def gpu_refusal(sizes: dict) -> dict:
    """Each command that computes, in a fresh interpreter as a user runs it, against the stand-in's L40S.

    Raises:
      AssertionError: a command that did not refuse in one line with exit 2, or left a folder.
    """
    out = {}
    with tempfile.TemporaryDirectory() as work:
        env = {**os.environ, "L40SBENCH_CUDA_DRIVER": str(standin_driver(Path(work))), "TF_CPP_MIN_LOG_LEVEL": "2"}
        env.pop("L40SBENCH_DEVICE_CHOICE", None)
        folder = Path(work) / "out"

        def refused(done, name):
            lines = done.stderr.strip().splitlines()
            assert done.returncode == 2 and lines and "error:" in lines[-1], (name, done.stderr[-500:])
            assert not folder.exists(), f"{name} left {folder}"

        for name, argv in COMMANDS.items():
            flags = ["--output-dir", str(folder)] if argv[0] in ("classify", "detect", "synthetic") else []
            walls, _ = timed_rounds([*argv, *flags], sizes["rounds"], lambda done, name=name: refused(done, name),
                                    cwd=work, env=env, timeout=300)
            out[name] = figure(walls, "s")
    return out


def _check_text(f: dict) -> str:
    return (f"run.sh's one driver query {f['run_sh_query']['value']:.3f} s; the gate's driver query (a child) "
            f"{f['driver_view']['value']:.3f} s; a backend check in its child: tensorflow "
            f"{f['probe_tensorflow']['value']:.2f} s, jax {f['probe_jax']['value']:.2f} s, against "
            f"{1000 * f['kept_answer']['value']:.2f} ms for a kept answer; a driver that never answers: given up "
            f"after {f['stuck_driver']['value']:.2f} s (medians of {f['kept_answer']['n']})")


@claim("gpu-check-cost", "devices",
       "the GPU check's cost, and what keeping its answer saves a GPU command (stand-in driver)",
       "The GPU check on real host shapes", _check_text, "probe_tensorflow", sizes={"rounds": 5},
       quick={"rounds": 1})
def gpu_check_cost(sizes: dict) -> dict:
    """run.sh's driver query (a fresh interpreter); the gate's driver query (a child); one backend check in its
    child (the framework's import and its view: what a GPU command pays where no answer is kept); the gate
    reading a kept answer instead; a driver that never answers, until the gate gives up (one round)."""
    from l40sbench.backends import cuda_driver, gpu_gate

    def seconds(call, rounds: int) -> dict:
        return figure(time_calls(lambda _: call(), range(rounds)), "s")

    rounds, out = sizes["rounds"], {}
    with tempfile.TemporaryDirectory() as work:
        env = {"L40SBENCH_CUDA_DRIVER": str(standin_driver(Path(work))), "TF_CPP_MIN_LOG_LEVEL": "2"}
        with mock.patch.dict(os.environ, env):
            script = [sys.executable, str(REPO / "l40sbench/backends/cuda_driver.py"), "--count"]
            out["run_sh_query"] = seconds(lambda: subprocess.run(script, check=True, capture_output=True), rounds)

            def view():
                cuda_driver.forget()
                assert cuda_driver.view().devices, "the stand-in shows no GPU"

            out["driver_view"] = seconds(view, rounds)
            for backend in ("tensorflow", "jax"):
                out[f"probe_{backend}"] = seconds(lambda b=backend: gpu_gate.answer(b, gpu_gate.start_probe(b)),
                                                  rounds)
            shown = cuda_driver.view()
            with mock.patch.object(sys, "prefix", work):  # a kept answer, as a good GPU check leaves it
                key = gpu_gate._check_key("tensorflow", shown)
                (Path(work) / gpu_gate.CHECK_FILE).write_text(json.dumps(
                    {key: {"version": "kept", "view": gpu_gate.View(1, None, "12.5.1").to_dict()}}))
                out["kept_answer"] = seconds(lambda: gpu_gate.ask("tensorflow", shown), rounds)
        with mock.patch.dict(os.environ, {**env, "STANDIN_HANG": "1"}):
            cuda_driver.forget()
            out["stuck_driver"] = seconds(cuda_driver.view, 1)
            cuda_driver.forget()
    return out
