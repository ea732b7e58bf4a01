"""Timing core with a fake clock: no framework, no real time."""

import json

import numpy as np
import pytest

from l40sbench.core.records import to_csv, to_json, write_atomic, write_result
from l40sbench.core.registry import Registry
from l40sbench.core.stats import summarize
from l40sbench.core.text import format_duration
from l40sbench.core.timing import (
    EpochClock,
    epoch_times,
    eta_seconds,
    probe_interleaved,
    probe_latency,
)
from l40sbench.errors import UserError


class FakeClock:
    """Each call advances by the next programmed step; logs every reading."""

    def __init__(self, events):
        self.now = 0.0
        self.events = events

    def __call__(self):
        self.events.append("read")
        return self.now


def fake_device(durations_s):
    """A clock, a sync hook and a workload whose calls 'take' the given durations."""
    events = []
    clock = FakeClock(events)
    remaining = list(durations_s)

    def work(_sample):
        events.append("work")
        clock.now += remaining.pop(0)

    return clock, (lambda *output: events.append("sync")), work, events


def test_probe_drops_warmup_and_computes_rate():
    clock, sync, work, _ = fake_device([1.0, 0.010, 0.020, 0.030])
    stats = probe_latency(work, range(4), warmup=1, clock=clock, sync=sync)
    assert stats.count == 3
    assert stats.mean_ms == pytest.approx(20.0)
    assert stats.min_ms == pytest.approx(10.0)
    assert stats.max_ms == pytest.approx(30.0)
    assert stats.images_per_second == pytest.approx(50.0)
    assert stats.std_ms == pytest.approx(10.0)  # the sample standard deviation (ddof=1)


def test_probe_syncs_before_every_clock_reading():
    clock, sync, work, events = fake_device([0.001, 0.002])
    probe_latency(work, range(2), warmup=0, clock=clock, sync=sync)
    assert events == ["sync", "read", "work", "sync", "read"] * 2


def test_article_count_140_images_gives_139_timed():
    clock, sync, work, _ = fake_device([0.5] + [0.006575] * 139)
    stats = probe_latency(work, range(140), clock=clock, sync=sync)
    assert stats.count == 139
    assert stats.mean_ms == pytest.approx(6.575)
    assert stats.images_per_second == pytest.approx(152.091, abs=1e-3)


def test_interleaved_probes_rotate_per_sample_and_drop_warmup_each():
    order = []
    clock = FakeClock([])
    durations = {"a": [1.0, 0.010, 0.030], "b": [2.0, 0.020, 0.040]}

    def work(name):
        def call(sample):
            order.append((name, sample))
            clock.now += durations[name].pop(0)
        return call

    reports = []
    stats = probe_interleaved({"a": work("a"), "b": work("b")}, range(3), warmup=1, clock=clock,
                              progress=lambda done, seconds: reports.append((done, round(seconds, 6))))
    assert reports == [(1, 3.0), (2, 3.03), (3, 3.1)]
    assert order == [("a", 0), ("b", 0), ("a", 1), ("b", 1), ("a", 2), ("b", 2)]
    assert (stats["a"].count, stats["b"].count) == (2, 2)
    assert stats["a"].mean_ms == pytest.approx(20.0)
    assert stats["b"].mean_ms == pytest.approx(30.0)


def test_percentiles_are_loadgens():
    """LoadGen's definition: the sorted samples at index floor(n x fraction), no interpolation."""
    stats = summarize([i / 1000 for i in range(100, 0, -1)])  # 100..1 ms
    assert stats.p50_ms == pytest.approx(51.0)
    assert stats.p90_ms == pytest.approx(91.0)
    assert stats.p99_ms == pytest.approx(100.0)
    assert summarize([0.003, 0.001, 0.002]).p50_ms == pytest.approx(2.0)


def test_summarize_handles_zero_and_one_sample():
    empty = summarize([])
    assert empty.count == 0 and empty.mean_ms is None and empty.images_per_second is None
    one = summarize([0.004])
    assert one.count == 1 and one.std_ms is None and one.p99_ms == pytest.approx(4.0)
    assert summarize([0.004], images_per_call=16).images_per_second == pytest.approx(4000.0)


def test_summarize_rejects_negative_samples():
    with pytest.raises(ValueError, match="Received"):
        summarize([0.001, -0.001])


def test_epoch_clock_syncs_and_splits_first_from_steady():
    events = []
    clock = FakeClock(events)
    epochs = EpochClock(clock=clock, sync=lambda: events.append("sync"))
    for seconds in (12.0, 8.0, 8.5, 7.5):
        epochs.start()
        clock.now += seconds
        assert epochs.stop() == pytest.approx(seconds)
    assert events == ["sync", "read"] * 8
    times = epochs.summary()
    assert times.total_seconds == pytest.approx(36.0)
    assert times.first_epoch_seconds == pytest.approx(12.0)
    assert times.steady_epoch_seconds == pytest.approx(8.0)


def test_epoch_times_single_and_none():
    assert epoch_times([3.0]).steady_epoch_seconds is None
    assert epoch_times([]).first_epoch_seconds is None
    with pytest.raises(RuntimeError):
        EpochClock().stop()


def test_records_are_sorted_json_with_null_for_nan(tmp_path):
    record = {"b": float("nan"), "a": {"y": [1.0, float("inf")], "x": 2}}
    text = to_json(record)
    assert json.loads(text) == {"a": {"x": 2, "y": [1.0, None]}, "b": None}
    assert text.index('"a"') < text.index('"b"')
    path = write_result(tmp_path / "out", record)
    assert json.loads(path.read_text())["a"]["x"] == 2
    assert (tmp_path / "out" / "result.csv").read_text().splitlines()[0] == "a.x,a.y,b"
    assert not list((tmp_path / "out").glob("*.tmp"))
    assert to_csv({"k": {"v": 1}}).splitlines() == ["k.v", "1"]
    # A list cell holds the list as result.json writes it: keys sorted.
    assert to_csv({"l": [{"b": 1, "a": 2}]}).splitlines()[1] == '"[{""a"": 2, ""b"": 1}]"'



def test_registry_rejects_duplicates_and_lists_names_on_miss():
    registry = Registry("base")
    registry.register("b", 2)
    registry.register("a", 1)
    with pytest.raises(KeyError):
        registry.register("a", 3)
    with pytest.raises(UserError, match="unknown base 'c'; choose one of: a, b"):
        registry.get("c")
    assert registry.names("a*") == ["a"]


@pytest.mark.parametrize(
    "seconds, text",
    [(81.964, "1m21.964s"), (54.982, "54.982s"), (2127.83, "35m27.830s"), (None, "-"),
     (59.9996, "1m00.000s"), (119.9996, "2m00.000s"), (59.9994, "59.999s")],
)
def test_format_duration_matches_the_article(seconds, text):
    assert format_duration(seconds) == text


def test_eta_ignores_the_compile_heavy_first_epoch_once_it_can():
    assert eta_seconds([30.0], 4) == pytest.approx(120.0)
    assert eta_seconds([30.0, 10.0, 12.0], 5) == pytest.approx(55.0)
    assert eta_seconds([], 3) == 0.0


def test_environment_block_prints_the_peak_of_the_run_and_an_old_calibration():
    from l40sbench.report.tables import environment_block

    peak = {"matmul": {"float32": {"gflops": 480.04}, "bfloat16": {"gflops": 850.0}}, "conv_float32_gflops": 430.0,
            "theoretical_float32_gflops": 600.0, "float32_measured_over_theoretical": 0.8}
    block = environment_block({"peak": peak, "devices": []})
    assert ("Peak (same run)             : matmul float32 480.0, bfloat16 850.0 GFLOP/s; 3x3 conv float32 "
            "430.0 GFLOP/s; float32 80 % of theoretical 600 GFLOP/s") in block
    # an older record's calibration, brought to today's shape where records are read
    from l40sbench.core.migrate import upgrade_env

    old = environment_block(upgrade_env({"calibration": {"matmul_gflops": 151.04, "conv_gflops": 197.96}, "devices": []}))
    assert ("Peak (same run)             : matmul float32 151.0 GFLOP/s; 3x3 conv float32 198.0 GFLOP/s; "
            "theoretical unknown: an older record's calibration") in old
    assert "Peak (same run)             : -" in environment_block({"devices": []})


def test_atomic_writes_get_the_mode_of_any_new_file(tmp_path):
    """result.json and report.md like the PNGs beside them: not mkstemp's 0600."""
    import os

    old = os.umask(0o022)
    try:
        write_atomic(tmp_path / "result.json", "{}")
        (tmp_path / "plot.png").write_bytes(b"")
    finally:
        os.umask(old)
    assert (tmp_path / "result.json").stat().st_mode & 0o777 == (tmp_path / "plot.png").stat().st_mode & 0o777 == 0o644


def test_older_records_are_upgraded_in_one_step_where_they_are_read(tmp_path):
    """A record of an earlier version (env.calibration, no backend) reads as today's; a study's keeps no backend."""
    import json

    from l40sbench.core.migrate import upgrade
    from l40sbench.core.reading import read_result_file
    from l40sbench.core.records import SCHEMA
    from l40sbench.report.inputs import backend

    old = {"schema": SCHEMA, "task": "classify", "base": "vgg19", "complete": True, "config": {"epochs": 1},
           "env": {"calibration": {"matmul_gflops": 207.0, "conv_gflops": 190.0}},
           "dataset": {"source": "stand-in", "train_images": 8, "test_images": 8, "classes": {}}, "weights": "random",
           "train": {"epochs": 1, "batch_size": 4, "epoch_seconds": [3.0], "total_seconds": 3.0,
                     "first_epoch_seconds": 3.0, "steady_epoch_seconds": None}, "accuracy": {}, "inference": None}
    path = tmp_path / "result.json"
    path.write_text(json.dumps(old))
    (record,) = read_result_file(path)
    assert record["env"]["backend"] == "tensorflow" and backend(record) == "tensorflow"
    assert record["env"]["peak"]["matmul"]["float32"]["gflops"] == 207.0
    assert record["env"]["peak"]["conv_float32_gflops"] == 190.0
    assert json.loads(path.read_text()) == old  # read, never rewritten
    sweep = upgrade({"task": "synthetic", "config": {"settings": {}}, "env": {}, "rows": []})
    assert backend(sweep) == "tensorflow" and sweep["config"] == {"settings": {}}
    study = upgrade({**old, "source": "the French study", "config": {}})
    assert "backend" not in study["config"] and backend(study) is None
    assert upgrade(record) == record  # today's shape is left as it is


def test_the_schema_is_the_result_dataclasses():
    """Each block checks its dataclass's fields: required where the class requires them, the kinds its types give."""
    import dataclasses

    from l40sbench.core import results, schema

    for table, cls in ((schema.RUN, results.RunResult), (schema.TRAIN, results.TrainResult),
                       (schema.INFERENCE, results.InferenceResult), (schema.RUNTIME, results.RuntimeResult),
                       (schema.SCENARIO, results.ScenarioResult), (schema.SWEEP, results.SweepResult),
                       (schema.ROW, results.Row)):
        assert [name.lstrip("~") for name in table] == [f.name for f in dataclasses.fields(cls)]
    assert schema.TRAIN["epoch_seconds"] == "numbers" and schema.TRAIN["first_epoch_seconds"] == "number?"
    assert schema.RUN["dataset"] == "dict" and schema.RUN["~inference"] == "dict?"
    assert schema.ROW["xla"] == "bool" and schema.ROW["~images_per_second"] == "number?"
    with pytest.raises(ValueError, match="train.batch_size is 'sixteen', not int"):
        record = json.loads(json.dumps(_tiny_run_record()))
        record["train"]["batch_size"] = "sixteen"
        schema.check_record(record)


def _tiny_run_record() -> dict:
    from l40sbench.core.results import DatasetInfo, RunResult, TrainResult

    train = TrainResult(epochs=1, batch_size=4, epoch_seconds=(2.0,), total_seconds=2.0, first_epoch_seconds=2.0,
                        steady_epoch_seconds=None)
    return RunResult(task="classify", base="vgg19", complete=True, config={}, env={},
                     dataset=DatasetInfo("stand-in", 8, 8, {}), train=train, weights="random").to_dict()


def test_the_probe_syncs_on_what_each_call_returned_and_drains_only_before_the_clock():
    from l40sbench.core.timing import on_host, time_calls

    waits = []
    on_device = object()  # what a call returns that has not crossed to the host
    outputs = iter([np.zeros(2), {"boxes": np.ones(1)}, on_device])
    time_calls(lambda _: next(outputs), range(3), clock=iter(range(10)).__next__, sync=lambda *o: waits.append(o))
    assert [len(o) for o in waits] == [0, 1, 0, 1, 0, 1]  # drain before each clock, the output after each call
    assert [on_host(o[0]) for o in waits[1::2]] == [True, True, False] and waits[5] == (on_device,)


def test_the_jax_sync_waits_on_the_output_and_drains_every_live_array_only_when_given_none(monkeypatch):
    jax = pytest.importorskip("jax")
    from l40sbench.backends import jax as jax_backend

    waited = []
    monkeypatch.setattr(jax, "live_arrays", lambda: waited.append("every live array") or [])
    monkeypatch.setattr(jax, "block_until_ready", lambda output: waited.append("the output") or output)
    sync = jax_backend.sync()
    sync(np.zeros(3))  # a host copy: the call has waited
    assert waited == []
    sync(object())  # a device array stand-in
    assert waited == ["the output"]
    sync()
    assert waited == ["the output", "every live array"]


def test_the_tensorflow_sync_on_a_gpu_skips_outputs_already_on_the_host(monkeypatch):
    import tensorflow as tf

    from l40sbench.backends import tf_device

    synced = []
    monkeypatch.setattr(tf_device, "has_gpu", lambda: True)
    monkeypatch.setattr(tf.test.experimental, "sync_devices", lambda: synced.append(1))
    sync = tf_device.device_sync()
    sync({"detection_boxes": np.zeros((1, 4))})
    assert synced == []
    sync(tf.constant(1.0))
    sync()
    assert synced == [1, 1]


def test_peak_memory_is_the_most_any_one_device_held_on_jax(monkeypatch):
    jax = pytest.importorskip("jax")
    from l40sbench.backends import jax as jax_backend

    class Device:
        def __init__(self, peak):
            self.peak = peak

        def memory_stats(self):
            return None if self.peak is None else {"peak_bytes_in_use": self.peak}

    monkeypatch.setattr(jax, "devices", lambda: [Device(2**20), Device(3 * 2**20)])
    assert jax_backend.peak_memory_mb("GPU") == 3.0  # not the first device's 1, not the sum's 4
    monkeypatch.setattr(jax, "devices", lambda: [Device(None)])
    assert jax_backend.peak_memory_mb("CPU") is None
