"""compare on records shaped like a GPU host's (tests/gpu_records.py: L40S and H100 hosts, 8 boards and 1, MIG):
each row is keyed by and judged on the device it ran on; a GPU's peak never explains a CPU row; a precision's
peak is set only against the same precision's; a peak explains only the work it governs; rows on different
devices are shown, not judged, failures too; and serial samples of equal means are rarely called worse."""

import json

import numpy as np
import pytest

from l40sbench.report import compare
from tests.gpu_records import CPU_RUNTIMES, H100, L40S, MIG, gpu_host, slower, slower_machine
from tests.test_compare import scaled
from tests.test_compare_machines import _compare, remeasured, steady
from tests.test_intervals import ar1


@pytest.fixture(scope="module")
def tiny(tiny_runs):
    return json.loads((tiny_runs["vgg19"] / "result.json").read_text())


def _rows(result, runtime: str):
    return [r for r in result.rows if r.line.startswith(f"classify on {runtime} ")]


@pytest.mark.parametrize("boards", [4, 1])
def test_runtime_rows_2x_slower_on_a_host_with_other_boards_are_matched_and_regress(tiny, boards, tmp_path):
    """8 GPUs against 4, or CUDA_VISIBLE_DEVICES=0 on the same host: each runtime serves on one device."""
    base, new = gpu_host(tiny, L40S, 8), slower(gpu_host(tiny, L40S, boards, seed=1), 2.0)
    result = compare.compare([base], [new])
    assert not result.only_baseline and not result.only_new
    for runtime in ("savedmodel", *CPU_RUNTIMES):
        mean = next(r for r in _rows(result, runtime) if r.figure == "inference ms/image")
        assert mean.regressed and mean.ratio == pytest.approx(2.0, rel=0.1), mean
    assert _compare(tmp_path, base, new).returncode == 1


def test_a_gpus_lower_peak_explains_its_compute_bound_training_but_never_the_cpu_runtimes(tiny):
    """The board 1.3x slower (peak and bursts); onnxruntime and OpenVINO, on the host's CPU, 25 % slower."""
    base = gpu_host(tiny, L40S, 1)
    new = slower(slower_machine(gpu_host(tiny, L40S, 1, seed=1), 1.3), 1.25, rows=("onnxruntime", "openvino"))
    result = compare.compare([base], [new])
    assert any(m.startswith("new machine 1.30x slower") for m in result.machines), result.machines
    for runtime in ("onnxruntime", "openvino"):
        mean = next(r for r in _rows(result, runtime) if r.figure == "inference ms/image")
        assert mean.regressed and "explained" not in mean.verdict, mean
    # the machine case keeps working: training at 60 % of the GPU's peak, 1.3x slower on the board 1.3x slower
    epochs = slower_machine(gpu_host(tiny, L40S, 1, seed=1), 1.3)
    epochs["train"]["epoch_seconds"] = [e * 1.3 for e in epochs["train"]["epoch_seconds"]]
    epochs["train"]["steady_epoch_seconds"] *= 1.3
    found = compare.compare([base], [epochs])
    row = next(r for r in found.rows if r.figure == "epoch s (clock mean)" and r.line.startswith("classify vgg19"))
    assert row.basis == compare.EXPLAINED and not found.regressions, row


def test_a_batch_1_latency_on_a_gpu_is_not_excused_by_a_lower_matmul_peak(tiny, tmp_path):
    """At 5 % of the peak, a latency is launches and memory traffic: a peak 1.25x lower explains none of it."""
    base = gpu_host(tiny, H100, 1)
    new = slower(slower_machine(gpu_host(tiny, H100, 1, seed=1), 1.25), 1.2, rows=(), own=True)
    new["train"] = base["train"]  # training as before; only the batch-1 probe 20 % slower
    result = _compare(tmp_path, base, new)
    assert result.returncode == 1, result.stdout
    line = next(line for line in result.stdout.splitlines() if line.startswith("classify vgg19")
                and "| inference ms/image " in line)
    assert "does not explain it: its work ran at 5 % of the peak, below the 25 %" in line


def test_a_bfloat16_run_is_not_excused_by_a_float32_fallback_on_a_cpu_without_a_bfloat16_peak(tiny_runs, tmp_path):
    base = steady(json.loads((tiny_runs["vgg19"] / "result.json").read_text()))
    base["config"]["precision"] = "mixed_bfloat16"
    base["utilisation"] = {**base["utilisation"], "train": 0.6, "inference": 0.6}
    new = remeasured(scaled(base, 2.0), 0.54, kernels=("float32",))
    del new["env"]["peak"]["matmul"]["bfloat16"]  # no AVX512-BF16: no bfloat16 peak measured
    result = _compare(tmp_path, base, new)
    assert result.returncode == 1, result.stdout
    assert "new machine" not in result.stdout
    assert "the new record measured no bfloat16 peak, and a precision's peak is set only against the same" \
        in result.stdout


def test_a_runtime_ok_on_an_l40s_and_failed_on_an_h100_is_shown_not_judged_and_exits_3(tiny, tmp_path):
    new = gpu_host(tiny, H100, 8, seed=1)
    failed = next(row for row in new["inference"]["runtimes"] if row["runtime"] == "savedmodel")
    failed.update(status="error", reason="RuntimeError: CUDA out of memory", inference=None)
    result = _compare(tmp_path, gpu_host(tiny, L40S, 8), new)
    assert result.returncode == 3, result.stdout
    assert "WORSE" not in result.stdout
    status = next(line for line in result.stdout.splitlines() if "classify on savedmodel" in line and "| status " in line)
    assert "ok -> error: shown, not judged (the devices differ)" in status
    last = result.stdout.splitlines()[-1]
    assert "NOT COMPARABLE" in last and "figure(s) judged ran on the same kind of device on both sides" in last
    assert "none judged" not in result.stdout
    # the CPU runtimes served on both hosts' CPUs are judged there
    assert any("classify on onnxruntime" in line and "within noise" in line or "same" in line
               for line in result.stdout.splitlines())


def test_a_mig_instance_against_its_whole_board_is_not_comparable(tiny, tmp_path):
    result = _compare(tmp_path, gpu_host(tiny, H100, 1), slower(gpu_host(tiny, MIG, 1, seed=1), 6.0, rows=("savedmodel",), own=True))
    assert result.returncode == 3, result.stdout
    assert f"not comparable: the devices differ (GPU {H100} -> GPU {MIG})" in result.stdout


def test_serial_samples_of_equal_means_are_rarely_called_a_regression_at_tolerance_0(tiny_runs):
    """40 same-process pairs: 100 batch-1 latencies each, AR(1) at rho 0.7 around the same mean."""
    base = steady(json.loads((tiny_runs["vgg19"] / "result.json").read_text()))
    called = 0
    for seed in range(40):
        rng = np.random.default_rng(seed)
        pair = []
        for _ in range(2):
            record = json.loads(json.dumps(base))
            times = [float(t) for t in ar1(rng, 100, 0.7)]
            record["inference"].update(times_ms=times, mean_ms=float(np.mean(times)), images_per_second=1000 / float(
                np.mean(times)), p50_ms=float(np.median(times)), p99_ms=max(times))
            pair.append(record)
        called += bool(compare.compare([pair[0]], [pair[1]], tolerance=0.0).regressions)
    assert called <= 2  # 5 %


def test_a_gpu_run_that_times_runtimes_on_the_cpu_records_the_cpus_own_peak():
    from l40sbench.peak.host import with_cpu_peak

    gpu = {"peak": {"device_kind": "GPU", "matmul": {"float32": {"gflops": 90e3}}}, "cpu": "AMD EPYC"}
    env = with_cpu_peak(gpu, ["GPU", "CPU"])
    cpu = env["cpu_peak"]
    assert cpu["device"] == "AMD EPYC" and cpu["device_kind"] == "CPU" and cpu["measured_utc"]
    samples = cpu["matmul"]["float32"]["samples_gflops"]
    assert len(samples) == 6 and cpu["matmul"]["float32"]["gflops"] == max(samples) > 0
    assert with_cpu_peak(gpu, ["GPU"]) is gpu  # no CPU row: nothing to measure
    on_cpu = {"peak": {"device_kind": "CPU"}}
    assert with_cpu_peak(on_cpu, ["CPU"]) is on_cpu  # a CPU run's own peak is the CPU's
