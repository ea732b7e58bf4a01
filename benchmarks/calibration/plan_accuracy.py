"""A finished study's plan against what ran: each step's estimate, its time, and their ratio (run / planned),
with the float32 peak the estimates rested on, as docs/study.md records them:

    .venv/bin/python benchmarks/calibration/plan_accuracy.py results/study-l40s-<time>

A ratio under 1 is a pessimistic estimate (a budget refused for nothing), over 1 an optimistic one (a deadline
crossed); the bar is 0.8-1.2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("study", type=Path, help="a finished study's folder (its study.json)")
    args = parser.parse_args()
    try:
        state = json.loads((args.study / "study.json").read_text())
    except (OSError, ValueError) as exc:
        print(f"plan_accuracy: {args.study}: no readable study.json ({exc})", file=sys.stderr)
        return 2
    peak = json.loads((args.study / "peak.json").read_text()) if (args.study / "peak.json").exists() else {}
    gflops = ((peak.get("matmul") or {}).get("float32") or {}).get("gflops")
    rested = f", estimates at float32 matmul {gflops:.0f} GFLOP/s" if gflops else ""
    print(f"study {state['study']}{' --quick' if state['quick'] else ''}{rested}")
    print("| step | command | planned s | run s | run / planned |")
    print("|---|---|---|---|---|")
    ran = {s["name"]: s for s in state.get("steps", [])}
    for step in state["plan"]["steps"]:
        seen = ran.get(step["name"], {})
        seconds = seen.get("seconds")
        ratio = f"{seconds / step['estimate_s']:.2f}" if seconds and seen.get("status") == "ok" else seen.get(
            "status", "not run")
        run = f"{seconds:.0f}" if seconds else "-"
        print(f"| {step['name']} | {' '.join(step['argv'])} | {step['estimate_s']:.0f} | {run} | {ratio} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
