"""How long each command that computes takes to refuse a GPU its backend cannot use (the bar: under 30 s,
one line, exit 2), with the stand-in CUDA driver (tests/standin/libcuda.c: one NVIDIA L40S), each command
in a fresh interpreter as a user runs it, and the host's matmul rate beside the times:

    .venv/bin/python benchmarks/gpu_refusal.py [--rounds 2]

Needs a C compiler for the stand-in. Nothing else may run meanwhile.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from benchmarks.timed_cli import timed_rounds  # noqa: E402
from l40sbench.peak.host import matmul_gflops as host_matmul_gflops  # noqa: E402

COMMANDS = {
    "classify (tensorflow)": ["classify", "--base", "vgg19", "--epochs", "1", "--limit", "8", "--image-size", "32"],
    "classify (jax)": ["classify", "--backend", "jax", "--base", "vgg19", "--epochs", "1", "--limit", "8",
                       "--image-size", "32"],
    "detect": ["detect", "--base", "ssd_resnet50_fpn", "--epochs", "1", "--limit", "4", "--image-size", "128"],
    "synthetic": ["synthetic", "--models", "lenet", "--batch-sizes", "4", "--steps", "2"],
    "infer": ["infer", "no-such-run"],
    "study --plan": ["study", "l40s", "--plan"],
    "env --peak": ["env", "--peak"],
}


def standin_driver(folder: Path) -> Path | None:
    """The stand-in CUDA driver (tests/standin/libcuda.c) built into `folder`; None without a C compiler."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        return None
    driver = folder / "libcuda-standin.so"
    subprocess.run([compiler, "-shared", "-fPIC", "-o", str(driver), str(REPO / "tests/standin/libcuda.c")], check=True)
    return driver


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2, help="runs of each command (default: 2)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        driver = standin_driver(Path(work))
        if driver is None:
            print("gpu_refusal: no C compiler for the stand-in driver", file=sys.stderr)
            return 2
        env = {**os.environ, "L40SBENCH_CUDA_DRIVER": str(driver), "TF_CPP_MIN_LOG_LEVEL": "2"}
        env.pop("L40SBENCH_DEVICE_CHOICE", None)
        before = host_matmul_gflops()
        print(f"host: NumPy float32 1024 matmul {before:.0f} GFLOP/s before")
        print("| command | exit | seconds (each round) | the line |")
        print("|---|---|---|---|")
        for name, argv in COMMANDS.items():
            out = Path(work) / "out"

            def left_nothing(done, name=name, out=out):
                assert not out.exists(), f"{name} left {out}"

            walls, done = timed_rounds([*argv, *(["--output-dir", str(out)] if argv[0] in (
                "classify", "detect", "synthetic") else [])], args.rounds, left_nothing, cwd=work, env=env,
                timeout=300)
            line = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "(nothing)"
            lines = len(done.stderr.strip().splitlines())
            print(f"| {name} | {done.returncode} | {', '.join(f'{w:.1f}' for w in walls)} (median "
                  f"{statistics.median(walls):.1f}) | {lines} line(s): {line[:90]}... |")
        print(f"host: NumPy float32 1024 matmul {host_matmul_gflops():.0f} GFLOP/s after")
    return 0


if __name__ == "__main__":
    sys.exit(main())
