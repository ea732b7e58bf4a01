"""How long `classify --list-bases` and `detect --list-bases` take (the bar: every keras.applications model
listed in under 3 s), each in a fresh interpreter as a user runs it, with the host's matmul rate beside the times:

    .venv/bin/python benchmarks/list_bases.py [--rounds 5]

Nothing else may run meanwhile.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from benchmarks.claims.figures import timed_rounds  # noqa: E402
from l40sbench.peak.host import matmul_gflops as host_matmul_gflops  # noqa: E402

COMMANDS = {"classify --list-bases": ["classify", "--list-bases"], "detect --list-bases": ["detect", "--list-bases"],
            "--version (the CLI's own start)": ["--version"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="runs of each command (default: 5)")
    args = parser.parse_args()
    print(f"host: NumPy float32 1024 matmul {host_matmul_gflops():.0f} GFLOP/s before")
    print("| command | rows | seconds (each round) | median |")
    print("|---|---|---|---|")
    for name, argv in COMMANDS.items():
        walls, done = timed_rounds(argv, args.rounds, cwd=REPO, timeout=120, check=True)
        rows = sum(" | " in line for line in done.stdout.splitlines()) - 1
        print(f"| {name} | {max(rows, 0)} | {', '.join(f'{w:.2f}' for w in walls)} | {statistics.median(walls):.2f} |")
    print(f"host: NumPy float32 1024 matmul {host_matmul_gflops():.0f} GFLOP/s after")
    return 0


if __name__ == "__main__":
    sys.exit(main())
