"""compare never hides a regression behind "another machine": a real tiny run's record with its figures scaled.

The record's samples are replaced by steady seeded readings first (a quiet host's few per cent), so that each
verdict rests on what the test scaled and not on how busy CI's host was while the tiny run was made.
"""

import json

import numpy as np
import pytest

from l40sbench.report import compare
from tests.conftest import cli_in_process
from tests.test_compare import scaled

LATER = "2026-12-07T09:00:00Z"  # a peak measured again, at another time than the record's own


def steady(record: dict) -> dict:
    """The record with seeded readings: 5 epochs of about 2 s, 30 calls of about 10 ms, float32 and bfloat16 matmul
    peaks of 250 and 500 GFLOP/s, three guard bursts of six samples about 250 GFLOP/s each (3 % spread), a stable
    verdict, utilisation of a compute-bound run, no runtime rows or LoadGen tests."""
    rng = np.random.default_rng(0)
    out = json.loads(json.dumps(record))

    def spread(value: float, n: int) -> list[float]:
        return [float(value * f) for f in 1 + 0.03 * rng.uniform(-1, 1, n)]

    epochs = spread(2000.0, 5)
    out["train"].update(epoch_seconds=[e / 1000 for e in epochs], first_epoch_seconds=epochs[0] / 1000,
                        steady_epoch_seconds=float(np.mean(epochs[1:])) / 1000, epochs=5)
    out["train"]["wall_seconds_at_epoch"] = list(np.cumsum(out["train"]["epoch_seconds"]))
    times = spread(10.0, 30)
    out["inference"].update(times_ms=times, mean_ms=float(np.mean(times)), p50_ms=float(np.median(times)),
                            p99_ms=max(times), images_per_second=1000 / float(np.mean(times)), runtimes=[],
                            scenarios=[])
    # the peaks too: a host without AVX512-BF16 measures no bfloat16 one, and the bfloat16 case needs it
    out["env"]["peak"]["matmul"] = {
        name: {"precision": name, "gflops": gflops, "median_gflops": 0.97 * gflops, "matmul_n": 1024, "samples": 6,
               "calls_per_sample": 6} for name, gflops in (("float32", 250.0), ("bfloat16", 500.0))}
    # compute-bound, as the full-size run is here (vgg19 at 224 px: training 48 %, inference 95 % of the peak),
    # so that a slower machine's peak governs its figures (report.compare.GOVERNS)
    out["utilisation"] = {**out["utilisation"], "train": 0.48, "inference": 0.95}
    out["stability"] = {"verdict": "stable", "reasons": [], "speed": {"bursts": [
        {"moment": moment, "gflops": samples[0], "samples_gflops": samples}
        for moment, samples in (("start", spread(250.0, 6)), ("after training", spread(250.0, 6)),
                                ("end", spread(250.0, 6)))]}}
    return out


def latency(record: dict, factor: float) -> dict:
    """Every batch-1 inference time x factor (training untouched)."""
    out = json.loads(json.dumps(record))
    inference = out["inference"]
    inference["times_ms"] = [t * factor for t in inference["times_ms"]]
    for key in ("mean_ms", "p50_ms", "p90_ms", "p99_ms", "min_ms", "max_ms", "std_ms"):
        if inference.get(key) is not None:
            inference[key] *= factor
    inference["images_per_second"] /= factor
    return out


def bursts(record: dict, factor: float) -> dict:
    out = json.loads(json.dumps(record))
    for burst in out["stability"]["speed"]["bursts"]:
        burst["samples_gflops"] = [g * factor for g in burst["samples_gflops"]]
        burst["gflops"] *= factor
    return out


def remeasured(record: dict, factor: float, kernels=("float32", "bfloat16")) -> dict:
    """The peak measured again (at LATER), these kernels' rates x factor."""
    out = json.loads(json.dumps(record))
    out["env"]["peak"]["measured_utc"] = LATER
    for name in kernels:
        out["env"]["peak"]["matmul"][name]["gflops"] *= factor
    return out


@pytest.fixture(scope="module")
def base(tiny_runs):
    return steady(json.loads((tiny_runs["vgg19"] / "result.json").read_text()))


def _compare(tmp_path, baseline: dict, new: dict, *flags: str):
    paths = []
    for name, record in (("baseline", baseline), ("new", new)):
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps(record))
    return cli_in_process("compare", *paths, *flags)


def _verdict(stdout: str, figure: str) -> str:
    return next(line for line in stdout.splitlines() if line.startswith("classify vgg19") and f"| {figure} " in line)


def test_noise_on_a_busier_host_passes_and_says_the_host_was_slower(base, tmp_path):
    result = _compare(tmp_path, base, bursts(latency(base, 1.05), 0.88))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "the host was slower during the new run" in result.stdout and "run both again" in result.stdout
    assert "new machine" not in result.stdout


@pytest.mark.parametrize("burst_factor", [0.88, 0.905, 1.0])
def test_a_model_2_4x_slower_regresses_whatever_the_bursts_did(base, burst_factor, tmp_path):
    result = _compare(tmp_path, base, bursts(latency(base, 2.4), burst_factor))
    assert result.returncode == 1, result.stdout + result.stderr
    assert _verdict(result.stdout, "inference ms/image").split("|")[-1].strip().startswith("WORSE")
    assert "REGRESSION" in result.stdout.splitlines()[-1] and "inference ms/image" in result.stdout.splitlines()[-1]
    assert "new machine" not in result.stdout


def _half_as_fast(record: dict, inference: float = 2.0) -> dict:
    return latency(bursts(remeasured(scaled(record, 2.0), 0.5), 0.5), inference / 2.0)


def test_a_machine_half_as_fast_passes_and_is_named_with_its_evidence(base, tmp_path):
    result = _compare(tmp_path, base, _half_as_fast(base))
    assert result.returncode == 0, result.stdout + result.stderr
    machine = next(line for line in result.stdout.splitlines() if line.startswith("new machine"))
    measured = base["env"]["peak"]["measured_utc"]
    assert machine.startswith("new machine 2.00x slower: the float32 matmul peak ") and f"(measured {measured})" in machine
    assert f"(measured {LATER})" in machine and "bursts, median 25" in machine and "-> 12" in machine
    assert "wholly beyond the stability limit 1.4x" in machine
    assert "explained by the machine (2.00x)" in _verdict(result.stdout, "inference ms/image")
    closing = result.stdout.splitlines()[-2]
    assert closing.startswith("judged: ") and " of them explained by the machine" in closing
    assert "no regression" in result.stdout.splitlines()[-1]


def test_the_same_slower_machine_does_not_explain_a_latency_4_8x(base, tmp_path):
    result = _compare(tmp_path, base, _half_as_fast(base, inference=4.8))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "new machine 2.00x slower" in result.stdout
    assert "the machine (2.00x) does not explain it" in _verdict(result.stdout, "inference ms/image")
    assert "explained by the machine" in _verdict(result.stdout, "epoch s (clock mean)")


def test_a_halved_peak_with_unchanged_bursts_is_not_attributed(base, tmp_path):
    result = _compare(tmp_path, base, remeasured(scaled(base, 2.0), 0.5))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "not attributed to another machine" in result.stdout and "not wholly beyond" in result.stdout


def test_a_peak_read_twice_is_not_evidence_of_another_machine(base, tmp_path):
    copied = bursts(scaled(base, 2.0), 0.5)
    for kernel in copied["env"]["peak"]["matmul"].values():  # the peak changed, its measurement time did not
        kernel["gflops"] /= 2
    result = _compare(tmp_path, base, copied)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "are not two separate measurements" in result.stdout


def test_a_bfloat16_run_on_a_machine_with_half_the_bfloat16_peak_is_the_machines_doing(base, tmp_path):
    """Its bfloat16 peak alone measured again at half; float32's peak and the bursts unchanged; times x2."""
    bf16 = json.loads(json.dumps(base))
    bf16["config"]["precision"] = "mixed_bfloat16"
    slower = remeasured(scaled(bf16, 2.0), 0.5, kernels=("bfloat16",))
    result = compare.compare([bf16], [slower])
    (machine,) = result.machines
    assert machine.startswith("new machine 2.00x slower: the bfloat16 matmul peak"), machine
    assert "the float32 peaks agree" in machine and "within the stability limit" in machine
    assert not result.regressions and result.counts()[compare.EXPLAINED] >= 3
    assert compare.compare([bf16], [slower], raw=True).regressions  # --raw: nothing explained
    # only float32's peak measured again at half: a bfloat16 run's machine did not change, the times did
    float32_only = remeasured(scaled(bf16, 2.0), 0.5, kernels=("float32",))
    assert compare.compare([bf16], [float32_only]).regressions


def test_different_gpu_models_are_not_comparable_and_exit_3(base, tmp_path):
    def on(model: str, record: dict) -> dict:
        out = json.loads(json.dumps(record))
        out["env"]["devices"] = [{"name": "cuda:0", "type": "GPU", "model": model}]
        out["env"]["peak"] = {**out["env"]["peak"], "device_kind": "GPU"}
        return out

    result = _compare(tmp_path, on("NVIDIA L40S", base), on("NVIDIA H200", scaled(base, 5.0)))
    assert result.returncode == 3, result.stdout + result.stderr
    assert "not comparable: the devices differ (GPU NVIDIA L40S -> GPU NVIDIA H200)" in result.stdout
    assert "WORSE" not in result.stdout and "NOT COMPARABLE" in result.stdout.splitlines()[-1]
    assert "shown (devices differ)" in result.stdout.splitlines()[-2]
