"""MLPerf's response formats, LoadGen's mlperf.conf and the compliance tests (TEST01, TEST04, TEST05): the byte
layouts MLPerf's scripts read, the audit.config files MLCommons ships, the checks their verification makes, and an
audit.config in the working directory recorded as an audit."""

import json
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

from l40sbench.core.reading import read_result_file as read_result
from l40sbench.core.results import ScenarioResult
from l40sbench.loadgen import audits
from l40sbench.loadgen.config import AUDIT_ROUNDS, LoadConfig, Probe, jobs
from l40sbench.loadgen.scenarios import describe
from l40sbench.runtimes.responses import ResponseFormat, classes_of, coco_detections_of, encoder, raw_of
from tests.conftest import assert_audits_pass, assert_one_line_exit_2, cli_in_process

# MLCommons' own files (mlcommons/inference, compliance/), as they ship them, comments left out.
MLCOMMONS_TEST01_RESNET50 = ("*.*.mode = 2\n*.*.accuracy_log_rng_seed = 720381539243781796\n"
                             "*.*.accuracy_log_sampling_target = 4096\n")
MLCOMMONS_TEST04 = "".join(f"*.{s}.mode = 2\n*.{s}.performance_issue_unique = 0\n*.{s}.performance_issue_same = 1\n"
                           f"*.{s}.performance_issue_same_index = 3\n"
                           for s in ("MultiStream", "Offline", "SingleStream", "Server"))
MLCOMMONS_TEST05 = "*.*.test05 = 1\n"
MLCOMMONS_TEST01_YOLO = ("*.*.mode = 2\n*.*.accuracy_log_rng_seed = 720381539243781796\n"
                         "*.*.accuracy_log_sampling_target = 64\n")  # compliance/TEST01/yolo/audit.config


def test_a_classifiers_response_is_its_class_as_one_little_endian_float32():
    respond = encoder(ResponseFormat("class", classes=3))
    outputs = np.array([[0.1, 0.7, 0.2], [0.9, 0.05, 0.05], [0.0, 0.1, 0.9]], np.float32)
    assert respond(outputs, 0, 17) == b"\x00\x00\x80\x3f"  # 1.0f: what accuracy-imagenet.py reads as class 1
    assert respond(outputs, 1, 18) == b"\x00\x00\x00\x00"
    assert respond(outputs, 2, 19) == struct.pack("<f", 2.0)
    # read back as accuracy-imagenet.py reads a log entry: int(np.frombuffer(bytes.fromhex(data), float32)[0])
    logged = [respond(outputs, i, i).hex().upper() for i in range(3)]
    assert [int(np.frombuffer(bytes.fromhex(d), np.float32)[0]) for d in logged] == [1, 0, 2]
    assert classes_of([bytes.fromhex(d) for d in logged]).tolist() == [1, 0, 2]
    # the classifier's output among a converter's several: the one of the classes' width
    assert encoder(ResponseFormat("class", classes=3))({"inner": np.zeros((3, 5)), "probs": outputs}, 2, 0) == \
        struct.pack("<f", 2.0)


def test_a_one_score_models_response_is_every_output_value_as_float32():
    respond = encoder(ResponseFormat("raw"))
    outputs = np.array([[0.25], [-1.5]], np.float16)
    assert respond(outputs, 1, 0) == struct.pack("<f", -1.5)
    assert raw_of([respond(outputs, i, i) for i in range(2)], (1,)).tolist() == [[0.25], [-1.5]]


def _detections(boxes, scores, classes, **extra) -> dict:
    return {"detection_boxes": np.array([boxes], np.float32), "detection_scores": np.array([scores], np.float32),
            "detection_classes": np.array([classes], np.float32), "num_detections": np.array([len(scores)], np.float32),
            **extra}


def test_a_detectors_response_is_7_float32_per_kept_detection_as_accuracy_coco_reads_them():
    # Normalised boxes (the Object Detection API's), the model's class ids through a label map (1 -> 3, 2 -> 1),
    # a detection below the score threshold dropped; the sample is library index 4.
    sizes = ((64, 64),) * 5
    form = ResponseFormat("coco", score_threshold=0.05, sizes=sizes, table=(0, 3, 1))
    outputs = _detections([[0.1, 0.2, 0.5, 0.6], [0, 0, 1, 1]], [0.9, 0.01], [2, 1])
    data = encoder(form)(outputs, 0, 4)
    # index, ymin, xmin, ymax, xmax (normalised by the image's height and width), score, class: 28 bytes
    assert data == struct.pack("<7f", 4, 0.1, 0.2, 0.5, 0.6, 0.9, 1)
    # scaled back by the original's size (the ground truth's; the library image was resized to 64 x 64)
    images = [{"id": i + 1, "height": h, "width": w} for i, (h, w) in enumerate([(10, 10)] * 4 + [(100, 200)])]
    (found,) = coco_detections_of([b""] * 4 + [data], images)
    assert found["image_id"] == 5 and found["category_id"] == 1 and found["score"] == pytest.approx(0.9)
    assert found["bbox"] == pytest.approx([40, 10, 80, 40], abs=1e-4)  # x, y, w, h in the image's pixels
    # Model Garden's outputs: boxes in the resized image's pixels and image_info's scale (here 0.5)
    garden = _detections([[20, 40, 100, 120]], [0.8], [2],
                         image_info=np.array([[[400, 400], [200, 200], [0.5, 0.5], [0, 0]]], np.float32))
    form = ResponseFormat("coco", score_threshold=0.05, sizes=((400, 400),))
    assert garden_bytes(form, garden) == struct.pack("<7f", 0, 0.1, 0.2, 0.5, 0.6, 0.8, 2)
    # no detection kept: an empty response (accuracy-coco.py counts the image as one without results)
    assert encoder(form)(_detections([[0, 0, 1, 1]], [0.01], [1]), 0, 0) == b""
    assert encoder(form)(_detections(np.zeros((0, 4)), [], []), 0, 0) == b""
    assert coco_detections_of([b""], [{"id": 1, "height": 1, "width": 1}]) == []


def test_a_detectors_library_holds_every_image_at_one_size_its_boxes_normalised_to_the_original():
    """LoadGen's library of a detector: each image resized to one square size, aspect not kept (MLPerf's RetinaNet
    library at 800 x 800), so each sample costs the same; a box normalised to the library image is scored in the
    original's pixels."""
    from l40sbench.detect import runtimes as det_runtimes

    images = [np.zeros((1, 30, 50, 3), np.uint8), np.zeros((1, 80, 40, 3), np.uint8)]
    images[1][0, 20:40, 10:30] = 255  # rows 20-40 of 80, columns 10-30 of 40
    library = det_runtimes.library(images, 64)
    assert [image.shape for image in library] == [(1, 64, 64, 3)] * 2 and library[1].dtype == np.uint8
    rows, cols = np.nonzero(library[1][0, :, :, 0] > 127)
    assert (rows.min(), rows.max() + 1, cols.min(), cols.max() + 1) == (16, 32, 16, 48)
    truth = {"images": [{"id": 1, "height": 30, "width": 50}, {"id": 2, "height": 80, "width": 40}]}
    answers = det_runtimes.answers(truth, 0.05, [(64, 64)] * 2, None)
    assert answers.form.sizes == ((64, 64),) * 2
    data = encoder(answers.form)(_detections([[16 / 64, 16 / 64, 32 / 64, 48 / 64]], [0.9], [1]), 0, 1)
    (found,) = coco_detections_of([b"", data], truth["images"])
    assert found["bbox"] == pytest.approx([10, 20, 20, 20], abs=1e-4)


def test_a_yolo_files_library_holds_each_image_at_its_own_size():
    """A YOLO or torchvision file's library: the rows' images as they are (its letterbox is inside each query, as
    MLPerf's YOLO harness hands each sample's own image to Ultralytics), each answer normalised to its own image."""
    from l40sbench.detect import runtimes as det_runtimes

    images = [np.zeros((1, 30, 50, 3), np.uint8), np.zeros((1, 80, 40, 3), np.uint8)]
    truth = {"images": [{"id": 1, "height": 30, "width": 50}, {"id": 2, "height": 80, "width": 40}]}
    work = det_runtimes.workload(Path("unused"), images, {}, truth, 0.05, 1, "fp32", None, decoding={"format": "yolo"})
    assert work.library is None and "its own size" in work.library_note
    assert work.answers.form.sizes == ((30, 50), (80, 40))
    data = encoder(work.answers.form)(_detections([[20 / 80, 10 / 40, 40 / 80, 30 / 40]], [0.9], [1]), 0, 1)
    (found,) = coco_detections_of([b"", data], truth["images"])
    assert found["bbox"] == pytest.approx([10, 20, 20, 20], abs=1e-4)


def garden_bytes(form, outputs) -> bytes:
    return encoder(form)(outputs, 0, 0)


def test_the_suites_audit_configs_are_mlcommons_own_and_each_is_recognised():
    def settings(text):
        return {line for line in text.splitlines() if line and not line.startswith("#")}

    assert settings(audits.config_text("TEST01", "resnet50")) == settings(MLCOMMONS_TEST01_RESNET50)
    assert "*.*.accuracy_log_sampling_target = 256" in audits.config_text("TEST01", "retinanet")
    assert settings(audits.config_text("TEST01", "yolo")) == settings(MLCOMMONS_TEST01_YOLO)
    assert settings(audits.config_text("TEST04", "resnet50")) == settings(MLCOMMONS_TEST04)
    assert audits.config_text("TEST05", "resnet50") is None  # LoadGen reads test05 from mlperf.conf alone
    assert audits.identify(MLCOMMONS_TEST01_RESNET50) == "TEST01"
    assert audits.identify(MLCOMMONS_TEST04) == "TEST04"
    assert audits.identify("# a comment\n" + MLCOMMONS_TEST05) == "TEST05"
    assert audits.identify("*.*.min_duration = 1000\n") == "an audit of min_duration"


def test_an_audit_runs_the_accuracy_run_then_the_baseline_and_each_test_in_turns_in_mlcommons_layout():
    load = LoadConfig(scenarios=("single-stream",), audits=("TEST01", "TEST04"))
    todo = jobs(load, "detect", Probe(p50_ms=10, min_ms=8, images_per_second=100))
    assert [job.tag for job in todo] == [
        "single-stream-b1", "single-stream-b1-audit/results/accuracy",
        *[f"single-stream-b1-audit/{part}" for turn in range(1, AUDIT_ROUNDS + 1)
          for part in (f"results/performance/run_{turn}", f"TEST01/run_{turn}", f"TEST04/run_{turn}")]]
    assert {job.mlperf_model for job in todo} == {"retinanet"}
    assert todo[1].mode == "accuracy" and all(job.mode == "performance" for job in todo[2:])


@pytest.mark.parametrize("task, detector_format, model", [
    ("classify", None, "resnet50"), ("detect", None, "retinanet"), ("detect", "od-api", "retinanet"),
    ("detect", "torchvision", "retinanet"), ("detect", "yolo", "yolo"), ("detect", "yolo-end2end", "yolo")])
def test_a_yolo_export_takes_mlperfs_own_yolo_settings_and_is_not_asked_test04(task, detector_format, model):
    """An Ultralytics export is MLPerf's `yolo` benchmark (mlperf.conf's keys, TEST01's yolo audit.config); MLPerf
    asks TEST04 of ResNet-50 alone: a detector's TEST04 line says so, and its FAIL fails nothing."""
    from l40sbench.loadgen.config import mlperf_model

    assert mlperf_model(task, detector_format) == model
    load = LoadConfig(scenarios=("single-stream", "offline"), audits=("TEST01", "TEST04"))
    todo = jobs(load, task, Probe(p50_ms=10, min_ms=8, images_per_second=100), detector_format)
    assert {job.mlperf_model for job in todo} == {model}
    assert audits.required("TEST01", model) and audits.required("TEST04", model) == (model == "resnet50")
    block = {"test": "TEST04", "scenario": "SingleStream", "verdict": "FAIL", "ratio": 1.129, "bound": 0.1,
             "pairs": [{"ratio": 1.129}], "why": ["past +10 %"], "model": model,
             "required": audits.required("TEST04", model)}
    said = audits.line(block)
    assert said.startswith("TEST04 SingleStream: FAIL, speed 1.129x")
    assert said.endswith(f"(MLPerf does not ask TEST04 of {model}: a detector's NMS costs differ by sample)") == (
        model != "resnet50")
    from l40sbench.report.scenario_tables import audit_lines

    record = {"notes": {"infer_runs": [{"runtimes": ["onnxruntime"]}]},
              "inference": {"audits": [{**block, "runtime": "onnxruntime", "scenario_name": "single-stream"}]}}
    lines, failed = audit_lines(record, load)
    assert lines[-1] == f"  onnxruntime  {said}" and failed == (model == "resnet50")  # the exit code's word


def _logged(folder, scenario="SingleStream", valid=True, **values):
    """A test folder holding a detail log with the keys MLCommons' verification reads."""
    folder.mkdir(parents=True)
    entries = {"effective_scenario": scenario, "result_validity": "VALID" if valid else "INVALID", **values}
    if not valid:
        entries["result_invalid_reason"] = "Reduce expected latency so the loadgen pre-generates more queries."
    (folder / "mlperf_log_detail.txt").write_text("".join(
        f":::MLLOG {json.dumps({'key': key, 'value': value})}\n" for key, value in entries.items()))
    return folder


def _turns(tmp_path, test, pairs, scenario="SingleStream", field="early_stopping_latency_ss"):
    base = [_logged(tmp_path / "results" / f"run_{i}", scenario, **{field: a}) for i, (a, _) in enumerate(pairs)]
    audited = [_logged(tmp_path / test / f"run_{i}", scenario, **{field: b}) for i, (_, b) in enumerate(pairs)]
    return base, audited


@pytest.mark.parametrize("test, pairs, verdict", [
    # single-stream: the early-stopping latency in ns, read as a rate (1e9 / ns): lower latency, faster
    ("TEST04", [(10e6, 8.5e6), (10e6, 8.8e6)], "FAIL"),   # the same sample 15 % faster: a cache
    ("TEST04", [(10e6, 11e6), (10e6, 12e6)], "PASS"),     # slower is no caching
    ("TEST05", [(10e6, 10.3e6), (10e6, 9.8e6)], "PASS"),  # within 5 %
    ("TEST05", [(10e6, 10.7e6), (10e6, 10.6e6)], "FAIL"),
    ("TEST05", [(0.1e6, 0.115e6), (0.1e6, 0.112e6)], "PASS"),  # at or under 0.2 ms MLCommons relaxes to 20 %
])
def test_the_speed_check_is_mlcommons_on_the_median_of_the_pairs(tmp_path, test, pairs, verdict):
    block = audits.check(test, *_turns(tmp_path, test, pairs))
    assert block["verdict"] == verdict, block
    assert len(block["pairs"]) == 2 and block["scenario"] == "SingleStream"
    assert audits.line(block).startswith(f"{test} SingleStream: {verdict}, speed ")


def test_an_offline_audit_compares_samples_per_second_and_an_invalid_run_fails_saying_why(tmp_path):
    base, audited = _turns(tmp_path, "TEST04", [(100.0, 104.0)], "Offline", "result_samples_per_second")
    assert audits.check("TEST04", base, audited)["verdict"] == "PASS"
    shutil.rmtree(base[0])
    _logged(base[0], "Offline", valid=False, result_samples_per_second=100.0)
    block = audits.check("TEST04", base, audited)
    assert block["verdict"] == "FAIL" and "is not VALID for LoadGen (Reduce expected latency" in block["why"][0]


def test_test01_compares_each_sampled_response_whole_with_the_accuracy_runs(tmp_path):
    base, audited = _turns(tmp_path, "TEST01", [(10e6, 10.2e6)])
    accuracy = tmp_path / "accuracy.json"
    accuracy.write_text(json.dumps([{"seq_id": i, "qsl_idx": i, "data": f"0000803F{i:02X}"} for i in range(4)]))
    sampled = audited[0] / "mlperf_log_accuracy.json"
    sampled.write_text(json.dumps([{"seq_id": 9, "qsl_idx": 2, "data": "0000803F02"}]))
    passed = audits.check("TEST01", base, audited, accuracy)
    assert passed["verdict"] == "PASS" and passed["responses"][0]["matched"] == 1
    # the first byte the same, the rest not: MLCommons' default (--dtype byte) compares the first byte; the suite all
    sampled.write_text(json.dumps([{"seq_id": 9, "qsl_idx": 2, "data": "0000803F03"}]))
    failed = audits.check("TEST01", base, audited, accuracy)
    assert failed["verdict"] == "FAIL" and "1 of 1 sampled responses differ" in failed["why"][0]
    # performance mode answering nothing (what the suite did before): every response empty, a FAIL
    sampled.write_text(json.dumps([{"seq_id": 9, "qsl_idx": 2, "data": ""}]))
    assert "1 empty" in audits.check("TEST01", base, audited, accuracy)["why"][0]
    # the accuracy run did not finish: no log to compare with, a FAIL that says so
    sampled.write_text(json.dumps([{"seq_id": 9, "qsl_idx": 2, "data": "0000803F02"}]))
    missing = audits.check("TEST01", base, audited, None)
    assert missing["verdict"] == "FAIL" and "1 of samples the accuracy run did not log" in missing["why"][0]


@pytest.mark.parametrize("args, fragment", [
    (("--audit", "TEST02"), "unknown audit TEST02: choose from TEST01, TEST04, TEST05"),
    (("--audit", "TEST01", "--mode", "accuracy"), "--audit runs its own accuracy and performance tests"),
    (("--audit", "TEST04", "--scenario", "server", "--find-max-qps"), "--audit checks tests at a fixed rate"),
    (("--audit", "TEST04", "--audit-rounds", "0"), "--audit-rounds must be 1 to 50, got 0"),
    (("--audit-rounds", "5"), "--audit-rounds goes with --scenario"),
])
def test_bad_audit_flags_are_one_line_and_write_nothing(args, fragment, tiny_runs):
    before = sorted(p.name for p in tiny_runs["vgg19"].iterdir())
    assert_one_line_exit_2(cli_in_process("infer", tiny_runs["vgg19"], "--runtimes", "onnxruntime", *args), fragment)
    assert sorted(p.name for p in tiny_runs["vgg19"].iterdir()) == before


def test_an_audit_on_a_run_folder_without_a_model_is_one_line(tiny_runs, tmp_path):
    run = shutil.copytree(tiny_runs["vgg19"], tmp_path / "run")
    (run / "model.keras").unlink()
    assert_one_line_exit_2(cli_in_process("infer", run, "--runtimes", "onnxruntime", "--audit", "all"),
                           "holds no fine-tuned model")
    assert not (run / "loadgen").exists()


def test_an_audit_config_in_the_working_directory_is_said_and_recorded_as_that_audit(tiny_runs, tmp_path, monkeypatch):
    """MLCommons' procedure: its audit.config beside the command. LoadGen reads it (the test's log shows the same
    sample issued every time); the call says so in one line and records the test under inference.audits, never
    as a result; the MLPerf library map and LoadGen's logs are where MLCommons' scripts look. The test names
    LoadGen's mlperf.conf (ResNet-50's), each setting the suite changed beside MLPerf's, and the seeds."""
    run = shutil.copytree(tiny_runs["vgg19"], tmp_path / "run")
    (record,) = read_result(run / "result.json")[:1]
    results_before = record["inference"].get("scenarios") or []
    here = tmp_path / "cwd"
    here.mkdir()
    (here / "audit.config").write_text(MLCOMMONS_TEST04)
    monkeypatch.chdir(here)
    result = cli_in_process("infer", run, "--runtimes", "onnxruntime", "--scenario", "single-stream",
                            "--duration", "0.2", "--min-queries", "10")
    assert result.returncode == 0, result.stderr
    said = [line for line in result.stderr.splitlines() if "audit.config" in line and "holds TEST04" in line]
    assert len(said) == 1 and "recorded as TEST04" in said[0], result.stderr
    (record,) = read_result(run / "result.json")[:1]
    assert record["inference"]["scenarios"] == results_before  # no result from an audited test
    (audit,) = record["inference"]["audits"]
    assert audit["test"] == "TEST04" and audit["runtime"] == "onnxruntime" and "working directory" in audit["source"]
    folder = run / "loadgen" / "onnxruntime-fp32" / "single-stream-b1-audit" / "TEST04" / "run_1"
    assert audit["log_dir"] == str(folder)
    detail = (folder / "mlperf_log_detail.txt").read_text()
    assert '"key": "effective_performance_issue_same", "value": true' in detail
    assert (run / "loadgen" / "val_map.txt").read_text().splitlines()[0] in ("sample-00000 0", "sample-00000 1")
    assert (here / "audit.config").is_file()  # the user's file stays where they put it

    entry = audit["entry"]
    conf = entry["mlperf_conf"]
    assert conf["model"] == "resnet50" and conf["conf"] == "LoadGen's mlperf.conf, resnet50"
    assert conf["overrides"]["min_duration_ms"] == {"mlperf": 600000, "ours": 200}
    assert conf["overrides"]["min_query_count"]["ours"] == 10
    assert conf["overrides"]["performance_sample_count_override"] == {"mlperf": 1024, "ours": 8}
    assert conf["seeds"] == {"qsl_rng_seed": 2085463073848966840, "sample_index_rng_seed": 2747215439041700203,
                             "schedule_rng_seed": 16159082839903944936}
    assert entry["mlperf"]["checks"]["duration"]["rule"] == "the test's minimum duration is at least 600 s"
    # LoadGen's verdict on 10 queries depends on their spread: the line is read for a VALID one
    line = describe(ScenarioResult(**{**entry, "result": "VALID", "reasons": ()}))
    assert line.startswith("loadgen onnxruntime single-stream: VALID for LoadGen; shorter than MLPerf's 600 s minimum")


def test_the_audit_configs_a_killed_child_left_are_removed_and_nothing_else(tmp_path):
    from l40sbench.loadgen.audit_runs import remove_audit_configs

    left = tmp_path / "single-stream-b1-audit" / "TEST04" / "run_1" / "audit.config"
    left.parent.mkdir(parents=True)
    left.write_text(MLCOMMONS_TEST04)
    logs = left.with_name("mlperf_log_detail.txt")
    logs.write_text("")
    users = tmp_path / "audit.config"  # not the suite's: never touched
    users.write_text(MLCOMMONS_TEST04)
    remove_audit_configs(tmp_path)
    assert not left.exists() and logs.is_file() and users.is_file()


@pytest.mark.long
def test_the_audit_config_the_suite_wrote_is_gone_after_a_stop(tiny_runs, tmp_path):
    """Ctrl-C while TEST04 runs, its audit.config beside its logs: exit 130 and no audit.config left anywhere."""
    from tests.test_loadgen import interrupted_when

    run = shutil.copytree(tiny_runs["vgg19"], tmp_path / "run")
    rest = interrupted_when(lambda: bool(list(run.glob("loadgen/*/*-audit/TEST04/run_1/audit.config"))),
                            "infer", str(run), "--runtimes", "onnxruntime", "--scenario", "single-stream",
                            "--audit", "TEST04", "--duration", "20", limit_s=300)
    assert "Traceback" not in rest
    assert not list(run.rglob("audit.config"))


@pytest.mark.long
@pytest.mark.serial
def test_every_audit_passes_on_the_tiny_classifier(tiny_runs, tmp_path):
    """`--audit all` on the tiny classifier, single-stream and offline: every test PASSes (5 turns of 3 s tests,
    the verdict on the median of the pairs), or fails on speed alone as a shared host makes it (assert_audits_pass)."""
    run = shutil.copytree(tiny_runs["vgg19"], tmp_path / "run")
    result = cli_in_process("infer", run, "--runtimes", "onnxruntime", "--audit", "all", "--audit-rounds", "5",
                            "--duration", "3")
    (record,) = read_result(run / "result.json")[:1]
    checked = record["inference"]["audits"]
    assert len(checked) == 6 and {a["test"] for a in checked} == {"TEST01", "TEST04", "TEST05"}
    assert_audits_pass(checked, result.returncode)
    for audit in (a for a in checked if a["test"] == "TEST01"):
        assert all(seen["sampled"] and seen["matched"] == seen["sampled"] for seen in audit["responses"])


@pytest.mark.long
@pytest.mark.serial
def test_a_detect_runs_responses_are_the_same_in_both_modes(tiny_runs, tmp_path):
    """TEST01 on the tiny detect run's SavedModel (Model Garden's boxes, scaled by its image_info): every sampled
    response of the performance run equals the accuracy run's, whole. Its speed is not asserted: TensorFlow's
    SavedModel on two shared cores moved 0.7-1.3x between turns (tests/test_given_detector.py's audits run every
    test's speed on a detector)."""
    run = shutil.copytree(tiny_runs["ssd_resnet50_fpn"], tmp_path / "run")
    result = cli_in_process("infer", run, "--runtimes", "savedmodel", "--audit", "TEST01", "--audit-rounds", "1",
                            "--scenario", "single-stream", "--duration", "1")
    assert result.returncode in (0, 1), result.stderr
    (record,) = read_result(run / "result.json")[:1]
    (audit,) = record["inference"]["audits"]
    assert audit["responses"][0]["sampled"] and audit["responses"][0]["matched"] == audit["responses"][0]["sampled"]
    (entry,) = [e for e in record["inference"]["scenarios"] if e["mode"] == "performance"]
    assert entry["library"]["size_hw"] == [128, 128] and "800 x 800" in entry["library"]["made"]
