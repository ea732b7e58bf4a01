"""Claims on whole commands as a user runs them: two runs of one command, LoadGen past capacity, a study's
deadline, the report's page."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.claims.figures import REPO, figure, kept_peak, records, spinners, suite


def between_runs(sizes: dict) -> dict:
    """The stability tests' classify command run back to back; `compare` (default tolerance) on each neighbour
    pair, and the per-image means' ratios."""
    means, stable, worse = [], [], []
    with tempfile.TemporaryDirectory() as work:
        folders = [Path(work) / f"run{i}" for i in range(sizes["runs"])]
        for folder in folders:
            suite(["classify", *sizes["flags"], "--output-dir", str(folder)])
            (record,) = records(folder)
            means.append(record["inference"]["mean_ms"])
            stable.append(1.0 if record["stability"]["verdict"].startswith("stable") else 0.0)
        for before, after in zip(folders, folders[1:]):
            done = subprocess.run([sys.executable, "-m", "l40sbench", "compare", str(before), str(after)], cwd=REPO,
                                  capture_output=True, text=True)
            worse.append(1.0 if done.returncode == 1 else 0.0)
    ratios = [b / a for a, b in zip(means, means[1:])]
    return {"ratio": figure(ratios, "x"), "farthest": figure([max(max(ratios), 1 / min(ratios))], "x"),
            "worse": figure([sum(worse)], "pairs"), "stable": figure(stable, "runs", "mean"),
            "means": figure(means, "ms")}


def server_overload(sizes: dict) -> dict:
    """A tiny vgg19 run, then `infer RUN --runtimes onnxruntime --scenario server --target-qps 100000` as a user
    runs it, `rounds` times: each test's own wall time and verdict from the record, and the command's."""
    commands, tests, invalid = [], [], []
    with tempfile.TemporaryDirectory() as work:
        run = Path(work) / "run"
        suite(["classify", "--base", "vgg19", "--image-size", "32", "--limit", "8", "--epochs", "1", "--weights",
               "none", "--output-dir", str(run)])
        for _ in range(sizes["rounds"]):
            started = time.perf_counter()
            suite(["infer", str(run), "--runtimes", "onnxruntime", "--scenario", "server", "--target-qps", "100000",
                   "--duration", str(sizes["duration"])])
            commands.append(time.perf_counter() - started)
            (record,) = records(run)
            entry = [e for e in record["inference"]["scenarios"] if e["scenario"] == "server"][-1]
            tests.append(entry["wall_seconds"])
            invalid.append(1.0 if entry["result"] == "INVALID" else 0.0)
    return {"test": figure(tests, "s"), "command": figure(commands, "s"), "invalid": figure([sum(invalid)], "runs"),
            "duration": figure([sizes["duration"]], "s")}


STUDY = ["study", "l40s", "--quick", "--only", "classify-xception,classify-inceptionv3,classify-vgg19"]


def _study(folder: Path, budget: str, busy: int) -> tuple[dict, float]:
    """A quick study with --budget, as a user runs it, `busy` processes spinning from its second step on:
    (its study.json, the command's wall seconds)."""
    env = {**os.environ, **kept_peak()}
    started = time.perf_counter()
    log = folder.with_name(f"{folder.name}.log")  # a file, not a pipe: the study's progress would fill a pipe
    with log.open("w") as stderr:
        process = subprocess.Popen([sys.executable, "-m", "l40sbench", *STUDY, "--budget", budget, "--output-dir",
                                    str(folder)], cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=stderr)
    stop = None
    while process.poll() is None:
        steps = [p for p in folder.glob("*") if p.is_dir()] if folder.is_dir() else []
        if busy and stop is None and len(steps) >= 2:
            stop = spinners(busy)
        time.sleep(0.2)
    if stop is not None:
        stop()
    errors = log.read_text().strip().splitlines()
    if process.returncode:
        raise RuntimeError(f"study ... --budget {budget}: {errors[-1] if errors else process.returncode}")
    return json.loads((folder / "study.json").read_text()), time.perf_counter() - started


def study_budget(sizes: dict) -> dict:
    """`study l40s --quick` over the three classifiers with `--budget`, unloaded, then with processes spinning
    from its second step on so that the deadline falls inside a step."""
    out: dict = {name: [] for name in ("used", "over", "wall", "cut", "not_started", "quiet_used")}
    budget = f"{sizes['budget']}s"
    with tempfile.TemporaryDirectory() as work:
        for round_ in range(sizes["rounds"]):
            if sizes["quiet"]:  # --quick: only the loaded study (the smallest plan needs about 90 s)
                quiet, _ = _study(Path(work) / f"quiet-{round_}", budget, 0)
                out["quiet_used"].append(quiet["budget"]["used_s"])
            busy, wall = _study(Path(work) / f"busy-{round_}", budget, sizes["busy"])
            statuses = [step["status"] for step in busy["steps"]]
            out["used"].append(busy["budget"]["used_s"])
            out["over"].append(busy["budget"]["used_s"] - sizes["budget"])
            out["wall"].append(wall)
            out["cut"].append(statuses.count("cut"))
            out["not_started"].append(statuses.count("skipped"))
    return {**{name: figure(values, "s" if name in ("used", "over", "wall", "quiet_used") else "steps")
               for name, values in out.items() if values},
            "budget": figure([sizes["budget"]], "s"), "busy": figure([sizes["busy"]], "processes")}


def report_page(sizes: dict) -> dict:
    """`study ... --quick` as a user runs it, then `report` over its runs and both references, without and with
    `--html` in turns (each a fresh process)."""
    from benchmarks.claims.figures import timed_cli

    walls: dict = {"markdown": [], "html": []}
    with tempfile.TemporaryDirectory() as work:
        study = Path(work) / "study"
        suite(["study", *sizes["study"], "--output-dir", str(study)])
        inputs = [str(p) for p in sorted(study.glob("*/")) if (p / "result.json").is_file()]
        for round_ in range(sizes["rounds"]):
            for name, extra in (("markdown", []), ("html", ["--html"])):
                out = Path(work) / f"report-{round_}-{name}"
                seconds, _ = timed_cli(["report", *inputs, "l40s", "leadergpu-2017", "--output-dir", str(out),
                                        *extra], check=True, cwd=REPO, env={**os.environ, **kept_peak()})
                walls[name].append(seconds)
        mib = (out / "index.html").stat().st_size / 2**20
    return {"ratio": figure([h / m for m, h in zip(walls["markdown"], walls["html"])], "x"),
            **{name: figure(values, "s") for name, values in walls.items()}, "mib": figure([mib], "MiB")}
