"""What bounds a run: the verdict and sizing from given rates (CPU and GPU shapes), the harness's passes over
stand-in parts, the tiny runs' blocks, and the input flags' bad values."""

from __future__ import annotations

import json

import pytest

from l40sbench.core import bound
from l40sbench.core.task import BoundParts
from l40sbench.harness import bound as harness_bound
from tests.conftest import assert_one_line_exit_2, cli_in_process

# GPU-shaped rates (images/s): an L40S fine-tuning xception fed by a few vCPUs, an H100 fed by a large host.
L40S_STARVED = {"input_rate": 220.0, "step_rate": 1500.0, "steady_rate": 214.0}
H100_FED = {"input_rate": 4800.0, "step_rate": 2100.0, "steady_rate": 2050.0}


def test_an_accelerator_fed_too_slowly_is_input_bound_and_the_sizing_line_says_how_many_cores_would_feed_it():
    said = bound.verdict(**L40S_STARVED, shared_cores=False)
    assert said["verdict"] == "input" and said["expected_images_per_second"] == 220.0
    sizing = bound.sizing(per_core_rate=55.0, all_threads_rate=220.0, host_threads=4, step_rate=1500.0)
    assert sizing["cores_to_feed"] == 28  # 1500 / 55 = 27.3, rounded up
    assert sizing["line"] == ("the input path feeds 55 images/s per core; the step takes 1,500 images/s: about 28 "
                              "cores keep this device fed (this host has 4: 220 images/s on all of them)")


def test_an_accelerator_fed_fast_enough_is_compute_bound_and_one_that_loses_its_overlap_says_how_much():
    assert bound.verdict(**H100_FED, shared_cores=False)["verdict"] == "compute"
    assert bound.sizing(1200.0, 4800.0, 4, 2100.0)["line"].endswith("about 2 cores keep this device fed")
    assert bound.sizing(3000.0, 4800.0, 4, 2100.0)["line"].endswith("about 1 core keeps this device fed")
    lost = bound.verdict(4800.0, 2100.0, 1400.0, shared_cores=False)
    assert lost["verdict"] == "neither: overlap lost 33 %" and lost["slower_stage"] == "compute"


def test_on_a_cpu_the_stages_share_the_cores_so_their_times_add_and_the_larger_share_bounds():
    cached = bound.verdict(input_rate=5000.0, step_rate=160.0, steady_rate=150.0, shared_cores=True)
    assert cached["verdict"] == "compute" and cached["expected_images_per_second"] == pytest.approx(155.04, abs=0.01)
    generator = bound.verdict(input_rate=20.0, step_rate=160.0, steady_rate=17.5, shared_cores=True)
    assert generator["verdict"] == "input" and generator["input_share_percent"] == pytest.approx(88.9, abs=0.1)
    assert bound.verdict(20.0, 160.0, 9.0, True)["verdict"].startswith("neither: 49 % of the steady time")
    with pytest.raises(ValueError, match="rates must be positive"):
        bound.verdict(0.0, 160.0, 9.0, True)


def test_a_path_whose_threads_the_suite_does_not_set_says_whether_this_host_feeds_the_device():
    assert bound.sizing(None, 9000.0, 16, 2100.0)["line"].endswith("the input keeps this device fed")
    assert bound.sizing(None, 900.0, 16, 2100.0)["line"].endswith("does not keep this device fed")
    assert bound.sizing(None, 900.0, 16, 2100.0)["cores_to_feed"] is None


class Parts:
    """Stand-in parts: batches of plain numbers, a step that counts; restore() recorded."""

    def __init__(self, batches_per_epoch=3, fail_step=False):
        self.calls = {"steps": 0, "restored": 0, "threads": []}
        self.fail_step = fail_step
        self.batches_per_epoch = batches_per_epoch

    def epochs(self, threads):
        self.calls["threads"].append(threads)
        while True:
            yield ((4, [i] * 4) for i in range(self.batches_per_epoch))

    def step(self, batch):
        if self.fail_step:
            raise RuntimeError("the step failed")
        self.calls["steps"] += 1
        return sum(batch)

    def restore(self):
        self.calls["restored"] += 1

    def parts(self, threads, several=""):
        return BoundParts(input_path="files", batches=self.epochs, place=None if several else list,
                          step=None if several else self.step, batches_per_epoch=self.batches_per_epoch,
                          threads=threads, restore=self.restore, step_why=several)


TRAIN = {"steady_epoch_seconds": 0.5, "first_epoch_seconds": 2.0, "first_epoch_step_seconds": []}


def measure(parts, train=TRAIN, host_threads=4, shared=True):
    return harness_bound.measure(parts, train, images_per_epoch=12, global_batch=4, shared_cores=shared,
                                 host_threads=host_threads, sync=lambda *_: None, log=lambda _: None)


def test_the_harness_times_the_run_pipeline_then_one_thread_and_all_then_the_step_and_puts_the_weights_back():
    stand_in = Parts(batches_per_epoch=3)
    block = measure(stand_in.parts(threads=2))
    assert block["measured"] and block["input_path"] == "files" and block["input_threads"] == 2
    assert stand_in.calls["threads"] == [None, 1, 4]  # the run's own pipeline first, then the sizing passes
    assert set(block["input_images_per_second_by_threads"]) == {"1", "2", "4"}
    assert block["batches_timed"] >= harness_bound.MIN_BATCHES and block["steps_timed"] == 4
    assert stand_in.calls["steps"] == 4 + harness_bound.WARM_STEPS and stand_in.calls["restored"] == 1
    assert block["steady_images_per_second"] == 24.0 and block["steady_from"] == "the steady epochs (2..N)"
    assert block["verdict"] in ("input", "compute") or block["verdict"].startswith("neither")
    assert block["sizing"]["per_core_images_per_second"] == block["input_images_per_second_by_threads"]["1"]
    assert block["rule"] == bound.RULE and block["seconds"] > 0 and block["steady_epochs_of_time"] > 0
    assert len(bound.lines(block)) == 2 and bound.lines(block)[1].startswith("sizing: the input path feeds")


def test_a_path_without_threads_is_timed_once_and_a_failing_step_still_puts_the_weights_back():
    stand_in = Parts()
    block = measure(stand_in.parts(threads=None))
    assert stand_in.calls["threads"] == [None] and block["sizing"]["per_core_images_per_second"] is None
    failing = Parts(fail_step=True)
    with pytest.raises(RuntimeError, match="the step failed"):
        measure(failing.parts(threads=None))
    assert failing.calls["restored"] == 1


def test_a_one_epoch_run_is_judged_on_its_steps_and_a_run_that_cannot_be_split_says_why():
    one_epoch = {"steady_epoch_seconds": None, "first_epoch_seconds": 9.0, "first_epoch_step_seconds": [5, 1, 2, 1]}
    assert harness_bound.steady_rate(one_epoch, 12, 4) == (4.0, "the first epoch's steps after its first "
                                                                "(one epoch ran)")
    assert measure(Parts().parts(None), train={"steady_epoch_seconds": None})["why"] == "no epoch was timed"
    refused = harness_bound.not_measured("--no-bound")
    assert refused == {"measured": False, "why": "--no-bound"}
    assert bound.lines(refused) == ["bound: not measured (--no-bound)"]
    assert bound.short(refused) == "-" and bound.short({"measured": True, "verdict": "neither: x"}) == "neither"


def test_the_tiny_runs_record_what_bounds_them_and_print_it_in_two_lines(tiny_runs):
    for name in ("vgg19", "vgg19-jax"):
        block = json.loads((tiny_runs[name] / "result.json").read_text())["bound"]
        assert block["measured"] and block["input_path"] == "cached" and block["input_threads"] is None, name
        assert min(block["input_images_per_second"], block["step_images_per_second"],
                   block["steady_images_per_second"]) > 0
        assert block["shared_cores"] is True and block["steady_from"] == "the steady epochs (2..N)"
    out = tiny_runs.output("vgg19").out
    assert "bound by " in out and "(cached input): input alone" in out and "\nsizing: the input path feeds" in out
    detector = json.loads((tiny_runs["ssd_resnet50_fpn"] / "result.json").read_text())["bound"]
    assert detector["measured"] and detector["input_path"] == "parser" and detector["step_from"] == "timed alone"
    assert detector["steady_from"] == "the first epoch's steps after its first (one epoch ran)"  # 1 epoch on a CPU
    assert set(detector["input_images_per_second_by_threads"]) >= {"1"}  # Model Garden's parser at one thread too
    assert detector["sizing"]["per_core_images_per_second"] == detector["input_images_per_second_by_threads"]["1"]


@pytest.mark.parametrize("args, fragment", [
    (("--input-threads", "0"), "give 1 to"),
    (("--input-threads", "-3"), "give 1 to"),
    (("--input-threads", "many"), "not a whole number of threads"),
    (("--input", "files", "--data", "tfds:mnist"), "a TFDS set has none"),
    (("--input", "generator", "--devices", "2"), "--input generator feeds one device"),
    (("--input", "disk"), "invalid choice"),
    (("--input-threads", "2"), "--input cached is batched by Keras from memory"),
])
def test_bad_input_flags_are_one_line_and_exit_2_before_any_folder(tmp_path, args, fragment):
    out = tmp_path / "run"
    assert_one_line_exit_2(cli_in_process("classify", "--output-dir", out, *args), fragment)
    assert not out.exists()


def test_more_input_threads_than_four_per_core_is_refused_on_every_command(tmp_path):
    from l40sbench.core.env import host_threads

    too_many = str(4 * host_threads() + 1)
    for command in ("classify", "detect"):
        assert_one_line_exit_2(cli_in_process(command, "--input-threads", too_many, "--output-dir", tmp_path / "r",
                                              *(("--input", "files") if command == "classify" else ())),
                               f"{too_many} threads: give 1 to {4 * host_threads()}")
    assert not (tmp_path / "r").exists()


def test_gpu_shaped_records_give_the_study_and_the_report_their_bound_by_column_and_sizing(tiny_runs):
    """An L40S its 16-thread host cannot feed (input at 0.4x the step) and an H100 whose host feeds it (2.5x)."""
    from l40sbench.report.columns import TRAIN_COLUMNS, input_notes
    from l40sbench.study import summary
    from tests.gpu_records import H100, L40S, gpu_host

    tiny = json.loads((tiny_runs["vgg19"] / "result.json").read_text())
    starved, fed = gpu_host(tiny, L40S, boards=1, input_over_step=0.4), gpu_host(tiny, H100, input_over_step=2.5)
    assert starved["bound"]["verdict"] == "input" and fed["bound"]["verdict"] == "compute"
    assert starved["bound"]["sizing"]["cores_to_feed"] == 40  # 16 threads feed 0.4 of the step: 16 / 0.4 cores
    steps = [("classify-vgg19 L40S", starved, ""), ("classify-vgg19 H100", fed, "")]
    rows = {row[0]: row for row in summary.rows(steps, []) if row[1].startswith("time per epoch")}
    assert summary.HEAD[-1] == "bound by"
    assert rows["classify-vgg19 L40S"][-1] == "input" and rows["classify-vgg19 H100"][-1] == "compute"
    assert "(files input; the study did not state its own)" in rows["classify-vgg19 L40S"][1]
    sizing = summary.sizing_lines(steps)
    assert sizing[0].startswith("- classify-vgg19 L40S: the input path feeds") and sizing[0].endswith(
        "about 40 cores keep this device fed (this host has 16: "
        f"{starved['bound']['input_images_per_second']:,.0f} images/s on all of them); bound by its input: a faster "
        "GPU would not train it faster")
    assert not sizing[1].endswith("faster")
    cells = {name: cell for name, cell in TRAIN_COLUMNS}
    assert (cells["input"](starved), cells["bound by"](starved), cells["bound by"](fed)) == ("files", "input", "compute")
    notes = input_notes([("L40S", starved), ("H100", fed)])
    assert len(notes) == 2 and "vgg19 [L40S] is bound by its input, not its device: a faster GPU" in notes[0]


def test_classify_times_each_test_file_to_its_label_beside_the_models_call_and_prints_both(tiny_runs):
    """The tiny run's probe: the model's call (the record's figure) and the file's way to a label in one rotation;
    the stages' means in the record, one summary line."""
    inference = json.loads((tiny_runs["vgg19"] / "result.json").read_text())["inference"]
    stages = inference["stages_mean_ms"]
    assert set(stages) == {"model", "decode", "resize", "file_to_label"} and min(stages.values()) > 0
    assert stages["model"] == pytest.approx(inference["mean_ms"])
    line = next(line for line in tiny_runs.output("vgg19").out.splitlines() if line.startswith("file to label: "))
    assert f"the model's call alone: {stages['model']:.3f} ms" in line
    rows = [row for row in inference["runtimes"] if row["status"] == "ok"]
    assert len(rows) >= 2  # tf and savedmodel at least; every installed runtime where it exported
    for row in rows:  # every runtime's child timed the files' way to a label in its probe's rotation
        assert set(row["inference"]["stages_mean_ms"]) == set(stages), row["runtime"]
        assert row["inference"]["stages_mean_ms"]["model"] == pytest.approx(row["inference"]["mean_ms"])
    assert "| file to label ms" in tiny_runs.output("vgg19").out


def _large_jpegs(root):
    """A two-class set of 2400 x 1600 noise JPEGs (about 1 MB each: a costly decode), 4 train and 2 test a class."""
    import cv2
    import numpy as np

    rng = np.random.default_rng(0)
    for split, count in (("train", 4), ("test", 2)):
        for name in ("cats", "dogs"):
            folder = root / split / name
            folder.mkdir(parents=True)
            for i in range(count):
                pixels = (rng.random((1600, 2400, 3)) * 255).astype(np.uint8)
                cv2.imwrite(str(folder / f"{i}.jpg"), pixels, [cv2.IMWRITE_JPEG_QUALITY, 95])
    return root


@pytest.mark.long
@pytest.mark.serial
def test_on_this_cpu_the_cached_run_is_compute_bound_and_large_jpegs_through_one_generator_thread_input_bound(
        tmp_path, capsys):
    """The acceptance's two runs, real timing, alone: vgg19 at 32 px from the cache (16 batches an epoch; with 8,
    a fit epoch's own overheads read as a share of neither stage) bound by its
    step; the same model fed 2400 x 1600 JPEGs by one Python worker (about 40 ms a decode against a step of
    a few ms an image), bound by its input (the verdict, where the run's steady epochs held within 1.25x: the
    steady rate and the passes are taken at different moments, and this host slows by half for a minute now
    and then; the slower stage always); each run's file-to-label time at least its model's call, on every
    runtime of the second (a 1 MB JPEG's decode alone outlasts vgg19 at 32 px)."""
    from l40sbench import cli

    common = ["classify", "--base", "vgg19", "--image-size", "32", "--batch-size", "4", "--weights", "none",
              "--epochs", "4"]
    runs = {"cached": [*common, "--limit", "64"],
            "generator": [*common, "--data", _large_jpegs(tmp_path / "jpegs"), "--input", "generator",
                          "--input-threads", "1", "--runtimes", "all"]}
    for name, argv in runs.items():
        out = tmp_path / name
        assert cli.main([*map(str, argv), "--output-dir", str(out)]) == 0, capsys.readouterr().err
        record = json.loads((out / "result.json").read_text())
        block = record["bound"]
        assert block["input_path"] == name
        expected = "compute" if name == "cached" else "input"
        assert block["slower_stage"] == expected, (name, bound.lines(block))  # 20x apart: no host moves that
        steady = record["train"]["epoch_seconds"][1:]
        held = max(steady) / min(steady) < 1.25  # this host halves its speed for a minute now and then
        assert block["verdict"] == expected or not held, (name, bound.lines(block), steady)
        timed = [r for r in record["inference"]["runtimes"] if (r.get("inference") or {}).get("mean_ms")]
        for row in [record, *timed]:  # tf's probe, then every runtime's row that timed
            stages = row["inference"]["stages_mean_ms"]
            assert stages["file_to_label"] >= stages["model"], (row.get("runtime"), stages)
        printed = capsys.readouterr().out
        assert f"bound by {block['verdict']} ({name} input)" in printed and "\nsizing: " in printed
    assert block["input_threads"] == 1 and block["sizing"]["cores_to_feed"] > 1


def test_eight_gpus_stepping_together_are_judged_on_their_input_alone_and_the_step_it_implies():
    """Replicas that step together cannot be timed one batch alone: the step's rate is inferred from the input
    alone and the steady rate (an accelerator: the run goes at its slower stage; shared cores: times add)."""
    assert bound.inferred_step(3000.0, 1200.0, shared_cores=False) == 1200.0  # clearly below the input: the step
    assert bound.inferred_step(3000.0, 2900.0, shared_cores=False) is None  # at the input's rate: input-bound
    assert bound.inferred_step(300.0, 100.0, shared_cores=True) == pytest.approx(150.0)  # 1/100 - 1/300
    said = bound.verdict_without_step(3000.0, 1200.0, shared_cores=False)
    assert said["verdict"] == "compute" and said["step_inferred"] is True
    starved = bound.verdict_without_step(3000.0, 2900.0, shared_cores=False)
    assert starved["verdict"] == "input" and starved["input_share_percent"] is None
    stand_in = Parts()
    block = measure(stand_in.parts(threads=4, several="8 replicas step together under MirroredStrategy"),
                    shared=False)
    assert block["steps_timed"] == 0 and stand_in.calls["steps"] == 0 and stand_in.calls["restored"] == 1
    assert block["step_from"] == ("inferred from the input alone and the steady rate (8 replicas step together "
                                  "under MirroredStrategy)")
    assert block["verdict"] in ("input", "compute") and block["step_inferred"]
    assert "step not timed alone" in bound.lines(block)[0] or " inferred, steady" in bound.lines(block)[0]


def test_compare_sets_a_runs_epochs_only_beside_a_run_of_the_same_input_path(tiny_runs):
    """A cached run's epochs and a files run's are not one figure; the study, whose path is not stated, matches
    either."""
    from l40sbench import reference
    from l40sbench.report import compare

    cached = json.loads((tiny_runs["vgg19"] / "result.json").read_text())
    files = {**cached, "config": {**cached["config"], "input": "files"},
             "bound": {**cached["bound"], "input_path": "files"}}
    result = compare.compare([cached], [files])
    assert result.only_baseline == ("classify vgg19 batch 4 devices 1 precision fp32 image size 32 backend tensorflow",)
    assert result.only_new == ("classify vgg19 batch 4 devices 1 precision fp32 image size 32 backend tensorflow "
                               "input files",)
    for mine in (cached, files):
        study = compare.compare(reference.load("l40s"), [{**mine, "config": {**mine["config"], "batch_size": 16}}])
        assert any(r.line.startswith("classify vgg19") and r.figure == "epoch s (wall / epochs)" for r in study.rows)


def test_the_step_alone_stops_after_a_quarter_of_a_steady_epoch_and_at_least_four_steps(monkeypatch):
    """A detector's epoch on a CPU is a few steps of a minute: an epoch of steps alone would double its run."""
    class Second:  # every reading of every clock: one second later
        def start(self):
            pass

        def elapsed(self):
            return 1.0

    monkeypatch.setattr(harness_bound, "Stopwatch", Second)
    stand_in = Parts(batches_per_epoch=10)
    slow = measure(stand_in.parts(threads=None), train={"steady_epoch_seconds": 40.0})  # 10 s budget: 10 steps
    assert slow["steps_timed"] == 10 and slow["batches_timed"] == 10
    quick = measure(Parts(batches_per_epoch=10).parts(threads=None), train={"steady_epoch_seconds": 4.0})
    assert quick["steps_timed"] == harness_bound.MIN_BATCHES  # a 1 s budget: the floor of 4 steps
