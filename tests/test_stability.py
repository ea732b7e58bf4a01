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


def test_burst_rate_on_a_fake_clock():
    class Clock:
        now = 0.0

        def __call__(self):
            return self.now

    clock = Clock()

    def call():
        clock.now += 0.01  # 2 x 100^3 flop in 10 ms: 0.2 GFLOP/s

    got = burst(call, 100, "start", samples=3, sample_seconds=0.05, clock=clock, sleep=lambda s: None)
    assert got.gflops == np.float64(0.2) or abs(got.gflops - 0.2) < 1e-9
    assert len(got.samples_gflops) == 3 and got.moment == "start"


def test_a_throttled_phase_makes_the_run_unstable():
    from l40sbench.core.telemetry import throttle_reasons

    phases = {"training": {"throttle": ["power cap"]}, "inference": {"throttle": []}}
    got = verdict(_bursts(200, 200, 200), {}, throttle_reasons(phases))
    assert got["verdict"] == UNSTABLE and got["reasons"] == ["the device throttled during training: power cap"]
