"""docs/performance-log.md, "The test suite on several workers": what a process pays to import the suite's libraries without compiled bytecode.

Where PYTHONDONTWRITEBYTECODE is set (as on these machines), Python never writes the .pyc files it
compiles, so a venv installed without them compiles every module it imports again in every process.
This times `import <module>` in fresh processes, taking turns:
- "compiled": the venv's own __pycache__ (run.sh compiles it at install);
- "from source": PYTHONPYCACHEPREFIX pointing at an empty folder that nothing is written to, so no .pyc
  is found and every module is compiled again, as in a venv installed without bytecode.
The float32 matmul peak (l40sbench.peak, tensorflow's kernels) measured after the rounds calibrates the times.

Usage: .venv/bin/python .ci/import_bytecode.py [--rounds 3] [--modules tensorflow,jax,l40sbench.cli]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time


def import_seconds(module: str, env: dict) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", f"import {module}"], env=env, check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--modules", default="tensorflow,jax,l40sbench.cli")
    args = parser.parse_args()
    compiled = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "TF_CPP_MIN_LOG_LEVEL": "2"}
    with tempfile.TemporaryDirectory() as empty:
        from_source = {**compiled, "PYTHONPYCACHEPREFIX": empty}
        times = {(m, kind): [] for m in args.modules.split(",") for kind in ("compiled", "from source")}
        for _ in range(args.rounds):
            for module, kind in times:
                times[module, kind].append(import_seconds(module, compiled if kind == "compiled" else from_source))
        assert not os.listdir(empty), "a .pyc was written to the empty prefix"
    from l40sbench.core.utilisation import peak_for
    from l40sbench.peak.measure import measure

    matmul = peak_for(measure().to_dict(), "fp32")[1]
    print(f"{args.rounds} rounds, medians; float32 matmul peak {matmul:.1f} GFLOP/s\n")
    print("| import | compiled s | from source s | from source / compiled |\n|---|---|---|---|")
    for module in args.modules.split(","):
        fast, slow = (statistics.median(times[module, kind]) for kind in ("compiled", "from source"))
        print(f"| `{module}` | {fast:.2f} | {slow:.2f} | {slow / fast:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
