"""Records in the shape a GPU host writes them, made from a real tiny run's record: env's devices and peak as env
and the peak would write them on an L40S or H100 host (one board or eight, or a MIG instance), the run on one
GPU, its runtime rows where each served (tf and savedmodel on the GPU; onnxruntime, OpenVINO and LiteRT on the
host's CPU, with the CPU's own peak beside the GPU's), stability bursts on the GPU, and seeded readings for every
sample so each verdict rests on what a test changed, not on how busy the host was when the tiny run was made."""

from __future__ import annotations

import json

import numpy as np

L40S, H100 = "NVIDIA L40S", "NVIDIA H100 80GB HBM3"
MIG = "NVIDIA H100 80GB HBM3 MIG 1g.10gb"
PEAKS = {L40S: 90_000.0, H100: 60_000.0, MIG: 8_500.0}  # float32 matmul GFLOP/s (tf32 x2, bfloat16 x4)
CPU_RUNTIMES = ("onnxruntime", "openvino", "litert")
MEASURED = "2026-12-06T10:00:00Z"


def _spread(rng, value: float, n: int, share: float = 0.03) -> list[float]:
    return [float(value * f) for f in 1 + share * rng.uniform(-1, 1, n)]


def _latency(rng, mean_ms: float, n: int = 30) -> dict:
    times = _spread(rng, mean_ms, n)
    ordered = sorted(times)
    return {"times_ms": times, "mean_ms": float(np.mean(times)), "p50_ms": ordered[n // 2],
            "p99_ms": ordered[min(n - 1, int(n * 0.99))], "images_per_second": 1000 / float(np.mean(times)),
            "batch_size": 1, "images_timed": n, "warmup_excluded": 1}


def gpu_host(record: dict, model: str = L40S, boards: int = 8, *, seed: int = 0, measured: str = MEASURED,
             cpu_peak: bool = True, shares: tuple[float, float] = (0.6, 0.05), input_over_step: float = 2.5) -> dict:
    """`record` as a host with `boards` GPUs of `model` would write it: trained on one, its batch-1 probe on it.
    `shares`: the run's utilisation of the GPU's peak (training, batch-1 inference): a compute-bound training
    and a launch-bound latency, as on a real GPU. `input_over_step`: the input pipeline's rate over the step's
    (below 1: a GPU its host cannot feed)."""
    rng = np.random.default_rng(seed)
    out = json.loads(json.dumps(record))
    env = out["env"]
    env["devices"] = [{"name": "/physical_device:CPU:0", "type": "CPU", "model": "AMD EPYC"}] + [
        {"name": f"/physical_device:GPU:{i}", "type": "GPU", "model": model} for i in range(boards)]
    peak = PEAKS[model]
    env["peak"] = {"device_kind": "GPU", "device": model, "measured_utc": measured, "tf32_enabled": True,
                   "conv_float32_gflops": 0.7 * PEAKS[model], "conv_float32_median_gflops": 0.68 * PEAKS[model],
                   "backend": "tensorflow", "source": "measured in this run",
                   "matmul": {name: {"precision": name, "gflops": peak * k, "samples": 6}
                              for name, k in (("float32", 1), ("tf32", 2), ("bfloat16", 4))}}
    if cpu_peak:
        samples = _spread(rng, 250.0, 6)
        env["cpu_peak"] = {"device_kind": "CPU", "device": "AMD EPYC", "measured_utc": measured,
                           "matmul": {"float32": {"precision": "float32", "gflops": max(samples),
                                                  "samples_gflops": samples}}}
    out["devices"] = {**out["devices"], "kind": "GPU", "count": 1, "replicas": 1, "names": ["/device:GPU:0"],
                      "used": [{"index": 0, "kind": "GPU", "model": model, "name": "/device:GPU:0"}]}
    epochs = _spread(rng, 20.0, 5)
    out["train"].update(epoch_seconds=epochs, first_epoch_seconds=epochs[0], epochs=5,
                        steady_epoch_seconds=float(np.mean(epochs[1:])), wall_seconds_at_epoch=list(np.cumsum(epochs)))
    runtimes = []
    for row in out["inference"]["runtimes"]:
        on_cpu = row["runtime"] in CPU_RUNTIMES
        row = {**row, "device": "CPU" if on_cpu else "GPU", "status": "ok", "reason": "",
               "inference": {**(row.get("inference") or {}), **_latency(rng, 8.0 if on_cpu else 2.0)}}
        runtimes.append(row)
    out["inference"].update(_latency(rng, 2.0), runtimes=runtimes, scenarios=[])
    out["utilisation"] = {**out["utilisation"], "peak": "tf32", "peak_gflops": 2 * peak, "train": shares[0],
                          "inference": shares[1]}
    out["bound"] = gpu_bound(out, input_over_step)
    out["stability"] = {"verdict": "stable", "reasons": [], "device_kind": "GPU", "speed": {"bursts": [
        {"moment": m, "gflops": s[0], "samples_gflops": s} for m, s in
        (("start", _spread(rng, peak, 6)), ("after training", _spread(rng, peak, 6)), ("end", _spread(rng, peak, 6)))]}}
    return out


def slower(record: dict, factor: float, *, rows=None, own: bool = False) -> dict:
    """Every time of the runtime rows named in `rows` (all where None) x factor, rates / factor; with `own`, the
    record's own training and batch-1 figures too."""
    out = json.loads(json.dumps(record))

    def scale(block: dict) -> None:
        block["times_ms"] = [t * factor for t in block["times_ms"]]
        for key in ("mean_ms", "p50_ms", "p99_ms"):
            block[key] *= factor
        block["images_per_second"] /= factor

    for row in out["inference"]["runtimes"]:
        if rows is None or row["runtime"] in rows:
            scale(row["inference"])
    if own:
        scale(out["inference"])
        train = out["train"]
        train["epoch_seconds"] = [e * factor for e in train["epoch_seconds"]]
        train["first_epoch_seconds"] *= factor
        train["steady_epoch_seconds"] *= factor
        train["wall_seconds_at_epoch"] = [w * factor for w in train["wall_seconds_at_epoch"]]
        if train.get("wall_seconds"):
            train["wall_seconds"] *= factor
    return out


def slower_machine(record: dict, factor: float, measured: str = "2026-12-07T09:00:00Z") -> dict:
    """The GPU's peak measured again later and its bursts, each / factor (a power-capped board)."""
    out = json.loads(json.dumps(record))
    out["env"]["peak"]["measured_utc"] = measured
    for kernel in out["env"]["peak"]["matmul"].values():
        kernel["gflops"] /= factor
    for burst in out["stability"]["speed"]["bursts"]:
        burst["samples_gflops"] = [g / factor for g in burst["samples_gflops"]]
        burst["gflops"] /= factor
    return out


def gpu_bound(record: dict, input_over_step: float, host_threads: int = 16) -> dict:
    """The bound block a GPU host writes (its input and step overlap: shared_cores False), the slower stage a few
    per cent above the steady rate of the record's epochs, the input on one core a quarter of all cores' rate x 4."""
    from l40sbench.core import bound

    steady = record["train"]["batch_size"] * 4 / record["train"]["steady_epoch_seconds"]  # any images per epoch
    slower = steady * 1.03
    step, feed = (slower, slower * input_over_step) if input_over_step >= 1 else (slower / input_over_step, slower)
    return {"measured": True, "input_path": "files", "input_threads": host_threads, "host_threads": host_threads,
            "input_images_per_second": feed, "step_images_per_second": step, "steady_images_per_second": steady,
            "steady_from": "the steady epochs (2..N)", **bound.verdict(feed, step, steady, shared_cores=False),
            "sizing": bound.sizing(feed / host_threads, feed, host_threads, step), "rule": bound.RULE}
