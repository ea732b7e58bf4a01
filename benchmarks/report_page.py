"""What `report --html` adds: the page's size and the time it takes, against the same report without it.

    python benchmarks/report_page.py [--rounds 3] INPUT...    # e.g. a `study all --quick` folder's runs and the
                                                             # references l40s leadergpu-2017

Runs `l40sbench report INPUT... --out DIR` without and with `--html` in turns (each a fresh process, as a
user runs it), prints each round's wall seconds, the medians, their difference (the page's cost) and the
page's size, and a calibration measured in the same run (NumPy float32 1024 matmul, best of 5).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.claims.figures import timed_cli  # noqa: E402
from l40sbench.peak.host import matmul_gflops as host_matmul_gflops  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("inputs", nargs="+", help="what `report` reads")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"calibration: NumPy float32 1024 matmul {host_matmul_gflops():.1f} GFLOP/s")
    walls: dict[str, list[float]] = {"markdown": [], "with --html": []}
    size = None
    with tempfile.TemporaryDirectory() as scratch:
        for round_ in range(args.rounds):
            for name, extra in (("markdown", []), ("with --html", ["--html"])):
                out = Path(scratch) / f"{round_}-{len(extra)}"
                seconds, _ = timed_cli(["report", *args.inputs, "--output-dir", str(out), *extra], check=True, cwd=REPO)
                walls[name].append(seconds)
                if extra:
                    size = (out / "index.html").stat().st_size
            print(f"round {round_ + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in walls.items()))
    medians = {k: statistics.median(v) for k, v in walls.items()}
    print(f"medians: markdown {medians['markdown']:.2f} s, with --html {medians['with --html']:.2f} s "
          f"(the page: +{medians['with --html'] - medians['markdown']:.2f} s); index.html {size / 2**20:.2f} MiB")
    print(f"calibration: NumPy float32 1024 matmul {host_matmul_gflops():.1f} GFLOP/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
