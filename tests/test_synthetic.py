"""Synthetic sweeps: the twelve models against their citations, and the sweep's parts one by one."""

import dataclasses
import json
import sys

import pytest

from l40sbench.core import child
from l40sbench.core.results import Row
from l40sbench.core.stats import step_throughput
from l40sbench.synthetic import tables
from l40sbench.synthetic.maxbatch import bisect_largest
from l40sbench.synthetic.models import MODELS, STUDY_ORDER
from l40sbench.synthetic.sweep import with_scaling, with_utilisation


def _conv(k, c_in, c_out, kw=None):
    return k * (kw or k) * c_in * c_out + c_out


def _dense(n_in, n_out):
    return n_in * n_out + n_out


# The parameter counts of the layer lists tf_cnn_benchmarks ran, worked out here by hand
# (conv: k*k*in*out + out biases; dense: in*out + out), independently of the Keras code.
LAYER_LIST_COUNTS = {
    "alexnet": _conv(11, 3, 64) + _conv(5, 64, 192) + _conv(3, 192, 384) + _conv(3, 384, 384) + _conv(3, 384, 256)
    + _dense(256 * 6 * 6, 4096) + _dense(4096, 4096) + _dense(4096, 1000),
    "lenet": _conv(5, 3, 32) + _conv(5, 32, 64) + _dense(64 * 7 * 7, 512) + _dense(512, 1000),
    "overfeat": _conv(11, 3, 96) + _conv(5, 96, 256) + _conv(3, 256, 512) + _conv(3, 512, 1024)
    + _conv(3, 1024, 1024) + _dense(1024 * 6 * 6, 3072) + _dense(3072, 4096) + _dense(4096, 1000),
    "vgg11": _conv(3, 3, 64) + _conv(3, 64, 128) + _conv(3, 128, 256) + _conv(3, 256, 256) + _conv(3, 256, 512)
    + 3 * _conv(3, 512, 512) + _dense(512 * 7 * 7, 4096) + _dense(4096, 4096) + _dense(4096, 1000),
}


def test_the_registry_holds_the_studys_twelve_models():
    assert sorted(MODELS.names()) == sorted(STUDY_ORDER) and len(STUDY_ORDER) == 12
    assert {m: MODELS.get(m).size for m in ("alexnet", "overfeat", "lenet", "inceptionv3", "inceptionv4")} == {
        "alexnet": 227, "overfeat": 231, "lenet": 28, "inceptionv3": 299, "inceptionv4": 299}
    study = {m: MODELS.get(m).study_batch for m in STUDY_ORDER if MODELS.get(m).study_batch}
    assert study == {"inceptionv3": 64, "resnet50": 64, "resnet152": 32, "alexnet": 512, "vgg16": 32}


def check_citation(spec, model) -> None:
    """A built synthetic model runs a small batch and matches its citation (tests/test_structure_figures.py builds
    each model once, for this and its exact structure figures)."""
    import numpy as np

    probabilities = np.asarray(model(np.zeros((2, spec.size, spec.size, 3), "float32"), training=False))
    assert probabilities.shape == (2, 1000)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, rtol=1e-4)
    counted = spec.count_params(model)
    assert abs(counted - spec.published_params) <= spec.params_tolerance * spec.published_params, (
        f"{spec.name}: {counted:,} parameters, cited {spec.published_params:,} ({spec.citation})")
    if spec.name in LAYER_LIST_COUNTS:
        assert counted == LAYER_LIST_COUNTS[spec.name]


def test_forward_flops_are_counted_from_the_graph():
    """lenet by hand (2 per multiply-add of its convolutions and matmuls, the suite's one convention),
    and vgg16 against its well-known 15.47 G multiply-adds."""
    from l40sbench.backends.tf_flops import forward_gflops

    lenet = MODELS.get("lenet")
    macs = 28 * 28 * 32 * 5 * 5 * 3 + 14 * 14 * 64 * 5 * 5 * 32 + 3136 * 512 + 512 * 1000
    assert forward_gflops(lenet.build(), 28) == pytest.approx(2 * macs / 1e9, rel=1e-9)
    assert forward_gflops(MODELS.get("vgg16").build(), 224) == pytest.approx(2 * 15.47, rel=0.01)


def test_step_throughput_gives_rate_standard_error_and_jitter():
    stats = step_throughput([0.5, 0.5], 32)
    assert (stats.images_per_second, stats.images_per_second_stderr, stats.step_jitter_percent) == (64.0, 0.0, 0.0)
    stats = step_throughput([0.4, 0.6], 10)
    assert stats.images_per_second == pytest.approx(20.0)
    assert stats.step_ms_std == pytest.approx(141.421, rel=1e-4)  # sample standard deviation
    assert stats.images_per_second_stderr == pytest.approx(20.0 * (0.141421 / 2**0.5) / 0.5, rel=1e-4)
    assert stats.step_jitter_percent == pytest.approx(28.284, rel=1e-4)
    assert step_throughput([], 8).images_per_second is None
    with pytest.raises(ValueError):
        step_throughput([0.1, 0.0], 8)


def _row(model="lenet", batch=8, devices=1, status="ok", rate=100.0, kind="CPU", tflops=1.0):
    return Row(model=model, mode="train", precision="fp32", xla=False, optimizer="sgd", devices=devices, workers=1,
               device_kind=kind, per_device_batch=batch, total_batch=batch * devices, status=status,
               images_per_second=rate if status == "ok" else None, achieved_tflops=tflops if status == "ok" else None)


def test_scaling_efficiency_and_utilisation():
    rows = with_scaling([_row(rate=100.0), _row(devices=2, rate=150.0), _row(devices=4, status="oom")])
    assert [r.scaling_efficiency for r in rows] == [1.0, 0.75, None]
    state = {"peak": {"matmul": {"float32": {"gflops": 500.0}, "bfloat16": {"gflops": 1000.0}}}}
    row = with_utilisation(_row(tflops=0.25), state)
    assert row.utilisation == pytest.approx(0.5) and row.utilisation_peak == "float32"
    # N GPUs bring N times the peak; N logical CPU devices share one CPU's.
    assert with_utilisation(_row(devices=2, kind="GPU", tflops=0.25), state).utilisation == pytest.approx(0.25)
    assert with_utilisation(_row(devices=2, tflops=0.25), state).utilisation == pytest.approx(0.5)
    assert with_utilisation(_row(status="oom"), state).utilisation is None
    # a mixed_bfloat16 row is divided by the bfloat16 peak and says so
    bf16 = with_utilisation(dataclasses.replace(_row(tflops=0.25), precision="mixed_bfloat16"), state)
    assert bf16.utilisation == pytest.approx(0.25) and bf16.utilisation_peak == "bfloat16"
    # a sweep folder begun before peaks existed: its calibration matmul, as its sweep.json is read
    from l40sbench.core.migrate import upgrade_state

    old = with_utilisation(_row(tflops=0.25), upgrade_state({"env": {}, "calibration": {"matmul_gflops": 500.0}}))
    assert old.utilisation == pytest.approx(0.5) and old.utilisation_peak == "float32"


@pytest.mark.parametrize("largest", [None, 1, 5, 8, 9, 31, 64, 100, 1000])
def test_bisection_finds_the_largest_batch_that_fits(largest):
    tried = []

    def fits(batch):
        tried.append(batch)
        return largest is not None and batch <= largest

    assert bisect_largest(fits, 8) == largest
    assert len(tried) == len(set(tried)) and len(tried) <= 2 * 11


def test_tables_put_the_out_of_memory_mark_where_the_study_does():
    rows = [r.to_dict() for r in (
        _row("alexnet", 512, 1, rate=2807.64), _row("alexnet", 512, 2, rate=5117.86),
        _row("vgg16", 32, 1, rate=137.32), _row("vgg16", 32, 2, rate=240.61), _row("vgg16", 256, 1, status="oom"),
        _row("vgg16", 256, 2, status="oom"), _row("alexnet", 32, 1, rate=1516.70), _row("alexnet", 256, 1, "timeout"))]
    headers, body = tables.device_table(rows)
    assert headers == ["devices", "VGG16 (batch 32)", "Alexnet (batch 512)"]  # the study's batch, its column order
    assert body == [["1", "137.32", "2807.64"], ["2", "240.61", "5117.86"]]
    by_devices = {d: (h, b) for d, h, b in tables.batch_tables(rows)}
    headers, body = by_devices[1]
    assert headers == ["batch size", "alexnet", "vgg16"]
    assert body == [["32", "1516.70", "137.32"], ["256", "t/o", "-*"], ["512", "2807.64", "-"]]
    assert by_devices[2][1][1] == ["256", "-", "-*"]


def test_the_device_table_and_the_report_pick_the_same_batch():
    """The study's batch (resnet50: 64) ran out of memory on 2 devices: both take the largest batch that ran on
    every device count (32), not the largest swept (128, which ran on 1 device only)."""
    from l40sbench.report.document import write_report
    from l40sbench.report.inputs import Loaded

    rows = [r.to_dict() for r in (
        _row("resnet50", 32, 1, rate=10.0), _row("resnet50", 32, 2, rate=19.0), _row("resnet50", 64, 1, rate=11.0),
        _row("resnet50", 64, 2, status="oom"), _row("resnet50", 128, 1, rate=12.0), _row("resnet50", 128, 2, "error"))]
    assert tables.device_batch(rows) == 32
    headers, body = tables.device_table(rows)
    assert headers == ["devices", "ResNet-50 (batch 32)"] and body == [["1", "10.00"], ["2", "19.00"]]
    config = {"models": ["resnet50"], "batch_sizes": [32, 64, 128], "settings": {"optimizer": "sgd", "mode": "train",
                                                                                 "precision": "fp32"}}
    assert tables.options_table(config, rows)[1][0] == ["Batch size per device", "32"]
    assert tables.options_table(config)[1][0] == ["Batch size per device", "64"]  # nothing ran yet: the study's
    record = {"task": "synthetic", "base": "sweep", "complete": True, "config": config, "env": {}, "rows": rows}
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as out:
        text = write_report([Loaded("sweep", record)], Path(out)).read_text()
    assert "ResNet-50 (batch 32)" in text and "batch 64)" not in text and "batch 128)" not in text


def test_batch_tables_split_the_twelve_models_in_groups_of_six():
    rows = [_row(m, 32).to_dict() for m in STUDY_ORDER]
    groups = [h[1:] for d, h, b in tables.batch_tables(rows)]
    assert groups == [list(STUDY_ORDER[:6]), list(STUDY_ORDER[6:])]  # as the study prints them


ALLOCATE = "import sys, time; a = bytearray(int(float(sys.argv[1]) * 2**20)); a[::4096] = b'x' * len(a[::4096]); time.sleep(0.5); print('done')"


@pytest.mark.parametrize("try_cgroup", [True, False], ids=["cgroup-where-allowed", "watchdog-only"])
def test_the_memory_cap_ends_a_child_over_it_and_spares_one_under_it(try_cgroup):
    command = [sys.executable, "-c", ALLOCATE]
    under = child.run(command + ["100"], timeout_s=60, memory_limit_mb=600, try_cgroup=try_cgroup)
    assert (under.returncode, under.stdout.strip(), under.over_memory) == (0, "done", False)
    over = child.run(command + ["1500"], timeout_s=60, memory_limit_mb=600, try_cgroup=try_cgroup)
    assert over.over_memory and over.returncode == -9 and "done" not in over.stdout
    assert over.peak_rss_mb <= 1500  # ended on its way up, not after it got there
    if not try_cgroup:
        assert over.enforcement == "watchdog"


@pytest.mark.parametrize("version, files, expected", [
    (2, ("memory.swap.max",), {"memory.swap.max": "0"}),
    (2, (), {}),  # no swap accounting: nothing to limit
    (1, ("memory.swappiness", "memory.memsw.limit_in_bytes"),
     {"memory.swappiness": "0", "memory.memsw.limit_in_bytes": "1048576"}),
])
def test_a_capped_child_gets_no_swap(tmp_path, version, files, expected):
    for name in files:
        (tmp_path / name).write_text("max")
    child._no_swap(tmp_path, version, 2**20)
    assert {p.name: p.read_text() for p in tmp_path.iterdir()} == {**{n: "max" for n in files}, **expected}


def test_the_cgroup_made_here_has_no_swap_where_the_kernel_allows_one():
    cgroup = child._Cgroup.create(64 * 2**20)
    if cgroup is None:
        pytest.skip("this kernel lets no cgroup be made here (the watchdog alone caps memory)")
    try:
        if cgroup.version == 2:
            swap = cgroup.path / "memory.swap.max"
            assert not swap.exists() or swap.read_text().strip() == "0"
        else:
            assert (cgroup.path / "memory.swappiness").read_text().strip() == "0"
            memsw = cgroup.path / "memory.memsw.limit_in_bytes"
            assert not memsw.exists() or int(memsw.read_text()) == 64 * 2**20
    finally:
        cgroup.remove()


@pytest.mark.parametrize("timed_out, over_memory", [(True, False), (False, True)])
def test_a_row_the_child_printed_is_kept_when_its_teardown_fails(monkeypatch, timed_out, over_memory):
    """TensorFlow can hang or grow while it shuts down, after the row was measured and printed."""
    import json

    from l40sbench.synthetic import children
    from l40sbench.synthetic.config import SweepConfig
    from l40sbench.synthetic.worker import ROW_MARKER

    measured = _row(rate=42.0)
    outcome = child.Outcome(-9, ROW_MARKER + json.dumps(measured.to_dict()) + "\n", "", 5.0, timed_out, over_memory,
                            900.0, "watchdog")
    monkeypatch.setattr(children.child, "run", lambda *args, **kwargs: outcome)
    config = SweepConfig(models=("lenet",), batch_sizes=(8,), timeout_s=1.0)
    row = children.run_job(config.job("lenet", 8, 1), config, gpu=False)
    assert row.status == "ok" and row.images_per_second == 42.0
    assert row.extra["after_its_row"] == ("passed --timeout" if timed_out else "passed the memory cap")


def test_gpu_workspace_allocation_failures_are_out_of_memory():
    import tensorflow as tf

    from l40sbench.synthetic.worker import _is_oom

    assert _is_oom(tf.errors.InternalError(None, None, "Blas xGEMM launch failed: CUBLAS_STATUS_ALLOC_FAILED"))
    assert _is_oom(tf.errors.InternalError(None, None, "cuDNN: failed to allocate workspace of 2147483648 bytes"))
    assert _is_oom(tf.errors.ResourceExhaustedError(None, None, "OOM when allocating tensor"))
    assert not _is_oom(tf.errors.InternalError(None, None, "an unrelated internal error"))


def test_a_child_past_its_time_limit_is_ended():
    outcome = child.run([sys.executable, "-c", "import time; time.sleep(30)"], timeout_s=0.5, memory_limit_mb=None)
    assert outcome.timed_out and outcome.seconds < 10


def test_a_sweep_row_times_windows_of_steps_and_reads_its_memory_before_the_guard(monkeypatch):
    """20 steps: 5 windows of 4 between two syncs each, the second on the window's last output; each window
    over 4 is a step figure. The peak memory (this CPU's counter, the process's peak resident set) is read
    before the guard's burst, which here holds 400 MB more than the process ever had."""
    import time

    import numpy as np

    from l40sbench.core.devices import Device
    from l40sbench.core.memory import host_peak_mb as _host_peak_mb
    from l40sbench.peak import burst
    from l40sbench.synthetic.job import Job, StepSettings, window_steps
    from l40sbench.synthetic.worker import _timed_row

    assert [window_steps(n) for n in (1, 3, 20, 49, 100, 1000)] == [1, 1, 4, 9, 10, 10]
    before = _host_peak_mb()
    held = {}

    class BigGuard:
        def __init__(self, *args):
            self.bursts = []

        def check(self, moment):
            held["burst"] = np.ones(int((before + 400) * 2**20 / 8))  # touched: it counts in the resident set

    monkeypatch.setattr(burst, "Guard", BigGuard)
    waited, calls = [], []

    def sync(*output):
        waited.append(output)

    def step():
        calls.append(1)
        time.sleep(0.001)
        return len(calls)

    job = Job("lenet", 2, 1, StepSettings(warmup_steps=2, steps=20))
    row = _timed_row(job, step, sync, gflops=0.01, replicas=1, workers=1,
                     used=[Device("CPU", "/device:CPU:0", 0, "a CPU")], peak_memory_mb=_host_peak_mb,
                     started=time.perf_counter(), compiled="a stand-in step")
    assert len(calls) == 22 and row.steps == 20 and len(row.step_ms) == 5 and row.extra["window_steps"] == 4
    assert [o for o in waited if o][-5:] == [(6,), (10,), (14,), (18,), (22,)]  # each window's last output
    assert all(s >= 1.0 for s in row.step_ms)  # a window over its steps: one step's time, not four
    assert row.peak_memory_mb < before + 100 and _host_peak_mb() > before + 300


def test_a_sweep_row_whose_flop_count_was_refused_has_no_utilisation_and_says_why():
    import time

    from l40sbench.core.devices import Device
    from l40sbench.synthetic.job import Job, StepSettings
    from l40sbench.synthetic.sweep import with_utilisation
    from l40sbench.synthetic.worker import _timed_row

    why = "2 x multiply-accumulates of convolutions and matmuls, from the traced jaxpr: utilisation unavailable (counted -1.0)"
    row = _timed_row(Job("lenet", 2, 1, StepSettings(warmup_steps=1, steps=3)), lambda: 1, lambda *_: None,
                     gflops=None, replicas=1, workers=1, used=[Device("CPU", "/device:CPU:0", 0, "a CPU")],
                     peak_memory_mb=lambda: None, started=time.perf_counter(), compiled="a stand-in step",
                     flop_counter=why)
    assert row.status == "ok" and row.images_per_second > 0 and row.achieved_tflops is None
    assert row.extra["flop_counter"] == why
    assert with_utilisation(row, {"peak": {"matmul": {"float32": {"gflops": 100.0}}}}).utilisation is None


def test_rows_survive_a_kill_mid_write_and_the_torn_line_is_cut_before_the_next(tmp_path):
    from l40sbench.synthetic.store import ROWS_FILE, append_row, cut_torn_line, load_rows

    first, second = _row(batch=8), _row(batch=16, rate=180.0)
    append_row(tmp_path, first)
    append_row(tmp_path, second)
    path = tmp_path / ROWS_FILE
    whole = path.read_bytes()
    path.write_bytes(whole[:-25])  # the second row cut short by a kill
    def plain(*rows):  # as JSON holds them (tuples come back as lists)
        return json.loads(json.dumps([row.to_dict() for row in rows]))

    assert plain(*load_rows(tmp_path)) == plain(first)
    logs = []
    cut_torn_line(tmp_path, logs.append)
    assert path.read_bytes() == whole[:whole.index(b"\n") + 1] and "cut a torn last line" in logs[0]
    cut_torn_line(tmp_path, logs.append)  # a whole file is left alone
    append_row(tmp_path, second)
    assert plain(*load_rows(tmp_path)) == plain(first, second) and len(logs) == 1
    assert load_rows(tmp_path / "nowhere") == []


def test_resuming_a_folder_that_holds_no_sweep_is_one_line(tmp_path):
    from l40sbench.errors import UserError
    from l40sbench.synthetic.store import SWEEP_FILE, read_state

    with pytest.raises(UserError, match="no readable sweep.json"):
        read_state(tmp_path)
    (tmp_path / SWEEP_FILE).write_text('{"model": "vgg19"}')
    with pytest.raises(UserError, match="is not a sweep's"):
        read_state(tmp_path)
    (tmp_path / SWEEP_FILE).write_text("{half")
    with pytest.raises(UserError, match="no readable sweep.json"):
        read_state(tmp_path)


def test_list_prints_every_model_with_its_counted_figures(monkeypatch):
    """--list counts each model as tests/test_structure_figures.py does (listing.model_facts); here stand-in
    facts check the table it makes of them."""
    from l40sbench.synthetic import listing
    from tests.conftest import cli_in_process

    monkeypatch.setattr(listing, "model_facts", lambda name: {"size": MODELS.get(name).size, "params": 1234567,
                                                             "gflops": 0.5, "source": MODELS.get(name).source})
    result = cli_in_process("synthetic", "--list")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    lines = {line.split("|")[0].strip(): line for line in out.splitlines() if "|" in line}
    assert set(STUDY_ORDER) <= set(lines) and "GFLOPs: TensorFlow's profiler" in out
    vgg = MODELS.get("vgg16")
    assert f"{vgg.size}x{vgg.size}" in lines["vgg16"] and "1,234,567" in lines["vgg16"] and "0.500" in lines["vgg16"]


def test_find_max_batch_probes_each_model_and_count_and_names_a_probe_that_broke(monkeypatch):
    """Stand-in probes: lenet fits up to 48 a device (then out of memory), alexnet's probe crashes."""
    from l40sbench.synthetic import maxbatch
    from l40sbench.synthetic.config import SweepConfig

    probed = []

    def run_job(job, config, gpu):
        probed.append((job.model, job.per_device_batch, job.devices, job.settings.steps))
        if job.model == "alexnet":
            return dataclasses.replace(_row(model="alexnet", status="error"), error="the child crashed")
        return _row(batch=job.per_device_batch, devices=job.devices,
                    status="ok" if job.per_device_batch <= 48 else "oom")

    monkeypatch.setattr(maxbatch, "run_job", run_job)
    logs = []
    config = SweepConfig(models=("lenet", "alexnet"), batch_sizes=(16, 8), devices=(1, 2))
    found = maxbatch.find_max_batches(config, gpu=False, log=logs.append)
    assert [(f["model"], f["devices"]) for f in found] == [("lenet", 1), ("alexnet", 1), ("lenet", 2), ("alexnet", 2)]
    lenet = found[0]
    assert lenet["max_per_device_batch"] == 48 and lenet["error"] is None
    assert lenet["probes"]["64"] == "oom" and lenet["probes"]["32"] == "ok" and lenet["probes"]["48"] == "ok"
    assert found[1]["max_per_device_batch"] is None and "alexnet batch 8: error (the child crashed)" in found[1]["error"]
    assert all(steps == maxbatch.PROBE_STEPS for *_, steps in probed) and probed[0][1] == 8  # from the smallest
    assert "max batch lenet x 1: 48" in logs
