"""Claims on the suite's clocks: a sweep's steps timed in windows, the stability guard's bursts, a fresh
process's first matmuls."""

from __future__ import annotations

import os
import statistics
import time

from benchmarks.claims.figures import figure, spinners


def sweep_windows(sizes: dict) -> dict:
    """The same compiled sweep step, timed in turns: every step synced (the old clock) and windows of K steps
    (the sweep's clock). On a GPU the windows let the host's dispatch overlap the device's work; a CPU computes
    as it dispatches, so the two should agree."""
    os.environ["KERAS_BACKEND"] = sizes["backend"]
    import keras

    from l40sbench.backends import load
    from l40sbench.core.timing import time_batches, time_calls
    from l40sbench.synthetic.job import Job, StepSettings, window_steps
    from l40sbench.synthetic.models import MODELS
    from l40sbench.synthetic.worker import _optimizer

    kernels = load(sizes["backend"])
    sync = kernels.sync()
    job = Job(sizes["model"], sizes["batch"], 1, StepSettings(steps=sizes["steps"], backend=sizes["backend"]))
    step, _, _, _ = kernels.sweep_step(MODELS.get(sizes["model"]), job, _optimizer("sgd", "fp32"),
                                       keras.losses.sparse_categorical_crossentropy)
    time_calls(lambda _: step(), range(10), sync=sync)
    k = window_steps(sizes["steps"])
    synced, windowed, ratios = [], [], []
    for _ in range(sizes["rounds"]):
        each = time_calls(lambda _: step(), range(sizes["steps"]), sync=sync)
        windows = [w / k for w in time_batches(step, k, sizes["steps"] // k, sync=sync)]
        synced += each
        windowed += windows
        ratios.append(statistics.median(windows) / statistics.median(each))
    return {"ratio": figure(ratios, "x"), "synced": figure(synced, "s"), "windowed": figure(windowed, "s")}


def guard_bursts(sizes: dict) -> dict:
    """Triples of bursts (the guard's start, after training and end) on TensorFlow's CPU, quiet, then with
    `busy` processes spinning during the later two bursts of each triple."""
    from l40sbench.backends import load
    from l40sbench.peak.burst import Guard

    guard = Guard("tensorflow", load("tensorflow").sync())
    guard.check("warm")
    out: dict = {"burst": []}
    for case in ("quiet", "busy"):
        ratios = []
        for _ in range(sizes["rounds"]):
            rates = [guard.check("start").gflops]
            busy = sizes["busy"] if case == "busy" else 0
            stop = spinners(busy)
            time.sleep(0.2 if busy else 0)
            for moment in ("after training", "end"):
                measured = guard.check(moment)
                rates.append(measured.gflops)
                if case == "quiet":
                    out["burst"].append(measured.seconds)
            stop()
            ratios.append(max(rates) / min(rates))
        out[case] = figure(ratios, "x")
    out["burst"] = figure(out["burst"], "s")
    out["busy_processes"] = figure([sizes["busy"]], "processes")
    return out


def _classify_run(flags: list[str], out, busy: int) -> tuple[dict, float]:
    """A classify run as a user starts it, `busy` processes spinning from the end of its first epoch to its end:
    (its record, its wall seconds)."""
    import json
    import re
    import subprocess
    import sys

    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "l40sbench", "classify", *flags, "--output-dir", str(out)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    stop = None
    for line in process.stderr:
        if busy and stop is None and re.match(r"epoch 1/\d+:", line):
            stop = spinners(busy)
    process.wait()
    if stop is not None:
        stop()
    return json.loads((out / "result.json").read_text()), time.perf_counter() - started


def guard_per_run(sizes: dict) -> dict:
    """The tests' tiny vgg19 run, quiet and with processes spinning from its first epoch's end, in turns: the
    guard's bursts' seconds against the run's wall time, and how far apart the bursts' rates fall."""
    import tempfile
    from pathlib import Path

    out: dict = {"cost": [], "wall": [], "share": [], "quiet": [], "busy": []}
    with tempfile.TemporaryDirectory() as scratch:
        for index in range(sizes["rounds"]):
            for case, busy in (("quiet", 0), ("busy", sizes["busy"])):
                record, wall = _classify_run(sizes["flags"], Path(scratch) / f"{case}-{index}", busy)
                bursts = record["stability"]["speed"]["bursts"]
                rates = [b["gflops"] for b in bursts]
                out[case].append(max(rates) / min(rates))
                if case == "quiet":
                    cost = sum(b["seconds"] for b in bursts)
                    out["cost"].append(cost)
                    out["wall"].append(wall)
                    out["share"].append(cost / wall)
    return {"cost": figure(out["cost"], "s"), "wall": figure(out["wall"], "s"), "share": figure(out["share"], "x"),
            "quiet": figure(out["quiet"], "x"), "busy": figure(out["busy"], "x")}


RAMP_SAMPLE_S, RAMP_SLOW = 0.05, 0.7


def matmul_ramp(seconds: float) -> list[float]:
    """In a fresh process: the guard's 1024 float32 matmul after one warm call, called back to back for `seconds`,
    its rate (GFLOP/s) in 50 ms samples."""
    from l40sbench.backends import load
    from l40sbench.peak.measure import matmul_flop

    kernels = load("tensorflow")
    with kernels.precision_mode("CPU", "float32"):
        call = kernels.matmul("float32")(1024)
        call()
        start, rates = time.perf_counter(), []
        while time.perf_counter() - start < seconds:
            began, calls = time.perf_counter(), 0
            while time.perf_counter() - began < RAMP_SAMPLE_S:
                call()
                calls += 1
            rates.append(matmul_flop(1024) * calls / (time.perf_counter() - began) / 1e9)
    return rates


def _burst_at(rates: list[float], start_s: float) -> float:
    """What the guard's CPU burst (peak.burst.CPU_BURST) starting at `start_s` keeps: the best sample it overlaps."""
    from l40sbench.peak.burst import CPU_BURST

    spacing = CPU_BURST["sample_seconds"] + CPU_BURST["gap_seconds"]
    return max(rates[min(len(rates) - 1, int((start_s + spacing * i) / RAMP_SAMPLE_S))]
               for i in range(CPU_BURST["samples"]))


def fresh_process_ramp(sizes: dict) -> dict:
    """Fresh interpreters one after another, each reading its matmul rate in 50 ms samples from its first call:
    what the guard's start burst would read at once and after its warm-up (peak.burst.START_WARM_SECONDS),
    against the process's steady rate (the median of its last second)."""
    from benchmarks.claims.figures import in_child
    from l40sbench.peak.burst import START_WARM_SECONDS

    cold, warm, steady = [], [], []
    for _ in range(sizes["processes"]):
        rates = in_child("benchmarks.claims.timing:matmul_ramp", sizes["seconds"], env={"TF_CPP_MIN_LOG_LEVEL": "3"})
        steady.append(statistics.median(rates[-int(1 / RAMP_SAMPLE_S):]))
        cold.append(_burst_at(rates, 0.0) / steady[-1])
        warm.append(_burst_at(rates, START_WARM_SECONDS) / steady[-1])
    return {"cold": figure(cold, "x"), "warm": figure(warm, "x"), "steady": figure(steady, "GFLOP/s"),
            "cold_slow": figure([sum(c < RAMP_SLOW for c in cold)], "processes"),
            "warm_slow": figure([sum(w < RAMP_SLOW for w in warm)], "processes"),
            "warm_s": figure([START_WARM_SECONDS], "s")}


def bound_cost(sizes: dict) -> dict:
    """The same classify command with and without --no-bound, in turns: the bound block's own seconds, what it
    adds to the command's wall time (the time to a verdict), and its verdict on this CPU for each input path."""
    import tempfile
    from pathlib import Path

    out: dict = {"cost": [], "wall": [], "added": [], "epochs": []}
    verdicts: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for index in range(sizes["rounds"]):
            for path in sizes["inputs"]:
                flags = [*sizes["flags"], "--input", path]
                record, wall = _classify_run(flags, Path(scratch) / f"{path}-{index}", 0)
                _, without = _classify_run([*flags, "--no-bound"], Path(scratch) / f"{path}-{index}-no", 0)
                block = record["bound"]
                verdicts.setdefault(path, []).append(block["verdict"].split(":")[0])
                if path == sizes["inputs"][0]:
                    out["cost"].append(block["seconds"])
                    out["wall"].append(wall)
                    out["added"].append(wall / without)
                    out["epochs"].append(block["steady_epochs_of_time"])
    figures = {name: figure(values, "x" if name == "added" else "s" if name != "epochs" else "epochs")
               for name, values in out.items()}
    for path, said in verdicts.items():
        figures[f"{path}_compute"] = figure([float(v == "compute") for v in said], "runs")
    return figures
