"""The peak measurement's arithmetic with an injected clock and sync: no framework, no timing."""

from __future__ import annotations

import pytest

from l40sbench.core import utilisation
from l40sbench.core.timing import time_batches
from l40sbench.peak import cache, cpu, measure


class DeviceTensor:
    """What a GPU kernel returns: reading it on the host inside the clock would be a copy."""

    def __init__(self, events):
        self.events = events

    def numpy(self):
        self.events.append("host copy")
        raise AssertionError("the peak must not copy a result to the host")

    __array__ = numpy


class FakeDevice:
    """An asynchronous device: calls queue work, sync waits for it, the clock reads simulated time."""

    def __init__(self, seconds_per_call: dict[int, float] | float):
        self.seconds_per_call = seconds_per_call
        self.events: list[str] = []
        self.now = 0.0
        self.queued = 0.0

    def clock(self) -> float:
        self.events.append("read")
        return self.now

    def sync(self, *output) -> None:
        """sync() drains the queue; sync(output) waits for that output, which here is the last call's."""
        self.events.append("sync on the output" if output else "sync")
        self.now += self.queued
        self.queued = 0.0

    def make_call(self, n: int):
        def call():
            self.events.append("call")
            per = self.seconds_per_call if isinstance(self.seconds_per_call, float) else self.seconds_per_call[n]
            self.queued += per
            return DeviceTensor(self.events)

        return call


def test_a_batch_of_calls_has_one_sync_inside_the_clock_and_no_host_copy():
    device = FakeDevice(0.01)
    seconds = time_batches(device.make_call(0), 4, 2, clock=device.clock, sync=device.sync)
    assert seconds == pytest.approx([0.04, 0.04])
    one_batch = ["sync", "read", "call", "call", "call", "call", "sync on the output", "read"]
    assert device.events == one_batch * 2
    assert "host copy" not in device.events
    with pytest.raises(ValueError, match="calls=0"):
        time_batches(lambda: None, 0, 1)


def test_the_sweep_measures_every_size_and_the_best_one_twice():
    # Rates: 512 -> 100 GFLOP/s, 1024 -> 200, 2048 -> 204 (a small gain does not end the sweep), 4096 -> 150.
    times = {n: measure.matmul_flop(n) / (rate * 1e9) for n, rate in ((512, 100.0), (1024, 200.0), (2048, 204.0),
                                                                    (4096, 150.0))}
    device = FakeDevice(times)
    result = measure.sweep_sizes(device.make_call, (512, 1024, 2048, 4096), "float32", samples=3,
                              clock=device.clock, sync=device.sync)
    assert result.gflops == pytest.approx(204.0) and result.matmul_n == 2048
    assert result.median_gflops == pytest.approx(204.0) and result.samples == 6
    assert set(result.gflops_by_size) == {"512", "1024", "2048", "4096"}
    assert result.gflops_by_size["1024"] == pytest.approx(200.0)
    # calls per sample fill SAMPLE_SECONDS on the CPU: 0.1 s / the 2048 call's time
    assert result.calls_per_sample == round(0.1 / times[2048])
    assert "host copy" not in device.events
    # per size: a tracing call outside any clock, one timed call, then the samples, each batch between two
    # syncs; then the best size's second round of samples
    assert device.events.count("read") == 4 * 2 * (1 + 3) + 2 * 3


def test_a_slow_moment_at_the_best_size_does_not_set_the_peak():
    slow_then_normal = iter([0.5] * 5 + [0.25] * 3)  # tracing, sizing, 3 slow samples; then 3 normal ones
    device = FakeDevice(0.0)

    def call():
        device.queued += next(slow_then_normal)

    result = measure.sweep_sizes(lambda _: call, (1000,), "float32", device_kind="GPU", samples=3,
                              clock=device.clock, sync=device.sync)
    assert result.gflops == pytest.approx(measure.matmul_flop(1000) / 0.25 / 1e9)


def test_the_best_sample_is_the_peak_and_the_median_the_noise():
    device = FakeDevice(0.0)
    durations = iter([9.0, 1.0, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0])  # tracing, sizing, two rounds of three samples

    def call():
        device.queued += next(durations)

    n = 1000
    result = measure.sweep_sizes(lambda _: call, (n,), "float32", device_kind="GPU", samples=3,
                              clock=device.clock, sync=device.sync)
    assert result.calls_per_sample == 1  # one call already outlasts a sample's 0.05 s
    flop = measure.matmul_flop(n) / 1e9
    assert result.gflops == pytest.approx(flop / 1.0)
    assert result.median_gflops == pytest.approx((flop / 4 + flop / 8) / 2)  # rates of 1, 2, 4, 8, 8, 8 s


def test_each_precision_is_divided_by_its_own_peak():
    cpu = {"matmul": {"float32": {"gflops": 480.0}, "bfloat16": {"gflops": 850.0}}}
    assert utilisation.peak_for(cpu, "fp32") == ("float32", 480.0)
    assert utilisation.peak_for(cpu, "mixed_bfloat16") == ("bfloat16", 850.0)
    assert utilisation.peak_for(cpu, "mixed_float16") == ("float32 (no float16 peak on this device)", 480.0)
    gpu = {"matmul": {"float32": {"gflops": 60e3}, "tf32": {"gflops": 400e3}, "float16": {"gflops": 800e3}},
           "tf32_enabled": True}
    assert utilisation.peak_for(gpu, "fp32") == ("tf32", 400e3)
    assert utilisation.peak_for({**gpu, "tf32_enabled": False}, "fp32") == ("float32", 60e3)
    assert utilisation.peak_for(gpu, "mixed_float16") == ("float16", 800e3)
    assert utilisation.peak_for(None, "fp32") == (None, None)
    assert utilisation.utilisation(240.0, 480.0) == pytest.approx(0.5)
    assert utilisation.utilisation(None, 480.0) is None


def test_training_on_n_gpus_is_divided_by_n_peaks_and_inference_by_one():
    """Four GPUs train with four times one GPU's peak; the probe serves on one. Logical CPU devices share one
    CPU, whose measured peak is already the machine's. The sweep and the runs share the arithmetic."""
    from l40sbench.backends.placement import Placement
    from l40sbench.core.devices import Device
    from l40sbench.core.results import TrainResult
    from l40sbench.core.task import Flops
    from l40sbench.core.timing import epoch_times
    from l40sbench.harness.run import utilisation as run_figures

    peak = {"matmul": {"float32": {"gflops": 100e3}}}
    four = Placement(None, tuple(Device("GPU", f"/device:GPU:{i}", i, "H200") for i in range(4)))
    train = TrainResult.from_times(epoch_times([2.0, 1.0, 1.0]), 16, [1.0, 0.9, 0.8], "accuracy", [0.5, 0.6, 0.7])
    flops = Flops(10.0, 3, "3 x forward", "a counter")  # 30 GFLOP a trained image, 10 an inferred one
    got = run_figures(peak, "fp32", flops, train, 4000, 2000.0, four)
    assert got["train_peak_devices"] == 4 and got["train_peak_gflops"] == 400e3
    assert got["train"] == pytest.approx(30.0 * 4000 / 400e3) and got["inference"] == pytest.approx(10.0 * 2000 / 100e3)
    cpu = Placement(None, tuple(Device("CPU", f"/device:CPU:{i}", i, "a CPU") for i in range(2)))
    assert run_figures(peak, "fp32", flops, train, 4000, 2000.0, cpu)["train"] == pytest.approx(30.0 * 4000 / 100e3)
    assert utilisation.peak_over_devices(100.0, "GPU", 8) == 800.0 and utilisation.peak_over_devices(None, "GPU", 8) is None


def test_precisions_follow_the_device():
    assert measure.precisions("CPU", {"avx512f"}) == ("float32",)
    assert measure.precisions("CPU", {"avx512f", "avx512_bf16"}) == ("float32", "bfloat16")
    assert measure.precisions("CPU", {"amx_bf16"}) == ("float32", "bfloat16")
    assert measure.precisions("GPU", set()) == ("float32", "tf32", "bfloat16", "float16")


def _cpuinfo(family: int, model: int, name: str, cores: list[tuple[int, int]], flags="fma avx2 avx512f"):
    return "\n\n".join(
        f"processor\t: {i}\nvendor_id\t: AuthenticAMD\ncpu family\t: {family}\nmodel\t\t: {model}\n"
        f"model name\t: {name}\nphysical id\t: {socket}\ncore id\t\t: {core}\nflags\t\t: {flags}"
        for i, (socket, core) in enumerate(cores)) + "\n"


def test_theoretical_peak_is_cores_times_clock_times_flop_per_cycle(tmp_path):
    freq = tmp_path / "cpuinfo_max_freq"
    freq.write_text("3700000\n")  # kHz
    zen5 = cpu.theoretical_cpu_peak(_cpuinfo(26, 2, "AMD EPYC", [(0, 0), (0, 1)]), cpufreq=freq)
    assert zen5.float32_gflops == pytest.approx(2 * 3.7 * 64)
    assert "2 cores x 3.70 GHz (cpufreq maximum) x 64 FLOP/cycle (Zen 5" in zen5.basis
    # two SMT siblings of one core have one core's FMA units
    siblings = cpu.theoretical_cpu_peak(_cpuinfo(25, 0x11, "AMD EPYC", [(0, 0), (0, 0)]), cpufreq=freq)
    assert siblings.float32_gflops == pytest.approx(1 * 3.7 * 32)
    unknown = cpu.theoretical_cpu_peak(_cpuinfo(26, 2, "AMD EPYC", [(0, 0)]), cpufreq=tmp_path / "absent")
    assert unknown.float32_gflops is None and "no GHz in the model name 'AMD EPYC'" in unknown.basis
    named = cpu.theoretical_cpu_peak(_cpuinfo(23, 0x31, "AMD EPYC 7B12 @ 2.25GHz", [(0, 0)]),
                                      cpufreq=tmp_path / "absent")
    assert named.float32_gflops == pytest.approx(2.25 * 32) and "nominal" in named.basis


def test_a_record_reports_measured_over_theoretical_and_old_records_still_give_rates():
    kernel = measure.KernelPeak("float32", 400.0, 390.0, 2048, 3, 3, {"2048": 400.0})
    record = measure.Peak("CPU", "AMD EPYC", (kernel,), 300.0, 290.0, cpu.Theoretical(500.0, "basis")).to_dict()
    assert record["float32_measured_over_theoretical"] == pytest.approx(0.8)
    assert utilisation.rates({"peak": record}) == (400.0, 300.0)
    from l40sbench.core.migrate import upgrade_env

    assert utilisation.rates(upgrade_env({"calibration": {"matmul_gflops": 207.0, "conv_gflops": 190.0}})) == (207.0, 190.0)
    assert utilisation.rates({}) == (None, None)


def test_a_peak_file_is_measured_once_then_read_where_its_context_matches(tmp_path):
    path = tmp_path / "peak.json"
    here = {"device_kind": "CPU", "device": "AMD EPYC", "host": "vm", "logical_devices": 1,
            "tf32_enabled": True, "intra_op_threads": 0}
    measured = []

    def measure_now(context=here):
        measured.append(context)
        return {"matmul": {"float32": {"gflops": 200.0 + len(measured)}}, **context}

    first = cache.kept_or_measured(path, here, measure_now)
    assert first["source"] == utilisation.SOURCE_MEASURED and len(measured) == 1 and path.is_file()
    again = cache.kept_or_measured(path, here, measure_now)
    assert len(measured) == 1 and again["matmul"] == first["matmul"] and again["measured_utc"] == first["measured_utc"]
    assert again["source"] == f"read from {path}" and "read from" in utilisation.summary({
        **again, "conv_float32_gflops": 1.0})
    # Another thread count, host or device split is another context: measured, and the file kept as it was.
    for change in ({"intra_op_threads": 1}, {"host": "other"}, {"logical_devices": 2}):
        other = {**here, **change}
        fresh = cache.kept_or_measured(path, other, lambda other=other: measure_now(other))
        assert fresh["source"] == utilisation.SOURCE_MEASURED and fresh.items() >= change.items()
    assert len(measured) == 4 and cache.kept_or_measured(path, here, measure_now)["matmul"] == first["matmul"]
    # A file that does not parse is measured around and left alone; no variable, no file.
    path.write_text("{not json")
    assert cache.kept_or_measured(path, here, measure_now)["source"] == utilisation.SOURCE_MEASURED
    assert path.read_text() == "{not json"
    assert cache.kept_or_measured(None, here, measure_now)["source"] == utilisation.SOURCE_MEASURED


def test_jax_names_what_float32_runs_as_on_a_gpu():
    from l40sbench.backends.jax import float32_math

    assert [float32_math("GPU", p) for p in (None, "default", "tensorfloat32", "bfloat16_3x", "highest")] == [
        "tf32", "tf32", "tf32", "bfloat16_3x", "float32"]  # three bfloat16 passes are not TF32
    assert float32_math("CPU", None) == "float32"


def test_torch_records_both_tf32_switches_and_the_peak_mode_sets_both(monkeypatch):
    import sys
    import types

    from l40sbench.backends import torch as torch_backend

    backends = types.SimpleNamespace(cuda=types.SimpleNamespace(matmul=types.SimpleNamespace(allow_tf32=False)),
                                     cudnn=types.SimpleNamespace(allow_tf32=True))  # torch's own defaults
    fake = types.SimpleNamespace(backends=backends, get_num_threads=lambda: 2)
    monkeypatch.setitem(sys.modules, "torch", fake)
    context = torch_backend.peak_context("GPU")
    assert context["tf32_allowed"] == {"matmul": False, "cudnn": True}
    assert context["tf32_enabled"] is True  # cuDNN's convolutions run TF32: divide by the TF32 peak
    with torch_backend.precision_mode("GPU", "float32"):
        assert torch_backend.tf32_flags(fake) == {"matmul": False, "cudnn": False}
    assert torch_backend.tf32_flags(fake) == {"matmul": False, "cudnn": True}


def test_the_peak_keeps_the_clocks_the_device_reported_while_it_was_measured(monkeypatch):
    from l40sbench.backends import telemetry
    from l40sbench.core.telemetry import Source
    from l40sbench.peak.measure import clocks_while_measured

    clocks = iter(range(1500, 3000, 10))
    asked = []
    monkeypatch.setattr(telemetry, "source", lambda used: (asked.append(used), Source("fake", lambda: {
        "clock_mhz": next(clocks)}), "")[1:])
    import time

    with clocks_while_measured(["the run's device"]) as seen:
        time.sleep(0.35)
    low, high = seen["summary"]["clock_mhz"]
    assert 1500 <= low < high and seen["summary"]["samples"] >= 2 and asked == [["the run's device"]]
    assert low <= seen["summary"]["clock_mhz_median"] <= high  # what a timed phase's clock is held against
    monkeypatch.setattr(telemetry, "source", lambda used: (None, "no device reports its clocks"))
    with clocks_while_measured([]) as seen:
        pass
    assert seen["summary"] is None


def test_a_flop_count_that_is_not_positive_gives_no_utilisation_and_says_why(monkeypatch):
    """Several jax releases count a GPU's library calls as -1 after XLA's rewrite: the count is refused, and
    the run's utilisation says unavailable and why rather than dividing a wrong count by the peak."""
    pytest.importorskip("jax")
    from types import SimpleNamespace

    from l40sbench.backends import jax as jax_backend
    from l40sbench.backends.flop_convention import positive_gflops
    from l40sbench.classify.task import ClassifyTask
    from l40sbench.core.results import TrainResult
    from l40sbench.core.timing import epoch_times
    from l40sbench.harness.run import utilisation as run_figures

    assert positive_gflops(2e9, "the jaxpr") == 2.0
    for bad in (-1.0, 0.0, None):
        with pytest.raises(ValueError, match="the jaxpr counted"):
            positive_gflops(bad, "the jaxpr")
    monkeypatch.setattr(jax_backend, "forward_gflops", lambda *args: positive_gflops(-1.0, "the jaxpr"))
    config = SimpleNamespace(backend="jax", image_size=32, trainable_top_layers=None)
    flops = ClassifyTask().flops(SimpleNamespace(config=config, model=None), probe=None)
    assert flops.forward_gflops is None and "utilisation unavailable" in flops.counter and "-1.0" in flops.counter
    train = TrainResult.from_times(epoch_times([2.0, 1.0]), 16, [1.0, 0.9], "accuracy", [0.5, 0.6])
    placement = SimpleNamespace(replicas=1, used=())
    got = run_figures({"matmul": {"float32": {"gflops": 100.0}}}, "fp32", flops, train, 64, 50.0, placement)
    assert got["train"] is None and got["inference"] is None and "utilisation unavailable" in got["flop_counter"]
