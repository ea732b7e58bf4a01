"""Telemetry: the sampling, the energy arithmetic (counter wrap, power integration), NVML through a stand-in
module, RAPL on a powercap tree written in a temporary folder; the real NVML path where a GPU is present."""

import time
from types import SimpleNamespace

import pytest

from l40sbench.backends.telemetry import nvml_source, rapl_source
from l40sbench.core.telemetry import (
    CounterTotal,
    Reading,
    Sampler,
    Source,
    counter_energy,
    integrate_power,
    line,
    phase_summary,
    throttle_reasons,
)


def test_a_counter_that_wraps_between_two_readings():
    wrap = 262143.328850  # J: a RAPL package's max_energy_range_uj / 1e6
    assert counter_energy([100.0, 150.0, 250.0]) == pytest.approx(150.0)
    assert counter_energy([wrap - 10.0, 5.0, 20.0], wrap) == pytest.approx(30.0)
    total = CounterTotal([100.0, 50.0])
    assert total.update([90.0, 40.0]) == 0.0
    assert total.update([5.0, 45.0]) == pytest.approx(15.0 + 5.0)  # the first zone wrapped at 100
    assert total.update([10.0, 2.0]) == pytest.approx(20.0 + 5.0 + 7.0)  # the second at 50


def test_power_integrates_by_trapezoids():
    assert integrate_power([0.0, 1.0, 3.0], [100.0, 200.0, 200.0]) == pytest.approx(150.0 + 400.0)


def test_a_phase_summary_from_the_counter():
    readings = [Reading(0.0, power_w=300.0, energy_j=1000.0, clock_mhz=1980.0, temperature_c=60.0),
                Reading(1.0, power_w=320.0, energy_j=1310.0, clock_mhz=1410.0, temperature_c=71.0,
                        throttle=("power cap",)),
                Reading(2.0, power_w=310.0, energy_j=1620.0, clock_mhz=1800.0, temperature_c=70.0)]
    got = phase_summary(readings, images=62)
    assert got["energy_j"] == pytest.approx(620.0) and got["energy_basis"] == "the device's energy counter"
    assert got["j_per_image"] == pytest.approx(10.0)
    assert got["images_per_kwh"] == pytest.approx(3.6e6 / 10.0)
    assert got["power_w_mean"] == pytest.approx(310.0) and got["power_w_max"] == 320.0
    assert got["clock_mhz"] == [1410.0, 1980.0] and got["temperature_c"] == [60.0, 71.0]
    assert got["throttle"] == ["power cap"]
    assert throttle_reasons({"training": got}) == ["the device throttled during training: power cap"]
    assert "THROTTLED: power cap" in line({"source": "nvml", "phases": {"training": got}})


def test_a_phase_without_a_counter_integrates_power_and_a_short_one_says_why():
    got = phase_summary([Reading(0.0, power_w=100.0), Reading(2.0, power_w=100.0)], images=4)
    assert got["energy_j"] == pytest.approx(200.0) and "integrated" in got["energy_basis"]
    short = phase_summary([Reading(0.0, power_w=100.0)], images=4)
    assert short["energy"] == "unavailable" and "fewer than two readings" in short["reason"]


def test_the_sampler_reads_on_its_thread_and_survives_a_failing_reader():
    counter = iter(range(10_000))
    sampler = Sampler(Source("fake", lambda: {"energy_j": float(next(counter))}), interval=0.01)
    sampler.start()
    time.sleep(0.1)
    readings = sampler.stop()
    assert len(readings) >= 3 and [r.energy_j for r in readings] == sorted(r.energy_j for r in readings)

    def broken():
        raise OSError("gone")

    failing = Sampler(Source("fake", broken), interval=0.01)
    failing.start()
    assert failing.stop() == [] and failing.error == "OSError: gone"


def _fake_nvml(throttled: bool):
    handle = object()
    return SimpleNamespace(
        nvmlInit=lambda: None, nvmlDeviceGetCount=lambda: 2, nvmlDeviceGetHandleByIndex=lambda i: handle,
        nvmlDeviceGetPowerUsage=lambda h: 250_000, nvmlDeviceGetTotalEnergyConsumption=lambda h: 5_000_000,
        nvmlDeviceGetClockInfo=lambda h, kind: 1500 if kind == 0 else 2600, NVML_CLOCK_SM=0, NVML_CLOCK_MEM=1,
        nvmlDeviceGetTemperature=lambda h, kind: 65, NVML_TEMPERATURE_GPU=0,
        nvmlDeviceGetUtilizationRates=lambda h: SimpleNamespace(gpu=90),
        nvmlDeviceGetCurrentClocksEventReasons=lambda h: 0x4 if throttled else 0x1,
        nvmlClocksEventReasonSwPowerCap=0x4, nvmlClocksEventReasonHwSlowdown=0x8,
        nvmlSystemGetDriverVersion=lambda: b"580.65", nvmlDeviceGetEnforcedPowerLimit=lambda h: 700_000,
        nvmlDeviceGetApplicationsClock=lambda h, kind: 1980 if kind == 0 else 2619,
    )


def test_nvml_readings_sum_the_gpus_and_name_the_throttle():
    source, why = nvml_source(_fake_nvml(throttled=True))
    assert why == "" and source.name == "nvml"
    reading = source.read()
    assert reading["power_w"] == pytest.approx(500.0) and reading["energy_j"] == pytest.approx(10_000.0)
    assert reading["clock_mhz"] == 1500.0 and reading["throttle"] == ("power cap",)
    assert source.facts == {"driver": "580.65", "power_limit_w": [700.0, 700.0],
                            "application_clocks_mhz": [[1980, 2619], [1980, 2619]]}
    assert nvml_source(_fake_nvml(throttled=False))[0].read()["throttle"] == ()  # idle is not throttling


def test_rapl_on_a_powercap_tree(tmp_path):
    zone = tmp_path / "powercap" / "intel-rapl:0"
    (zone / "intel-rapl:0:0").mkdir(parents=True)  # a subzone (the cores) is inside the package: not summed
    (zone / "max_energy_range_uj").write_text("1000000\n")
    (zone / "energy_uj").write_text("999000\n")
    cpu = tmp_path / "cpu" / "cpu0" / "cpufreq"
    cpu.mkdir(parents=True)
    (cpu / "scaling_cur_freq").write_text("2400000\n")
    source, why = rapl_source(tmp_path / "powercap", tmp_path / "cpu")
    assert why == "" and source.facts == {"rapl_zones": ["intel-rapl:0"]}
    first = source.read()
    (zone / "energy_uj").write_text("4000\n")  # wrapped: 1000 + 4000 uJ since
    second = source.read()
    assert second["energy_j"] - first["energy_j"] == pytest.approx(0.005)
    assert second["clock_mhz"] == pytest.approx(2400.0)


def test_no_energy_source_says_why(tmp_path):
    source, why = rapl_source(tmp_path / "none", tmp_path)
    assert source is None and "no RAPL zone" in why
    zone = tmp_path / "powercap" / "intel-rapl:0"
    zone.mkdir(parents=True)
    source, why = rapl_source(tmp_path / "powercap", tmp_path)
    assert source is None and "not readable" in why
    assert line({"energy": "unavailable", "reason": why}).startswith("energy: unavailable (RAPL")


def _has_nvidia_gpu() -> bool:
    return nvml_source()[0] is not None


@pytest.mark.skipif(not _has_nvidia_gpu(), reason="no NVIDIA GPU (NVML) on this machine")
def test_the_real_nvml_path():
    source, _ = nvml_source()
    sampler = Sampler(source, interval=0.05)
    sampler.start()
    time.sleep(0.3)
    summary = phase_summary(sampler.stop(), images=10)
    assert summary["power_w_mean"] > 0 and summary["energy_j"] >= 0 and summary["clock_mhz"][1] > 0
    assert source.facts["driver"] and source.facts["power_limit_w"][0] > 0


def test_a_sweep_row_carries_what_the_device_did_during_its_steps_and_throttling_makes_the_sweep_unstable(
        monkeypatch):
    """A sweep configuration's timed steps are a phase as a run's training is: sampled from the telemetry source
    (a stand-in that reads a rising energy counter and a power cap here), summed per image, and a throttled row
    marks the sweep's stability with the row's name."""
    from l40sbench.backends import telemetry as readers
    from l40sbench.synthetic.job import Job, StepSettings
    from l40sbench.synthetic.sweep import sweep_stability
    from l40sbench.synthetic.worker import _timed_row

    counter = {"j": 0.0}

    def read():
        counter["j"] += 5.0
        return {"power_w": 250.0, "energy_j": counter["j"], "clock_mhz": 1500.0, "throttle": ("power cap",)}

    def timed_row(step):
        job = Job("lenet", 2, 1, StepSettings(warmup_steps=1, steps=3))
        return _timed_row(job, step, lambda *_: None, gflops=0.01, replicas=1, workers=1, kind="CPU",
                          peak_memory_mb=lambda: None, started=time.perf_counter(), compiled="a stand-in step")

    monkeypatch.setattr(readers, "source", lambda: (Source("stand-in", read), ""))
    row = timed_row(lambda: time.sleep(0.02))
    steps = row.telemetry["phases"]["steps"]
    assert row.telemetry["source"] == "stand-in" and steps["energy_j"] > 0 and steps["throttle"] == ["power cap"]
    assert steps["j_per_image"] == pytest.approx(steps["energy_j"] / (2 * 3))
    stability = sweep_stability([row])
    assert stability["verdict"] == "unstable"
    assert "the device throttled during lenet b2 x1 steps: power cap" in stability["reasons"]
    monkeypatch.setattr(readers, "source", lambda: (None, "no energy source here"))
    quiet = timed_row(lambda: None)
    assert quiet.telemetry == {"energy": "unavailable", "reason": "no energy source here"}
    assert not any("throttled" in reason for reason in sweep_stability([quiet])["reasons"])
