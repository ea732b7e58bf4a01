"""core.stability's rules on known samples, and the guard's burst on a fake clock."""

import numpy as np

from l40sbench.core.stability import (
    STABLE,
    UNSTABLE,
    line,
    robust_cv,
    split_two_speeds,
    verdict,
)
from l40sbench.peak.burst import burst

# The README's main command on a slow day (issue text): epochs alternating between two speeds.
ALTERNATING = [72, 121, 121, 68, 119, 65, 68, 123, 116, 65]


def _bursts(*rates):
    return [{"moment": m, "gflops": r} for m, r in zip(("start", "after training", "end"), rates)]


def test_two_speeds_of_the_alternating_epochs():
    split = split_two_speeds(ALTERNATING[1:])
    assert split is not None and (split.lower_n, split.upper_n) == (4, 5)
    assert 65 <= split.lower_median <= 68 and 116 <= split.upper_median <= 121
    got = verdict(_bursts(480, 470, 475), {"steady epochs": (ALTERNATING[1:], " s")})
    assert got["verdict"] == UNSTABLE
    assert got["reasons"] == ["steady epochs split into two speeds: 4 at 66.5 s and 5 at 121 s"]


def test_a_tail_of_slow_calls_is_not_a_second_speed():
    rng = np.random.default_rng(0)
    latencies = list(rng.normal(10.0, 0.3, 130)) + [25, 31, 40, 28, 60, 22, 35, 27, 50]
    assert split_two_speeds(latencies) is None
    assert verdict(_bursts(200, 195, 205), {"latency": (latencies, " ms")})["verdict"] == STABLE


def test_a_quiet_run_is_stable_and_says_what_it_checked():
    rng = np.random.default_rng(1)
    got = verdict(_bursts(200, 190, 210), {"steady epochs": (list(rng.normal(60, 1, 9)), " s"),
                                           "latency": ([5.0, 5.1], " ms")})
    assert got["verdict"] == STABLE and got["reasons"] == []
    assert got["samples"]["latency"] == {"n": 2, "checked": False}
    assert "too few samples to check latency (n 2)" in line(got)


def test_the_machine_slowing_between_bursts_is_named():
    got = verdict(_bursts(480, 210, 200), {})
    assert got["verdict"] == UNSTABLE
    (reason,) = got["reasons"]
    assert reason.endswith("changed 2.40x within the run: 480 (start), 210 (after training), 200 (end) GFLOP/s")
    assert line(got).startswith("UNSTABLE RUN: the float32 matmul rate changed 2.40x")


def test_dispersion_is_robust_to_one_outlier():
    assert robust_cv([10, 10, 10, 10, 100]) == 0.0
    wide = [5, 9, 14, 20, 26, 33, 40]
    assert robust_cv(wide) > 0.25
    got = verdict([], {"latency": (wide, " ms")})
    assert got["verdict"] == UNSTABLE and "dispersed" in got["reasons"][0]


class FakeClock:
    """A clock that moves only when the fake matmul (or a sleep) moves it."""

    now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_burst_rate_on_a_fake_clock():
    clock = FakeClock()

    def call():
        clock.now += 0.01  # 2 x 100^3 flop in 10 ms: 0.2 GFLOP/s

    got = burst(call, 100, "start", samples=3, sample_seconds=0.05, clock=clock, sleep=lambda s: None)
    assert got.gflops == np.float64(0.2) or abs(got.gflops - 0.2) < 1e-9
    assert len(got.samples_gflops) == 3 and got.moment == "start"
    assert got.form == "3 samples of 50 ms, 0.1 s apart"


def test_the_warm_up_outlasts_a_fresh_process_at_half_speed_and_ends_once_the_machine_reads_its_speed():
    """A fresh process's matmul at half speed for its first 0.9 s (as on a CI host): a burst from its start reads
    the half in every sample; the start's warm-up lasts until a sample reads 0.8 of the peak at this size (or
    1.5 s without a peak), the burst then reads the machine, and its form says how long it warmed."""
    from l40sbench.peak.burst import START_WARM_SECONDS, warm_target

    def fresh(slow_s: float, **warm):
        clock = FakeClock()

        def call():
            clock.now += 0.02 if clock.now < slow_s else 0.01  # 0.1 then 0.2 GFLOP/s at n=100

        return burst(call, 100, "start", clock=clock, sleep=clock.sleep, **warm)

    target = warm_target({"matmul": {"float32": {"gflops": 0.25, "gflops_by_size": {"100": 0.2}}}}, 100)
    assert abs(target - 0.16) < 1e-12
    cold = fresh(0.9)
    until, capped = (fresh(0.9, warm_seconds=START_WARM_SECONDS, warm_target_gflops=target),
                     fresh(0.9, warm_seconds=START_WARM_SECONDS))
    assert cold.gflops < 0.11 and cold.warm_seconds == 0 and cold.warm_target_gflops is None
    for warm in (until, capped):
        assert abs(warm.gflops - 0.2) < 1e-9 and min(warm.samples_gflops) > 0.19, warm
        assert warm.form == f"6 samples of 30 ms, 0.1 s apart, after {warm.warm_seconds:.2f} s of back-to-back calls"
    assert 0.85 <= until.warm_seconds <= 1.0 and until.warm_target_gflops == target  # the half, then one sample
    assert START_WARM_SECONDS <= capped.warm_seconds < START_WARM_SECONDS + 0.1
    quick = fresh(0.0, warm_seconds=START_WARM_SECONDS, warm_target_gflops=target)  # at speed from the start
    assert quick.warm_seconds < 0.1 and abs(quick.gflops - 0.2) < 1e-9
    assert warm_target(None, 100) is None and abs(warm_target({"matmul": {"float32": {"gflops": 1.0}}}, 100) - 0.8) < 1e-12


def _fake_machine(monkeypatch, kind: str, seconds_per_call):
    """jax's kernels replaced by a device of `kind` whose matmul advances a fake clock by
    seconds_per_call(clock.now): the guard's bursts measure it through the clock and sleep it is given."""
    from l40sbench.backends import jax as jax_backend
    from l40sbench.core.devices import Device
    from l40sbench.peak import burst as burst_module

    clock = FakeClock()

    def call():
        clock.now += seconds_per_call(clock.now)

    name = "cuda:0" if kind == "GPU" else "cpu:0"
    monkeypatch.setattr(jax_backend, "devices", lambda: [Device(kind, name, 0, f"a {kind}")])
    monkeypatch.setattr(jax_backend, "matmul", lambda precision: lambda n: call)
    return burst_module.Guard("jax", lambda *_: None, clock=clock, sleep=clock.sleep), clock


def test_on_a_gpu_the_guard_bursts_back_to_back_for_half_a_second_and_says_so(monkeypatch):
    """Gaps let a GPU's boost clock recover; its guard keeps the load on for 0.6 s, the CPU's keeps its gaps."""
    from l40sbench.peak import burst as burst_module

    guard, _ = _fake_machine(monkeypatch, "GPU", lambda now: 0.002)
    measured = guard.check("start")
    assert measured.form == "6 samples of 100 ms, back to back" and measured.matmul_n == 8192
    assert 0.6 <= measured.seconds < 0.8  # six samples of at least 0.1 s of calls, nothing between them
    assert burst_module.form(burst_module.CPU_BURST) == "6 samples of 30 ms, 0.1 s apart"


def test_the_guard_calls_a_host_loaded_after_training_unstable_and_a_quiet_one_stable(monkeypatch):
    """The guard's three bursts on a fake clock: a machine at one speed throughout is stable; one whose matmul
    takes 2.2 times as long from training's end on (neighbours arriving) is unstable, with the rates named."""
    def moments(seconds_per_call):
        guard, clock = _fake_machine(monkeypatch, "CPU", seconds_per_call)
        guard.check("start", warm_seconds=1.5, warm_target_gflops=100.0)
        clock.sleep(60.0)  # training
        guard.check("after training")
        clock.sleep(5.0)  # inference
        guard.check("end")
        return guard.bursts

    quiet = moments(lambda now: 0.01)  # 2 x 1024^3 flop in 10 ms: 214.7 GFLOP/s
    assert [round(b.gflops, 1) for b in quiet] == [214.7] * 3 and quiet[0].warm_seconds < 0.1
    assert verdict([b.to_dict() for b in quiet], {})["verdict"] == STABLE
    loaded = moments(lambda now: 0.01 if now < 60 else 0.022)
    got = verdict([b.to_dict() for b in loaded], {})
    assert got["verdict"] == UNSTABLE
    (reason,) = got["reasons"]
    assert reason.startswith("the float32 matmul rate changed 2.20x within the run: 215 (start), 98 (after training)"), reason


def test_the_power_cap_alone_is_stable_and_a_hardware_slowdown_is_not():
    """A heavy GPU job runs at its software power cap: that is recorded, not judged. A hardware or thermal
    slowdown is a slowdown; so is an older record's `throttle` list naming one."""
    from l40sbench.core.telemetry import throttle_reasons

    capped = {"training": {"throttle": ["power cap"], "power_cap_share": 0.9, "slowdowns": {}},
              "inference": {"throttle": []}}
    assert verdict(_bursts(200, 200, 200), {}, throttle_reasons(capped), kind="GPU")["verdict"] == STABLE
    older = {"training": {"throttle": ["power cap"]}}
    assert throttle_reasons(older) == []
    slowed = {"training": {"throttle": ["hardware thermal slowdown", "power cap"], "power_cap_share": 1.0,
                           "slowdowns": {"hardware thermal slowdown": 0.25}}}
    got = verdict(_bursts(200, 200, 200), {}, throttle_reasons(slowed), kind="GPU")
    assert got["verdict"] == UNSTABLE and got["reasons"] == [
        "the device slowed down during training: hardware thermal slowdown (25 % of samples)"]
    assert throttle_reasons({"steps": {"throttle": ["hardware slowdown"]}}) == [
        "the device slowed down during steps: hardware slowdown"]


def test_a_clock_well_below_the_peaks_is_unstable_and_the_bound_is_named():
    from l40sbench.core.telemetry import clock_reasons

    phases = {"training": {"clock_mhz_median": 1600.0}, "inference": {"clock_mhz_median": 1950.0}}
    assert clock_reasons(phases, 1980.0, None) == [] and clock_reasons(phases, None, 0.15) == []
    (reason,) = clock_reasons(phases, 1980.0, 0.15)
    assert reason.startswith("the device's clock during training (median 1600 MHz) fell 19 % below the 1980 MHz")
    assert "(limit 15 %)" in reason


def test_limits_are_per_kind_of_device_and_say_where_they_came_from():
    """The CPU's limits were measured on these VMs; the GPU's are tighter, and each says it is a guess."""
    cpu, gpu = verdict(_bursts(200, 170, 200), {}), verdict(_bursts(200, 170, 200), {}, kind="GPU")
    assert cpu["verdict"] == STABLE and cpu["device_kind"] == "CPU"  # 1.18x: within a shared VM's 1.4
    assert gpu["verdict"] == UNSTABLE and gpu["device_kind"] == "GPU"  # past a GPU's 1.15
    assert gpu["thresholds"]["speed_change"] == 1.15 and cpu["thresholds"]["speed_change"] == 1.4
    assert all("guess" in why for why in gpu["thresholds_origin"].values())
    assert cpu["thresholds_origin"]["speed_change"].startswith("measured")
    spread = [10.0, 11.5, 9.0, 10.8, 8.6, 11.9, 9.4]  # robust spread about 15 %
    assert verdict([], {"latency": (spread, " ms")})["verdict"] == STABLE
    assert verdict([], {"latency": (spread, " ms")}, kind="GPU")["verdict"] == UNSTABLE
