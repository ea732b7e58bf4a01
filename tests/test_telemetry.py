"""Telemetry: the sampling, the energy arithmetic (counter wrap, power integration), NVML through a stand-in
module, RAPL on a powercap tree written in a temporary folder; the real NVML path where a GPU is present."""

import threading
import time
from types import SimpleNamespace

import pytest

from l40sbench.backends.telemetry import nvml_source, rapl_source
from l40sbench.core.devices import Device
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
from tests.conftest import REPO


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
    assert got["clock_mhz_median"] == 1800.0
    assert got["throttle"] == ["power cap"] and got["power_cap_share"] == pytest.approx(1 / 3)
    assert got["slowdowns"] == {} and throttle_reasons({"training": got}) == []  # the cap: information
    assert "at the power cap 33 %" in line({"source": "nvml", "phases": {"training": got}})


def test_a_phase_without_a_counter_integrates_power_and_a_short_one_says_why():
    got = phase_summary([Reading(0.0, power_w=100.0), Reading(2.0, power_w=100.0)], images=4)
    assert got["energy_j"] == pytest.approx(200.0) and "integrated" in got["energy_basis"]
    short = phase_summary([Reading(0.0, power_w=100.0)], images=4)
    assert short["energy"] == "unavailable" and "fewer than two readings" in short["reason"]


def test_the_sampler_reads_on_its_thread_and_survives_a_failing_reader():
    counter, taken = iter(range(10_000)), []

    def read():
        taken.append(threading.get_ident())
        return {"energy_j": float(next(counter))}

    sampler = Sampler(Source("fake", read), interval=0.01)
    sampler.start()
    deadline = time.monotonic() + 60  # a hang guard: three readings take 0.02 s on a quiet host
    while len(taken) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    readings = sampler.stop()
    assert threading.get_ident() in taken[:1] and set(taken[1:3]) - {threading.get_ident()}  # then on its thread
    assert len(readings) >= 3 and [r.energy_j for r in readings] == sorted(r.energy_j for r in readings)

    def broken():
        raise OSError("gone")

    failing = Sampler(Source("fake", broken), interval=0.01)
    failing.start()
    assert failing.stop() == [] and failing.error == "OSError: gone"


# Four boards as NVML numbers them (PCI bus order), each with its own power, energy, clock and clock-event reasons:
# board 3 is slowed by hardware, board 1 sits at its power cap; a neighbour's process (pid 1) runs on board 1.
BOARDS = [("GPU-aaaaaaaa-0000-0000-0000-000000000000", "0000:18:00.0", 100, 1000),
          ("GPU-bbbbbbbb-0000-0000-0000-000000000000", "0000:2a:00.0", 200, 1100),
          ("GPU-cccccccc-0000-0000-0000-000000000000", "0000:3b:00.0", 300, 1200),
          ("GPU-dddddddd-0000-0000-0000-000000000000", "0000:9a:00.0", 400, 1300)]
CAP, HW = 0x4, 0x8


def _fake_nvml(names=("NVIDIA H200",) * 4, reasons=(0x1, CAP, 0x1, HW)):
    """An NVML stand-in over BOARDS; a handle is the board's NVML index."""
    return SimpleNamespace(
        nvmlInit=lambda: None, nvmlDeviceGetCount=lambda: len(BOARDS), nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetUUID=lambda h: BOARDS[h][0].encode(), nvmlDeviceGetName=lambda h: names[h],
        nvmlDeviceGetPciInfo=lambda h: SimpleNamespace(busId=BOARDS[h][1].encode()),
        nvmlDeviceGetPowerUsage=lambda h: BOARDS[h][2] * 1000, nvmlDeviceGetTotalEnergyConsumption=lambda h: 10 ** 6 * (h + 1),
        nvmlDeviceGetClockInfo=lambda h, kind: BOARDS[h][3] if kind == 0 else 2600, NVML_CLOCK_SM=0, NVML_CLOCK_MEM=1,
        nvmlDeviceGetTemperature=lambda h, kind: 60 + h, NVML_TEMPERATURE_GPU=0,
        nvmlDeviceGetUtilizationRates=lambda h: SimpleNamespace(gpu=90),
        nvmlDeviceGetCurrentClocksEventReasons=lambda h: reasons[h],
        nvmlClocksEventReasonSwPowerCap=CAP, nvmlClocksEventReasonHwSlowdown=HW,
        nvmlSystemGetDriverVersion=lambda: b"580.65", nvmlDeviceGetEnforcedPowerLimit=lambda h: 700_000,
        nvmlDeviceGetApplicationsClock=lambda h, kind: 1980 if kind == 0 else 2619,
        nvmlDeviceGetComputeRunningProcesses=lambda h: [SimpleNamespace(pid=1, usedGpuMemory=2**30)] if h == 1 else [],
        nvmlDeviceGetGraphicsRunningProcesses=lambda h: [],
    )


def _gpu(index, uuid=None):
    return Device("GPU", f"cuda:{index}", index, "NVIDIA H200", uuid=uuid)


def _phases(found, proc, pids=(), clock=time.perf_counter):
    """Phases over a quiet /proc of its own (a folder holding `pids`): the other workers of a parallel test
    session must not be this test's neighbours."""
    from l40sbench.core.neighbours import Watch
    from l40sbench.core.phases import Phases

    proc.mkdir(exist_ok=True)
    for pid in pids:
        (proc / str(pid)).mkdir()
    return Phases(found, clock=clock, watch=Watch(found[0].processes if found[0] else None, root=proc, cores=2, me=0))


def _hundred_watts():
    """A stand-in device drawing 100 W whose counter is read at the very instant the sampler stamps the reading
    (the sampler calls the clock, then the source, on its own thread): (its Source, the clock for Phases). A
    counter read from its own clock call lagged its stamp by the thread's scheduling on a busy host (0.4 ms,
    0.04 J: a CI failure), which is the host's noise and not what these tests check, the windows' arithmetic."""
    stamped = threading.local()

    def clock() -> float:
        stamped.at = time.perf_counter()
        return stamped.at

    return Source("stand-in", lambda: {"power_w": 100.0, "energy_j": 100.0 * stamped.at}), clock


def test_nvml_reads_only_the_boards_the_run_uses_by_the_drivers_uuid():
    """CUDA's device 0 is NVML's board 2 here (CUDA orders boards unlike PCI): only board 2 is read and
    charged, whatever the other three draw."""
    source, why = nvml_source(_fake_nvml(), used=[_gpu(0, BOARDS[2][0])], environ={})
    assert why == "" and source.name == "nvml"
    reading = source.read()
    assert reading["power_w"] == 300.0 and reading["energy_j"] == 3000.0 and reading["clock_mhz"] == 1200.0
    assert reading["throttle"] == () and [b["uuid"] for b in reading["boards"]] == [BOARDS[2][0]]
    assert [b["uuid"] for b in source.facts["boards"]] == [BOARDS[2][0]] and source.facts["boards_seen"] == 4
    assert source.facts["power_limit_w"] == [700.0]
    two, _ = nvml_source(_fake_nvml(), used=[_gpu(0, BOARDS[2][0]), _gpu(1, BOARDS[0][0])], environ={})
    both = two.read()
    assert both["power_w"] == 400.0 and both["clock_mhz"] == 1000.0 and both["temperature_c"] == 62.0
    assert two.processes() == []  # pid 1 runs on board 1, which this run does not use


def test_a_mig_instance_is_read_on_its_parent_board_and_said_so():
    """A run on a MIG instance of board 1 (MIG mode on boards 1 and 3): NVML has no power or clocks per instance,
    so the parent board is read, and the facts name the instance and say so."""
    instance = "MIG-11111111-2222-3333-4444-555555555555"
    migs = {1: [instance, "MIG-99999999-0000-0000-0000-000000000000"], 3: []}
    nvml = _fake_nvml()
    nvml.nvmlDeviceGetMigMode = lambda h: [int(h in migs), int(h in migs)]
    nvml.nvmlDeviceGetMaxMigDeviceCount = lambda h: 7
    nvml.nvmlDeviceGetMigDeviceHandleByIndex = lambda h, slot: (h, migs[h][slot])
    nvml.nvmlDeviceGetUUID = lambda h: (h[1] if isinstance(h, tuple) else BOARDS[h][0]).encode()
    source, why = nvml_source(nvml, used=[_gpu(0, instance)], environ={})
    assert why == "" and [b["uuid"] for b in source.facts["boards"]] == [BOARDS[1][0]]
    assert source.facts["mig_instances"] == [instance] and "parent boards'" in source.facts["mig_note"]
    assert source.read()["power_w"] == 200.0


def test_a_framework_gpu_is_placed_on_its_board_by_name_and_a_skipped_board_is_named(monkeypatch):
    """TensorFlow skips a board below its compute capability: its GPU:0 and GPU:1 are CUDA devices 1 and 2 here,
    not 0 and 1, and the K80 is the board it skipped."""
    from l40sbench.backends import cuda_driver
    from l40sbench.backends.cuda_driver import CudaDevice
    from l40sbench.backends.device_match import gpu_device, place

    shown = (CudaDevice(0, BOARDS[0][0], "Tesla K80", 11441.0), CudaDevice(1, BOARDS[1][0], "NVIDIA L40S", 46068.0),
             CudaDevice(2, BOARDS[2][0], "NVIDIA L40S", 46068.0))
    monkeypatch.setattr(cuda_driver, "devices", lambda: shown)
    placed, skipped = place(["NVIDIA L40S", "NVIDIA L40S"])
    assert [d.ordinal for d in placed] == [1, 2] and skipped == [shown[0]]
    device = gpu_device(placed[0], 0, "/physical_device:GPU:0", "NVIDIA L40S")
    assert (device.index, device.uuid) == (1, BOARDS[1][0])
    assert place(["NVIDIA H100"])[0] == [shown[0]]  # a name the driver does not give: the next ordinal


@pytest.mark.parametrize("visible, order, expected", [
    ("3,1", None, [3, 1]),  # indices into CUDA's order: PCI order on a host of one model
    ("GPU-cccccccc", None, [2]),  # a UUID prefix, as CUDA takes it
    (None, None, [0, 1]),
    ("2,0", "PCI_BUS_ID", [2, 0]),
])
def test_without_the_drivers_uuid_cuda_visible_devices_is_read_as_cuda_does(visible, order, expected):
    environ = {k: v for k, v in (("CUDA_VISIBLE_DEVICES", visible), ("CUDA_DEVICE_ORDER", order)) if v}
    used = [_gpu(i) for i in range(len(expected))]
    source, why = nvml_source(_fake_nvml(), used=used, environ=environ)
    assert why == ""
    assert [b["uuid"] for b in source.facts["boards"]] == [BOARDS[i][0] for i in expected]


def test_boards_nvml_cannot_place_are_refused_with_the_reason():
    mixed = _fake_nvml(names=("NVIDIA H200", "NVIDIA L40S", "NVIDIA H200", "NVIDIA L40S"))
    source, why = nvml_source(mixed, used=[_gpu(0)], environ={})
    assert source is None and "fastest-first order cannot be read from NVML" in why
    assert nvml_source(mixed, used=[_gpu(0)], environ={"CUDA_DEVICE_ORDER": "PCI_BUS_ID"})[0] is not None
    source, why = nvml_source(_fake_nvml(), used=[_gpu(1)], environ={"CUDA_VISIBLE_DEVICES": "2"})
    assert source is None and "CUDA_VISIBLE_DEVICES leaves 1" in why
    source, why = nvml_source(_fake_nvml(), used=[_gpu(0, "GPU-ffffffff-0000-0000-0000-000000000000")], environ={})
    assert source is None and "not among NVML's boards" in why
    cpu_only = [Device("CPU", "cpu:0", 0, "a CPU")]
    assert nvml_source(_fake_nvml(), used=cpu_only) == (None, "the run uses no GPU")


def test_a_phase_at_the_power_cap_is_stable_with_its_share_and_a_hardware_slowdown_is_not(tmp_path):
    """Boards 1 (at its power cap) and 3 (hardware slowdown) through Phases, as the harness samples them."""
    capped = nvml_source(_fake_nvml(), used=[_gpu(0, BOARDS[1][0])], environ={})
    phases = _phases(capped, tmp_path / "proc")
    with phases.phase("training") as done:
        time.sleep(0.25)
        done["images"] = 10
    summary = phases.summaries["training"]
    assert summary["power_cap_share"] == 1.0 and summary["slowdowns"] == {} and summary["throttle"] == ["power cap"]
    assert throttle_reasons(phases.summaries) == []
    assert "at the power cap 100 %" in line(phases.record())
    slowed = _phases(nvml_source(_fake_nvml(), used=[_gpu(0, BOARDS[3][0]), _gpu(1, BOARDS[0][0])], environ={}),
                     tmp_path / "proc")
    with slowed.phase("inference"):
        time.sleep(0.25)
    summary = slowed.summaries["inference"]
    assert summary["slowdowns"] == {"hardware slowdown": 1.0}
    assert set(summary["boards"]) == {BOARDS[3][0], BOARDS[0][0]}  # each used board's own figures
    assert summary["boards"][BOARDS[0][0]]["slowdowns"] == {} and summary["boards"][BOARDS[0][0]]["power_w_mean"] == 100
    assert slowed.reasons() == ["the device slowed down during inference: hardware slowdown (100 % of samples)"]


def test_a_process_of_another_tenant_on_a_used_board_is_a_neighbour(tmp_path):
    """pid 1 is on board 1: a run on board 1 names it and is unstable; a pid this process cannot see (another
    PID namespace) is recorded, not judged."""
    phases = _phases(nvml_source(_fake_nvml(), used=[_gpu(0, BOARDS[1][0])], environ={}), tmp_path / "a", [1])
    with phases.phase("training"):
        time.sleep(0.15)
    block = phases.record()["neighbours"]["training"]
    assert {p["pid"] for p in block["gpu_processes"]} == {1}
    assert any(r == f"a neighbour during training: pid 1 on GPU {BOARDS[1][0]} (1024 MB)" for r in phases.reasons())
    hidden = _fake_nvml()
    hidden.nvmlDeviceGetComputeRunningProcesses = lambda h: [SimpleNamespace(pid=2**22 + 7, usedGpuMemory=None)]
    phases = _phases(nvml_source(hidden, used=[_gpu(0, BOARDS[0][0])], environ={}), tmp_path / "b")
    with phases.phase("training"):
        time.sleep(0.15)
    block = phases.record()["neighbours"]["training"]
    assert "another PID namespace" in block["gpu_processes_note"] and not block["reasons"]


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


def _cuda_gpus() -> list:
    from l40sbench.backends import cuda_driver

    return [_gpu(d.ordinal, d.uuid) for d in cuda_driver.devices()]


@pytest.mark.skipif(not _cuda_gpus(), reason="no NVIDIA GPU (CUDA driver) on this machine")
def test_the_real_nvml_path():
    source, why = nvml_source(used=_cuda_gpus()[:1])
    assert source is not None, why
    sampler = Sampler(source, interval=0.05)
    sampler.start()
    time.sleep(0.3)
    summary = phase_summary(sampler.stop(), images=10)
    assert summary["power_w_mean"] > 0 and summary["energy_j"] >= 0 and summary["clock_mhz"][1] > 0
    assert source.facts["driver"] and source.facts["power_limit_w"][0] > 0


def test_a_sweep_row_carries_what_the_device_did_during_its_steps_and_a_slowdown_makes_the_sweep_unstable(
        monkeypatch):
    """A sweep configuration's timed steps are a phase as a run's training is: sampled from the telemetry source
    of the row's devices (a stand-in that reads a rising energy counter, a power cap and a hardware slowdown
    here), summed per image, and a row that slowed down marks the sweep's stability with the row's name."""
    from l40sbench.backends import telemetry as readers
    from l40sbench.synthetic.job import Job, StepSettings
    from l40sbench.synthetic.sweep import sweep_stability
    from l40sbench.synthetic.worker import _timed_row

    counter = {"j": 0.0}
    asked = []

    def read():
        counter["j"] += 5.0
        return {"power_w": 250.0, "energy_j": counter["j"], "clock_mhz": 1500.0,
                "throttle": ("hardware slowdown", "power cap")}

    def source(used):
        asked.append(used)
        return Source("stand-in", read), ""

    cpu = [Device("CPU", "/device:CPU:0", 0, "a CPU")]

    def timed_row(step):
        job = Job("lenet", 2, 1, StepSettings(warmup_steps=1, steps=3))
        return _timed_row(job, step, lambda *_: None, gflops=0.01, replicas=1, workers=1, used=cpu,
                          peak_memory_mb=lambda: None, started=time.perf_counter(), compiled="a stand-in step")

    monkeypatch.setattr(readers, "source", source)
    row = timed_row(lambda: time.sleep(0.02))
    assert asked == [cpu] and row.extra["devices_used"] == [cpu[0].to_dict()]
    steps = row.telemetry["phases"]["steps"]
    assert row.telemetry["source"] == "stand-in" and steps["energy_j"] > 0
    assert steps["throttle"] == ["hardware slowdown", "power cap"] and steps["power_cap_share"] == 1.0
    assert steps["j_per_image"] == pytest.approx(steps["energy_j"] / (2 * 3))
    assert "steal_share" in row.telemetry["neighbours"]["steps"]
    stability = sweep_stability([row])
    assert stability["verdict"] == "unstable"
    assert "the device slowed down during lenet b2 x1 steps: hardware slowdown (100 % of samples)" in stability[
        "reasons"]
    monkeypatch.setattr(readers, "source", lambda used: (None, "no energy source here"))
    quiet = timed_row(lambda: None)
    assert quiet.telemetry["energy"] == "unavailable" and quiet.telemetry["reason"] == "no energy source here"
    assert not any("slowed down" in reason for reason in sweep_stability([quiet])["reasons"])


def test_a_window_summary_sums_the_counter_inside_the_windows_alone():
    """A 100 W device read each second: two windows of 2 s and 1 s hold 300 J, whatever it drew between."""
    from l40sbench.core.telemetry import gaps, window_summary

    readings = [Reading(float(t), power_w=100.0, energy_j=100.0 * t, clock_mhz=1000.0 + t) for t in range(11)]
    got = window_summary(readings, [(2.5, 4.5), (6.0, 7.0)], images=3)
    assert got["energy_j"] == pytest.approx(300.0) and got["j_per_image"] == pytest.approx(100.0)
    assert got["seconds"] == pytest.approx(3.0) and got["windows"] == 2 and got["power_w_mean"] == pytest.approx(100.0)
    assert got["clock_mhz"][0] >= 1002.0 and got["clock_mhz"][1] <= 1007.0  # the samples inside, not the gaps'
    assert gaps([(2.5, 4.5), (6.0, 7.0)], 0.0, 10.0) == [(0.0, 2.5), (4.5, 6.0), (7.0, 10.0)]
    assert window_summary(readings, [], images=1)["energy"] == "unavailable"


def test_inference_energy_counts_the_timed_calls_alone_at_the_probes_own_instants(tmp_path):
    """A stand-in device drawing 100 W on a counter read from the probe's clock: the warm-up call (0.3 s) and
    the pauses between calls (0.1 s each) are not in the inference phase; its energy is 100 W x the timed
    calls' seconds, and J/image is over the 8 timed images."""
    from l40sbench.core.results import InferenceResult
    from l40sbench.core.stats import summarize
    from l40sbench.core.task import Probe
    from l40sbench.core.timing import recorded_calls, time_calls
    from l40sbench.harness.run import split_inference

    source, clock = _hundred_watts()
    phases = _phases((source, ""), tmp_path / "proc", clock=clock)
    with phases.phase("inference") as done, recorded_calls() as calls:
        seconds = []
        for duration in [0.3] + [0.05] * 8:
            seconds += time_calls(time.sleep, [duration])
            time.sleep(0.1)  # outside the clock
        done["images"] = 9
    inference = InferenceResult.from_stats(summarize(seconds[1:]), warmup=1, batch_size=1)
    first, last = phases.span("inference")
    split_inference(phases, calls, Probe(inference, {}), None)
    summaries = phases.summaries
    assert set(summaries) == {"inference", "inference warm-up", "inference between timed calls"}
    timed = sum(seconds[1:])
    assert summaries["inference"]["seconds"] == pytest.approx(timed, rel=1e-6) and summaries["inference"]["windows"] == 8
    assert summaries["inference"]["energy_j"] == pytest.approx(100.0 * timed, rel=1e-3)
    assert summaries["inference"]["j_per_image"] == pytest.approx(100.0 * timed / 8, rel=1e-3)
    assert summaries["inference warm-up"]["energy_j"] == pytest.approx(100.0 * seconds[0], rel=1e-3)
    between = (last - first) - sum(seconds)  # the phase less every call: however long the host's sleeps took
    assert summaries["inference between timed calls"]["energy_j"] == pytest.approx(100.0 * between, rel=1e-3)
    untouched = _phases((source, ""), tmp_path / "proc", clock=clock)
    with untouched.phase("inference"):
        time.sleep(0.2)
    split_inference(untouched, [], Probe(inference, {}), None)  # calls not recorded: the phase stays whole
    assert set(untouched.summaries) == {"inference"}


def test_training_energy_is_the_steady_epochs_at_the_epoch_clocks_instants(tmp_path):
    """Three epochs (the first 0.3 s, standing for compilation) with 0.1 s of scoring after each: training's
    energy is the two steady epochs' alone, per their images; the first epoch and the scoring are named apart."""
    from l40sbench.core.timing import EpochClock
    from l40sbench.harness.run import split_training

    source, stamp = _hundred_watts()
    phases = _phases((source, ""), tmp_path / "proc", clock=stamp)
    clock = EpochClock()
    with phases.phase("training"):
        for seconds in (0.3, 0.1, 0.1):
            clock.start()
            time.sleep(seconds)
            clock.stop()
            time.sleep(0.1)  # test scoring, outside the epoch clock
    first, last = phases.span("training")
    split_training(phases, clock.windows, images_per_epoch=16)
    got = phases.summaries
    assert set(got) == {"training", "first epoch", "between epochs (scoring, saves)"}
    steady = sum(clock.epoch_seconds[1:])
    assert got["training"]["energy_j"] == pytest.approx(100.0 * steady, rel=1e-3)
    assert got["training"]["j_per_image"] == pytest.approx(100.0 * steady / 32, rel=1e-3)
    assert got["first epoch"]["energy_j"] == pytest.approx(100.0 * clock.epoch_seconds[0], rel=1e-3)
    between = (last - first) - sum(clock.epoch_seconds)  # the scoring's sleeps, however long the host made them
    assert got["between epochs (scoring, saves)"]["energy_j"] == pytest.approx(100.0 * between, rel=1e-3)


def test_nvmls_boards_are_read_once_for_the_driver_view_the_preflight_and_the_pack(monkeypatch):
    """One reading of NVML's list (backends.nvml_boards): an H200 host of four boards, one busy; gpu/preflight.py
    judges its free memory and gpu/pack.py keeps its facts from that reading; a missing call is None."""
    import sys

    from l40sbench.backends import nvml_boards

    nvml = _fake_nvml()
    nvml.nvmlDeviceGetMemoryInfo = lambda h: SimpleNamespace(total=141 * 2**30, free=(20 if h == 1 else 140) * 2**30)
    nvml.nvmlDeviceGetPowerManagementLimit = lambda h: 700_000
    nvml.nvmlDeviceGetMaxClockInfo = lambda h, kind: 1980 if kind == 1 else 3201
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    found = nvml_boards.read()
    assert found.said is None and found.driver == "580.65" and len(found.boards) == 4
    busy = found.boards[1]
    assert (busy["uuid"], busy["memory_gib"], busy["memory_free_gib"], busy["power_limit_w"]) == (
        BOARDS[1][0], 141.0, 20.0, 700.0)
    assert (busy["max_sm_clock_mhz"], busy["max_memory_clock_mhz"], busy["processes"][0]["pid"]) == (1980, 3201, 1)
    monkeypatch.syspath_prepend(str(REPO / "gpu"))
    import pack
    import preflight

    seen, wrong = preflight._nvml(free_gib=100)
    assert seen[0] == "driver 580.65" and wrong == ["board 1 has 20.0 GiB free, under the 100 GiB wanted"]
    assert pack.machine()["boards"][0] == {"name": "NVIDIA H200", "uuid": BOARDS[0][0], "memory_gib": 141.0,
                                           "power_limit_w": 700.0, "max_sm_clock_mhz": 1980,
                                           "max_memory_clock_mhz": 3201}
    del nvml.nvmlDeviceGetMemoryInfo  # an NVML without the call: None, and the preflight says so
    assert nvml_boards.read().boards[0]["memory_gib"] is None
    assert "board 0: NVML does not say its free memory" in preflight._nvml(free_gib=1)[1]
