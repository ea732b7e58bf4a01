"""Claims on the installed suite: what compiled bytecode saves each process's imports."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

from benchmarks.claims.figures import figure

MODULES = {"tensorflow": "tensorflow", "jax": "jax", "cli": "l40sbench.cli"}  # figure name: the module imported


def bytecode(sizes: dict) -> dict:
    """`import M` in fresh processes in turns: with the venv's own __pycache__ ("compiled", as run.sh leaves it;
    PYTHONDONTWRITEBYTECODE set, as on these machines) and with PYTHONPYCACHEPREFIX at an empty folder nothing is
    written to, so every module compiles again (a venv installed without bytecode)."""
    compiled = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "TF_CPP_MIN_LOG_LEVEL": "2"}
    times: dict = {(module, kind): [] for module in MODULES.values() for kind in ("compiled", "source")}
    with tempfile.TemporaryDirectory() as empty:
        env = {"compiled": compiled, "source": {**compiled, "PYTHONPYCACHEPREFIX": empty}}
        for _ in range(sizes["rounds"]):
            for module, kind in times:
                started = time.perf_counter()
                subprocess.run([sys.executable, "-c", f"import {module}"], env=env[kind], check=True,
                               capture_output=True)
                times[module, kind].append(time.perf_counter() - started)
        assert not os.listdir(empty), "a .pyc was written to the empty prefix"
    return {**{k: figure([s / c for c, s in zip(times[m, "compiled"], times[m, "source"], strict=True)], "x")
               for k, m in MODULES.items()}, "tensorflow_compiled": figure(times["tensorflow", "compiled"], "s")}
