"""The peak memory of the study's training steps at a few batch sizes, measured, and the plan's memory model
fitted to them and checked against runs it was not fitted to:

    .venv/bin/python benchmarks/calibration/memory_peaks.py [--only xception,...] [--output benchmarks/calibration/memory_peaks.json]

Each run is the study's command (`classify` or `detect` at the model's study size, one epoch, --no-bound) on the
whole stand-in (see FITS).
Its peak is the record's `memory.peak_mb` (core.memory: on a CPU the process's peak resident set), with the
peak resident set the watchdog saw (core.child) beside it. The FITS runs fit study.memory's constants (written
to l40sbench/study/memory_fit.json); the CHECKS runs are estimated with them and their ratio measured /
estimated kept, which docs/study.md shows. --keep RECORD reuses an earlier record's runs of the same settings.
The host's matmul rate is measured before and after. Runs one at a time; nothing else may run meanwhile
(memory, not time, is the figure, but two runs would share RAM).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from l40sbench.peak.host import matmul_gflops as host_matmul_gflops  # noqa: E402
from l40sbench.study import memory  # noqa: E402
from l40sbench.study.plan import CLASSIFY, DETECT, DETECT_SIZE, STANDIN_IMAGES  # noqa: E402

# (model, batch, size, whole data). Every run covers the whole stand-in, as the study runs it: a classifier's
# resident set grows with the batch over a whole epoch (xception at batch 16: 2.24 GiB, against 1.57 GiB for two
# steps), and so does a detector's (faster_rcnn_inception_v2 at batch 16: 13.71 GiB over the whole stand-in,
# 13.14 GiB over 64 images; faster_rcnn_resnet50 was under-predicted by at least 1.11x from two-step fits).
# ssd_resnet50_fpn at 384 px tells the images' copies apart from the base (at one size they are one constant).
FITS = [*((base, b, size, True) for base, size in CLASSIFY.items() for b in (2, 16)),
        *((base, b, DETECT_SIZE, True) for base in DETECT for b in (2, 8)),
        ("ssd_resnet50_fpn", 8, 384, True)]
# batch sizes the fit did not see, each within this 24 GB host: the detectors' above the fit's, where an
# estimate is extrapolated (faster_rcnn_resnet50 at the protocol's batch 16 passed the watchdog's 22 GiB cap
# twice: no check of it can finish here; a whole-stand-in detector run takes 12-17 minutes on this host)
CHECKS = [*((base, 8, size, True) for base, size in CLASSIFY.items()), ("vgg19", 32, 224, True),
          ("faster_rcnn_inception_v2", 16, DETECT_SIZE, True), ("ssd_resnet50_fpn", 16, DETECT_SIZE, True),
          ("faster_rcnn_resnet50", 12, DETECT_SIZE, True)]


def _argv(model: str, batch: int, size: int, whole: bool, out: Path) -> list[str]:
    task = "detect" if model in DETECT else "classify"
    argv = [sys.executable, "-m", "l40sbench", task, "--base", model, "--image-size", str(size), "--epochs", "1",
            "--batch-size", str(batch), "--output-dir", str(out)]
    return (argv + ([] if whole else ["--limit", str(2 * batch)]) + (["--weights", "none"] if task == "classify" else [])
            + ["--no-bound"])  # the bound passes add an epoch's time and no memory beyond training's


def measure(model: str, batch: int, size: int, whole: bool, work: Path, cap_mb: float) -> dict:
    from l40sbench.core.child import run as run_child

    out = work / f"{model}-{batch}-{size}-{'whole' if whole else 'limited'}"
    started = time.perf_counter()
    outcome = run_child(_argv(model, batch, size, whole, out), timeout_s=3600, memory_limit_mb=cap_mb,
                        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    task = "detect" if model in DETECT else "classify"
    row = {"model": model, "task": task, "batch": batch, "size": size, "whole": whole,
           "images": sum(STANDIN_IMAGES[task]) if whole else 4 * batch,  # the record's count, where it finishes
           "seconds": round(time.perf_counter() - started, 1), "child_peak_rss_mb": round(outcome.peak_rss_mb, 1)}
    record = out / "result.json"
    if outcome.returncode == 0 and record.exists():
        result = json.loads(record.read_text())
        row.update(peak_mb=result["memory"]["peak_mb"], counts=result["memory"]["counts"],
                   images=result["dataset"]["train_images"] + result["dataset"]["test_images"],
                   parameters=result["model"].get("parameters"),
                   trainable_parameters=result["model"].get("trainable_parameters"))
    else:
        row.update(peak_mb=None, failed="killed at the memory cap" if outcome.over_memory else
                   f"exit {outcome.returncode}: {(outcome.stderr.strip().splitlines() or [''])[-1][:200]}")
    print(json.dumps(row), flush=True)
    return row


def _fit(fitted: list[dict], checked: list[dict]) -> dict:
    """The constants fitted to the fit runs; each check run gets its estimate and measured / estimated."""
    constants = memory.fit([row for row in fitted if row["peak_mb"] is not None])
    for row in checked:
        if row["model"] in constants["models"]:
            row["estimated_mb"] = round(memory.estimate_mb(row["model"], row["batch"], row["size"], False,
                                                           images=row["images"], constants=constants), 1)
            measured = row["peak_mb"] or row["child_peak_rss_mb"]  # a killed run: at least what it reached
            row["measured_over_estimated"] = round(measured / row["estimated_mb"], 3)
    return constants


def _table(record: dict) -> str:
    """The record's runs, fitted and checked, as a markdown table (docs/study.md)."""
    lines = ["| run | model | batch | size | data | measured peak | estimated | measured / estimated |",
             "|---|---|---|---|---|---|---|---|"]
    constants = record["constants"]
    for role, rows in (("fit", record["fit_runs"]), ("check", record["check_runs"])):
        for row in rows:
            estimated = memory.estimate_mb(row["model"], row["batch"], row["size"], False, images=row["images"],
                                           constants=constants)
            measured = row["peak_mb"] or row["child_peak_rss_mb"]  # a killed run: at least what it reached
            killed = row["peak_mb"] is None
            lines.append(f"| {role} | {row['model']} | {row['batch']} | {row['size']} | "
                         f"{'whole' if row['whole'] else str(row['images']) + ' images'} | "
                         + ("over " if killed else "") + f"{measured / 1024:.2f} GiB"
                         + (f" ({row.get('failed')})" if killed else "")
                         + f" | {estimated / 1024:.2f} GiB | {'over ' if killed else ''}{measured / estimated:.2f} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="these models only (comma-separated)")
    parser.add_argument("--output", type=Path, default=REPO / "benchmarks" / "calibration" / "memory_peaks.json")
    parser.add_argument("--constants", type=Path, default=memory.FIT_FILE)
    parser.add_argument("--refit", action="store_true", help="fit --output's measured runs again, measure nothing")
    parser.add_argument("--keep", type=Path, metavar="RECORD",
                        help="a record of an earlier run: its runs of the same settings are kept, not run again")
    parser.add_argument("--table", action="store_true", help="print --output's runs as docs/study.md's table")
    args = parser.parse_args()
    if args.table:
        print(_table(json.loads(args.output.read_text())))
        return 0
    if args.refit:
        record = json.loads(args.output.read_text())
        fitted, checked = record["fit_runs"], record["check_runs"]
        record["constants"] = _fit(fitted, checked)
        args.output.write_text(json.dumps(record, indent=1) + "\n")
        args.constants.write_text(json.dumps(record["constants"], indent=1) + "\n")
        print(f"refitted {args.output} and {args.constants}")
        return 0
    from l40sbench.core.env import fingerprint
    from l40sbench.core.memory import host_available_mb

    models = [*CLASSIFY, *DETECT]
    if args.only:
        models = [m for m in models if m in args.only.split(",")]
    cap_mb = host_available_mb()[0] - 1024  # the watchdog ends a run before the kernel's killer would
    kept = {}
    if args.keep:
        earlier = json.loads(args.keep.read_text())
        kept = {(r["model"], r["batch"], r["size"], r["whole"]): {"kept_from": str(args.keep), **r}
                for r in earlier["fit_runs"] + earlier["check_runs"] if r.get("peak_mb") is not None}
    before = host_matmul_gflops()
    with tempfile.TemporaryDirectory() as work:
        def run(m, b, s, w):
            return kept.get((m, b, s, w)) or measure(m, b, s, w, Path(work), cap_mb)

        fitted = [run(*spec) for spec in FITS if spec[0] in models]
        checked = [run(*spec) for spec in CHECKS if spec[0] in models]
    constants = _fit(fitted, checked)
    record = {"benchmark": "memory_peaks", "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "command": "python benchmarks/calibration/memory_peaks.py" + (f" --only {args.only}" if args.only else "")
              + (f" --keep {args.keep}" if args.keep else ""),
              "host": fingerprint({}), "host_matmul_gflops": {"before": before, "after": host_matmul_gflops()},
              "cap_mb": round(cap_mb), "fit_runs": fitted, "check_runs": checked, "constants": constants}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(record, indent=1) + "\n")
    if not args.only:
        args.constants.write_text(json.dumps(constants, indent=1) + "\n")
    print(f"wrote {args.output}" + ("" if args.only else f" and {args.constants}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
