"""`study`: the plan and its budget (pure), the plan printed without work, bad input, and a study killed with
SIGKILL mid-step that --resume finishes running only the step it lacked."""

import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from l40sbench.errors import UserError
from l40sbench.study import budget as budgets
from l40sbench.study import plan as plans
from tests.conftest import REPO, assert_one_line_exit_2, cli_in_process, run_cli

CPU = plans.Machine(peak_gflops=220.0, gpu=False)
GPU = plans.Machine(peak_gflops=60_000.0, gpu=True, devices=8)


def test_the_l40s_plan_is_the_studys_protocol():
    plan = plans.build("l40s", CPU)
    assert [s.name for s in plan.steps] == ["classify-xception", "classify-inceptionv3", "classify-vgg19",
                                            "detect-faster_rcnn_inception_v2", "detect-faster_rcnn_resnet50",
                                            "detect-ssd_resnet50_fpn"]
    xception = plan.steps[0].argv
    assert xception[:8] == ("classify", "--base", "xception", "--image-size", "299", "--epochs", "10", "--batch-size")
    assert plan.steps[3].argv[plan.steps[3].argv.index("--epochs") + 1] == "1"  # a CPU: 1 epoch, projected
    assert "projected" in plan.steps[3].cut
    on_gpu = plans.build("l40s", GPU)
    assert on_gpu.steps[3].argv[on_gpu.steps[3].argv.index("--epochs") + 1] == "200" and not on_gpu.steps[3].cut
    assert on_gpu.total_s < plan.total_s  # a faster peak, a shorter estimate
    sweep = plans.build("leadergpu", GPU).steps[0].argv
    assert sweep[sweep.index("--devices") + 1] == "1,8" and "resnet152" in sweep[sweep.index("--models") + 1]
    assert [s.task for s in plans.build("all", CPU, with_detect=False).steps] == ["classify"] * 3 + ["synthetic"]


def test_a_detector_file_is_an_infer_step_after_the_detectors_that_no_budget_cuts_and_no_training_flag_reaches():
    plan = plans.build("all", GPU, models=("/models/yolo11n.onnx", "/models/frcnn_saved_model/"))
    assert [s.name for s in plan.steps][-3:] == ["infer-yolo11n", "infer-frcnn_saved_model", "synthetic-leadergpu"]
    step = plan.steps[-3]
    assert step.task == "infer" and step.argv == ("infer", "--model", "/models/yolo11n.onnx", "--scenario",
                                                   "single-stream,offline")
    quick = plans.build("l40s", CPU, quick=True, data_detect="/data/fruits", models=("/models/yolo11n.onnx",))
    assert quick.steps[-1].argv[-6:] == ("--limit", "8", "--duration", "2", "--data", "/data/fruits")
    assert 0 < quick.steps[-1].estimate_s < step.estimate_s  # 2 s tests against LoadGen's default 60 s
    assert "--xla" not in plan.with_flags("--xla").steps[-3].argv  # infer trains nothing
    assert budgets.smallest(plan, GPU).steps[-3] == step  # kept whole: nothing to cut
    fitted = budgets.fit(plan, 0.5 * plan.total_s, GPU)
    assert fitted.steps[-3] == step and not any("infer-" in cut for cut in fitted.cuts)


def test_a_budget_cuts_the_detectors_epochs_first_and_refuses_what_cannot_fit():
    plan = plans.build("l40s", GPU)
    budget = 0.5 * plan.total_s
    fitted = budgets.fit(plan, budget, GPU)
    assert fitted.total_s <= budget
    epochs = {s.name: s.epochs for s in fitted.steps}
    assert all(epochs[f"classify-{b}"] == 10 for b in plans.CLASSIFY)  # the classifiers untouched
    assert min(epochs[f"detect-{b}"] for b in plans.DETECT) < 200 and fitted.cuts
    assert all("projected" in s.cut for s in fitted.steps if s.task == "detect" and s.epochs < 200)
    assert budgets.fit(plan, 10 * plan.total_s, GPU) == plan
    with pytest.raises(UserError, match="the smallest l40s plan"):
        budgets.fit(plan, 60, GPU)


@pytest.mark.parametrize(("text", "seconds"), [("45m", 2700), ("1h30m", 5400), ("900s", 900), ("2h", 7200)])
def test_budgets_parse(text, seconds):
    assert plans.parse_budget(text) == seconds


@pytest.mark.parametrize("args,fragment", [
    (["study", "mlperf", "--plan"], "unknown study 'mlperf'"),
    (["study", "l40s", "--plan", "--budget", "0m"], "--budget must be above 0"),
    (["study", "l40s", "--plan", "--budget", "soon"], "--budget takes a duration"),
    (["study", "l40s", "--plan", "--only", "detect-yolo"], "--only: no step detect-yolo"),
    (["study", "l40s", "--resume", REPO / "tests"], "is not a study folder"),
    (["study", "--resume", REPO / "tests"], "is not a study folder"),
    (["study", "--plan"], "STUDY is required"),
    (["study", "l40s", "--plan", "--data-classify", "/no/such/folder"], "--data-classify /no/such/folder: no such folder"),
    (["study", "l40s", "--plan", "--data-detect", "/no/such/folder"], "--data-detect /no/such/folder: no such folder"),
    (["study", "l40s", "--plan", "--only", ""], "--only names no step"),
    (["study", "l40s", "--plan", "--only", " , "], "--only names no step"),
    (["study", "l40s", "--plan", "--model", "/no/such/yolo.onnx"], "--model /no/such/yolo.onnx: no such file or folder"),
    (["study", "leadergpu", "--plan", "--model", REPO / "README.md"], "--model adds a step to the l40s study"),
    (["study", "l40s", "--plan", "--model", REPO / "README.md", "--model", REPO / "datasets" / "README.md"],
     "--model: two files would make the same step infer-readme"),
])
def test_bad_input_is_one_line_and_exit_2(args, fragment):
    assert_one_line_exit_2(cli_in_process(*args), fragment)


def test_plan_prints_every_step_and_the_total_and_runs_nothing(tmp_path):
    result = run_cli("study", "all", "--plan", "--output-dir", tmp_path / "study", "--price", "1.8", "--per", "hour",
                     "--xla", env={**os.environ, "KERAS_HOME": str(tmp_path / "keras")})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("plan: study all, 7 step(s), about ") and "in all" in lines[0]
    assert sum(line.startswith(("  1. ", "  7. ")) for line in lines) == 2
    assert all(line.endswith(" --xla") or "--xla  [" in line for line in lines if re.match(r"  \d\. ", line))
    assert "l40sbench classify --base xception --image-size 299 --epochs 10 --batch-size 16" in result.stdout
    # the preflight: what the estimates rest on, where the data and weights come from, where results go, the cost
    device = next(line for line in lines if line.startswith("  device: the estimates rest on "))
    assert "float32 matmul " in device and " GFLOP/s (" in device
    assert "  classify data: the generated stand-in (made on first use; --data-classify DIR for yours)" in lines
    assert "  detect data: the generated stand-in (made on first use; --data-detect DIR for yours)" in lines
    assert (f"  weights: ImageNet, from Keras' cache ({tmp_path / 'keras' / 'models'}) for none; downloaded on first "
            "use for xception, inceptionv3, vgg19 (random, with a warning, where that fails)") in lines
    assert f"  output: {tmp_path / 'study'}" in lines
    total = float(re.search(r"cost: about (\d+\.\d\d) for the plan's", result.stdout).group(1))
    assert total > 0 and "at 1.8 per hour" in result.stdout
    assert not (tmp_path / "study").exists()


def test_a_budget_that_cannot_fit_says_what_would():
    result = cli_in_process("study", "l40s", "--plan", "--budget", "1m")
    assert_one_line_exit_2(result, "over the budget of 1m")
    assert re.search(r"; (--quick fits \(about [^)]+\)|--only [a-z0-9_,-]+ fits at its least|no step fits it)",
                     result.stderr), result.stderr


def _wait_for(condition, timeout=600):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.5)


@pytest.mark.parametrize("stop", [pytest.param(signal.SIGKILL, marks=pytest.mark.long), signal.SIGTERM])
def test_a_stopped_study_resumes_with_only_its_missing_steps(tmp_path, stop):
    """SIGKILL to the study and its step at once (nothing said, nothing saved), or SIGTERM to the study alone (a
    spot instance taken back): one line naming the folder and --resume, the running step stopped and its record,
    where it wrote one, marked with the signal; --resume runs only what is missing."""
    root = tmp_path / "study"
    steps = "classify-vgg19,classify-xception"
    study = subprocess.Popen([sys.executable, "-m", "l40sbench", "study", "l40s", "--quick", "--only", steps,
                              "--output-dir", str(root)], cwd=REPO, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
    first, second = root / "01-classify-xception", root / "02-classify-vgg19"  # in the plan's order
    try:
        _wait_for(lambda: (second / "log.txt").exists() or study.poll() is not None)
        assert study.poll() is None, study.communicate()
        if stop == signal.SIGKILL:
            os.killpg(study.pid, signal.SIGKILL)  # the study and its running step, at once
        else:
            study.send_signal(signal.SIGTERM)
    finally:
        _, err = study.communicate(timeout=300)
    if stop == signal.SIGTERM:
        assert study.returncode == 130, err[-3000:]
        assert err.splitlines()[-1] == (f"stopped by SIGTERM: the steps finished so far are kept in {root}; "
                                        f"`l40sbench study --resume {root}` runs the rest")
        if (second / "result.json").exists():
            partial = json.loads((second / "result.json").read_text())
            assert partial["complete"] is False and partial["stopped_by"] == "SIGTERM"
    finished = json.loads((first / "result.json").read_text())
    assert finished["complete"] is True
    before = (first / "result.json").stat().st_mtime_ns
    assert_one_line_exit_2(cli_in_process("study", "leadergpu", "--resume", root), "holds study l40s --quick, not leadergpu")
    # the folder's study.json names the study and --quick; plotly blocked, as on the GPU machine without its wheel
    blocked = tmp_path / "blocked" / "plotly"
    blocked.mkdir(parents=True)
    (blocked / "__init__.py").write_text("raise ImportError('plotly is blocked in this test')\n")
    resumed = run_cli("study", "--resume", root,
                      env={**os.environ, "PYTHONPATH": os.pathsep.join([str(blocked.parent), str(REPO)])})
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert ("no report page: plotly does not import here (plotly is blocked in this test); report.md holds every "
            "table and plot") in resumed.stderr.splitlines()
    assert not (root / "report" / "index.html").exists()
    assert "study [1/2] classify-xception: done earlier" in resumed.stderr
    assert "study [2/2] classify-vgg19: ok" in resumed.stderr
    assert (first / "result.json").stat().st_mtime_ns == before  # the finished step was not run again
    assert json.loads((second / "result.json").read_text())["complete"] is True
    state = json.loads((root / "study.json").read_text())
    assert [s["status"] for s in state["steps"]] == ["done earlier", "ok"]
    report = (root / "report.md").read_text()
    assert "| classify-vgg19" in report and "time per epoch, s" in report and "x " in report
    assert "time to first result:" in report and (root / "report" / "report.md").exists()
    assert "cost of the study's work here" in resumed.stdout


@pytest.mark.long
def test_the_leadergpu_study_quick_gives_the_sweep_beside_the_tables_and_its_cost_rows(tmp_path):
    result = run_cli("study", "leadergpu", "--quick", "--price", "1.8", "--per", "hour", "--output-dir", tmp_path / "s")
    assert result.returncode == 0, result.stderr[-3000:]
    report = (tmp_path / "s" / "report.md").read_text()
    assert "| synthetic-leadergpu | lenet batch 4 x1, images/s" in report
    assert "The LeaderGPU study's cost table from this machine's sweep:" in report
    assert "| alexnet | batch 4 x1" in report and "billed per second" in report
    assert "--quick: tiny sizes" in report and (tmp_path / "s" / "report" / "report.md").exists()
    assert "| lenet" in result.stdout  # the verdict prints in the terminal too


def test_a_projection_is_the_first_epoch_plus_the_steady_ones():
    """A first epoch 10x its steady ones (compilation on a GPU): 10 epochs project to first + 9 x steady, not
    10 x the mean; a one-epoch detector's steady epoch comes from its steady steps."""
    from l40sbench.core.projection import projection
    from l40sbench.core.results import TrainResult
    from l40sbench.core.timing import epoch_times
    from l40sbench.study import summary

    three = dataclasses.asdict(TrainResult.from_times(epoch_times([10.0, 1.0, 1.02, 0.98]), 16))
    seconds, ci, how = projection(three, 10)
    assert seconds == pytest.approx(10.0 + 9 * 1.0) and ci[0] < seconds < ci[1]
    assert how == "first epoch + 9 x the mean of 3 steady epochs"
    steps = [65.6, 41.6, 45.7, 43.0, 44.1]
    one = dataclasses.asdict(TrainResult.from_times(epoch_times([sum(steps)]), 16, first_epoch_step_seconds=steps))
    seconds, ci, how = projection(one, 200)
    steady = sum(steps[1:]) / 4 * 5
    assert seconds == pytest.approx(sum(steps) + 199 * steady) and seconds < 200 * sum(steps)
    assert ci[0] < seconds < ci[1] and "the first epoch's steady steps (4 of 5)" in how
    bare = dataclasses.asdict(TrainResult.from_times(epoch_times([30.0]), 16))
    assert projection(bare, 200)[0] == 6000.0
    record = {"task": "detect", "base": "ssd_resnet50_fpn", "train": one,
              "inference": {"mean_ms": 1000.0, "images_timed": 59}}
    (_, row) = [r for r in summary.rows([("detect-ssd", record, "")], []) if "training" in r[1] or "epoch" in r[1]]
    assert row[1].startswith("200-epoch training, s (projected: first epoch + 199 x") and row[5] != "-"
    assert summary.protocol_seconds(record) == pytest.approx(sum(steps) + 199 * steady + 59.0)


# A stand-in step: "measures" an epoch a second, saving its record after each (complete: false), and on Ctrl-C
# saves once more and exits 130, as a run does; with `quick` in its argv it finishes (complete: true) at once.
_STEP = """
import json, sys, time
from pathlib import Path
out = Path(sys.argv[sys.argv.index("--output-dir") + 1])
def save(complete, epochs):
    (out / "result.json").write_text(json.dumps({"complete": complete, "train": {"epochs": epochs}}))
if "quick" in sys.argv:
    save(True, 1)
    sys.exit(0)
epochs = 0
try:
    while True:
        time.sleep(1.0)
        epochs += 1
        save(False, epochs)
except KeyboardInterrupt:
    save(False, epochs)
    sys.exit(130)
"""


def test_the_deadline_on_a_fake_clock_gives_the_running_step_what_is_left_and_starts_none_that_would_cross_it(
        tmp_path):
    """run_plan's arithmetic on an injected clock: each step is handed the seconds left as its timeout; a runner
    that reaches it returns CUT (as the child runner does after its SIGINT) and the step is 'cut'; a step whose
    estimate, at the pace so far, is more than what is left is not started. The real child and its SIGINT: the
    long tier's test below."""
    from l40sbench.study import run as study_run
    from l40sbench.study.plan import Plan, Step

    now = [100.0]
    handed = []

    def runner(argv, folder, timeout):  # a step needs 1 s ("quick") or 50 s ("long") of the fake clock
        need = 1.0 if "quick" in argv else 50.0
        handed.append((folder.name, timeout))
        folder.mkdir(parents=True)
        if need > timeout:
            now[0] += timeout
            (folder / "result.json").write_text(json.dumps({"complete": False}))
            return study_run.CUT
        now[0] += need
        (folder / "result.json").write_text(json.dumps({"complete": True}))
        return 0

    plan = Plan("l40s", (Step("quick-one", "classify", ("quick",), 1.0), Step("long-one", "classify", ("long",), 2.0),
                         Step("too-long", "classify", ("long",), 3600.0)))
    state, lines = {}, []
    outcomes = study_run.run_plan(plan, tmp_path, state, lines.append, runner=runner, deadline=110.0,
                                  clock=lambda: now[0])
    assert [o.status for o in outcomes] == ["ok", "cut", "skipped"]
    assert handed == [("01-quick-one", 10.0), ("02-long-one", 9.0)] and now[0] == 110.0
    assert [o.seconds for o in outcomes] == [1.0, 9.0, None]
    assert outcomes[1].reason == "stopped at the deadline; its partial record is kept (complete: false)"
    assert outcomes[2].reason == "not started: its estimate (1h00m) would cross the deadline (0m00s left)"
    assert [s["status"] for s in state["steps"]] == ["ok", "cut", "skipped"]


def test_a_step_the_kernel_killed_says_so_and_the_study_goes_on(tmp_path):
    """A child ended by SIGKILL has no error of its own (faster_rcnn_resnet50 at 640 px, batch 16, took 24 GB
    on this host and the OOM killer ended it): its row says where it was and the likeliest cause."""
    from l40sbench.study import run as study_run
    from l40sbench.study.plan import Plan, Step

    def runner(argv, folder, timeout):
        folder.mkdir(parents=True)
        if "big" in argv:
            (folder / "log.txt").write_text("training ...\n  epoch 1 step 2/15: loss 4.8098  35.3 s\n")
            return -signal.SIGKILL
        (folder / "result.json").write_text(json.dumps({"complete": True}))
        return 0

    plan = Plan("l40s", (Step("big-one", "detect", ("big",), 1.0), Step("small-one", "classify", ("small",), 1.0)))
    outcomes = study_run.run_plan(plan, tmp_path, {}, lambda line: None, runner=runner)
    assert [o.status for o in outcomes] == ["failed", "ok"]
    assert outcomes[0].reason.startswith("killed by SIGKILL at 'epoch 1 step 2/15: loss 4.8098  35.3 s': most "
                                         "likely the kernel's out-of-memory killer (this host has ")


@pytest.mark.long
def test_a_deadline_cuts_the_running_step_keeping_its_record_and_starts_none_that_would_cross_it(tmp_path):
    from l40sbench.study import run as study_run
    from l40sbench.study.plan import Plan, Step

    def runner(argv, folder, timeout):  # the real child runner, on the stand-in step
        return study_run._run_child([sys.executable, "-c", _STEP, *argv[3:]], folder, timeout)

    plan = Plan("l40s", (Step("quick-one", "classify", ("quick",), 1.0),
                         Step("long-one", "classify", ("long",), 2.0),
                         Step("too-long", "classify", ("long",), 3600.0)))
    state, lines = {}, []
    started = time.perf_counter()
    outcomes = study_run.run_plan(plan, tmp_path, state, lines.append, runner=runner, deadline=started + 4.0)
    elapsed = time.perf_counter() - started
    assert [o.status for o in outcomes] == ["ok", "cut", "skipped"]
    assert elapsed < 4.0 * 1.05 + 30 and elapsed >= 4.0  # the budget + 5 % + 30 s, and not before it
    partial = json.loads((tmp_path / "02-long-one" / "result.json").read_text())
    assert partial["complete"] is False and partial["train"]["epochs"] >= 2  # what it measured, saved on SIGINT
    assert "stopped at the deadline; its partial record is kept (complete: false)" == outcomes[1].reason
    assert outcomes[2].reason.startswith("not started: its estimate") and "would cross the deadline" in outcomes[2].reason
    assert not (tmp_path / "03-too-long").exists()
    assert [s["status"] for s in state["steps"]] == ["ok", "cut", "skipped"]


def test_a_sweep_step_is_set_beside_the_published_rows_and_priced_by_its_fastest_configuration():
    """The verdict's sweep rows and the sweep's cost table, from a hand-made sweep record (the long tier's study
    runs a real one)."""
    from l40sbench.study import summary

    def row(model, batch, devices, rate, status="ok"):
        return {"model": model, "per_device_batch": batch, "devices": devices, "mode": "train", "status": status,
                "images_per_second": rate if status == "ok" else None}

    record = {"task": "synthetic", "stability": {"verdict": "stable"},
              "rows": [row("resnet50", 32, 1, 100.0), row("resnet50", 64, 1, 150.0), row("alexnet", 32, 1, 0, "oom"),
                       row("vgg16", 32, 2, 40.0)]}
    reference = [{"task": "synthetic", "machine": "8x GTX 1080", "rows": [row("resnet50", 64, 1, 300.0)]}]
    table = summary.rows([("sweep", record, ""), ("gone", None, "the step crashed")], reference)
    by_figure = {r[1]: r for r in table}
    assert by_figure["resnet50 batch 64 x1, images/s"][2:5] == ("150.0", "300.0 (8x GTX 1080)", "0.50x")
    assert by_figure["resnet50 batch 32 x1, images/s"][3:5] == ("-", "-")  # no published row of that batch
    assert by_figure["alexnet batch 32 x1"][2] == "oom" and by_figure["alexnet batch 32 x1"][6] == "stable"
    assert table[-1] == ("gone", "-", "no result: the step crashed", "-", "-", "-", "-", "-")
    costs = {r[0]: r for r in summary.sweep_cost_rows([record], 0.5)}
    assert set(costs) == {"resnet50", "vgg16"}  # the oom-only model has no fastest configuration
    assert costs["resnet50"][1:4] == ("batch 64 x1", "150.0", "55m 33s")  # 500,000 images at 150/s
    assert costs["vgg16"][4].startswith("104.17 (billed per second")  # 12,500 s = 208.3 min at 0.5 a minute
    assert summary.sweep_cost_rows([record], None)[0][4] == "-"
    assert summary.cost_line([record], 0.5) == ""  # a sweep-only study's cost is its table


def _given_detector(detector_format, gpus, single_p90, offline):
    """A record of `infer --model` on a detector file, GPU-shaped (`gpus` boards of an L40S or H100)."""
    scenarios = [{"scenario": "single-stream", "runtime": "onnxruntime", "precision": "fp16", "mode": "performance",
                  "early_stopping": {"estimates_ms": {"p90": single_p90}}},
                 {"scenario": "offline", "runtime": "onnxruntime", "precision": "fp16", "mode": "performance",
                  "samples_per_second": offline}]
    return {"task": "detect", "base": "yolo11n", "notes": {"given_model": {}}, "stability": {"verdict": "stable"},
            "model": {"detector_format": detector_format}, "train": {"epochs": 0, "epoch_seconds": []},
            "inference": {"scenarios": scenarios, "mean_ms": 2.0}, "accuracy": {"map_50_95": 0.41},
            "env": {"devices": [{"type": "GPU", "name": f"GPU:{i}", "model": gpus} for i in range(8 if "L40S" in gpus
                                                                                              else 1)]}}


@pytest.mark.parametrize("gpus", ["NVIDIA L40S", "NVIDIA H100 80GB HBM3"])
def test_a_yolo_files_step_stands_beside_mlperfs_yolo_row_and_costs_nothing_of_the_studys_protocol(gpus):
    """The verdict's rows of a detector file's step: MLPerf's terms per runtime, MLPerf v6.0's YOLO11l row in the
    study column for a YOLO export only; the study's cost leaves it out (it trains nothing)."""
    from l40sbench.reference import load
    from l40sbench.study import summary

    mlperf = load("mlperf-v6.0")
    yolo = _given_detector("yolo", gpus, 3.5625, 307.088)
    table = summary.rows([("infer-yolo11n", yolo, "")], [*load("l40s"), *mlperf])
    by_figure = {r[1]: r for r in table}
    single = by_figure["single-stream p90 ms (onnxruntime fp16; LoadGen's early-stopping estimate)"]
    assert single[2:5] == ("3.562", "7.125", "0.50x") and single[6] == "stable"  # 3.5625 / 7.124808
    assert by_figure["offline samples/s (onnxruntime fp16)"][2:5] == ("307.1", "153.5", "2.00x")  # / 153.544
    assert by_figure["mAP@[.5:.95] (this run's test images; MLPerf's on COCO: no ratio)"][2:5] == ("0.410", "0.531", "-")
    assert summary.model_lines([yolo])[0].startswith("infer-* rows of a YOLO export: the study column is MLPerf")
    other = _given_detector("torchvision", gpus, 3.5625, 307.088)
    rows = summary.rows([("infer-frcnn", other, "")], mlperf)
    assert {r[3] for r in rows} == {"-"} and {r[4] for r in rows} == {"-"}
    assert summary.model_lines([yolo, other])[1].startswith("infer-* rows of another detector format: no published")
    assert summary.cost_line([yolo], 1.0) == ""  # nothing of the study's protocol to price
    assert summary.model_lines([]) == []


def test_resume_refuses_a_folder_that_is_not_a_studys_and_a_failed_step_says_why_in_one_line(tmp_path):
    from l40sbench.errors import UserError
    from l40sbench.study import run as study_run

    with pytest.raises(UserError, match="is not a study folder"):
        study_run.read_state(tmp_path)
    (tmp_path / study_run.STATE).write_text("{torn")
    with pytest.raises(UserError, match="cannot read"):
        study_run.read_state(tmp_path)
    (tmp_path / study_run.STATE).write_text('{"kind": "sweep"}')
    with pytest.raises(UserError, match="is not a study's state \\(kind 'sweep'\\)"):
        study_run.read_state(tmp_path)

    log = tmp_path / "log.txt"
    log.write_text("loading ...\nl40sbench: error: --limit 1 is smaller than the number of classes (2)\n")
    assert study_run._last_error(log) == "l40sbench: error: --limit 1 is smaller than the number of classes (2)"
    log.write_text("Traceback (most recent call last):\n  File \"x.py\", line 1\nValueError: a shape mismatch\n")
    assert "ValueError: a shape mismatch" in study_run._last_error(log)
    log.write_text("epoch 1/10\nKilled\n")
    assert study_run._last_error(log) == "Killed"
    assert study_run._last_error(tmp_path / "never_written.txt") == "no output"
