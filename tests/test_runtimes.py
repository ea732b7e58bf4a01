"""Inference runtimes: the fine-tuned model exported by each library, timed in a child, scored against tf."""

import json

import numpy as np
import pytest

from l40sbench import cli
from l40sbench.errors import UserError
from l40sbench.harness.infer import merge
from l40sbench.runtimes import agreement, registry
from tests.conftest import assert_one_line_exit_2, cli_in_process, run_cli

TINY = ["--base", "vgg19", "--image-size", "32", "--limit", "8", "--batch-size", "4", "--epochs", "1",
        "--weights", "none"]
OTHERS = ("savedmodel", "onnxruntime", "openvino", "litert")


def _rows(result: dict) -> dict:
    return {row["runtime"]: row for row in result["inference"]["runtimes"]}


@pytest.fixture(scope="module")
def every_runtime(tiny_runs):
    """The suite's tiny classify run, timed on every installed runtime (tests/conftest.py)."""
    out = tiny_runs["vgg19"]
    return out, json.loads((out / "result.json").read_text())


def test_every_runtime_agrees_with_tf_on_a_tiny_classify_run(every_runtime):
    out, result = every_runtime
    rows = _rows(result)
    assert list(rows) == ["tf", *OTHERS]  # the CI installs the [runtimes] extra: all must be there
    timed = result["dataset"]["test_images"] - result["config"]["warmup"]
    assert rows["tf"]["inference"]["times_ms"] == result["inference"]["times_ms"]  # tf's row is the run's probe
    for name, row in rows.items():
        assert row["status"] == "ok", (name, row["reason"])
        assert row["precision"] == "fp32" and row["threads"] >= 1 and row["version"]
        assert row["device"] == "CPU", name  # every row names where it ran (no GPU here)
        assert len(row["inference"]["times_ms"]) == timed and row["inference"]["mean_ms"] > 0
        assert row["accuracy"]["agreement_with_tf"] == 1.0, name  # the same fixed-seed model on the same images
        assert row["accuracy"]["test_accuracy"] == pytest.approx(result["accuracy"]["test_accuracy"])
        assert row["accuracy"]["max_abs_diff_vs_tf"] < 1e-3, name
        assert row["size_mb"] > 1
        from pathlib import Path

        assert Path(row["artifact"]).exists(), name
    assert (out / "model.keras").is_file()
    assert rows["onnxruntime"]["exporter"] == "keras Model.export(format='onnx')"
    assert rows["openvino"]["settings"]["INFERENCE_PRECISION_HINT"] == "f32"  # told, not its bf16 default


@pytest.mark.long
def test_infer_times_a_finished_run_again_and_merges_rows(every_runtime, tmp_path):
    import shutil

    out, before = shutil.copytree(every_runtime[0], tmp_path / "run"), every_runtime[1]  # infer writes into it
    done = run_cli("infer", out, "--runtimes", "litert", "--runtime-precision", "int8", timeout=900)
    assert done.returncode == 0, done.stderr
    after = json.loads((out / "result.json").read_text())
    rows = _rows(after)
    assert set(rows) == {"tf", *OTHERS}  # savedmodel, onnxruntime and openvino kept from the run
    assert after["inference"]["mean_ms"] == before["inference"]["mean_ms"]  # the run's own figures stay
    assert rows["litert"]["precision_requested"] == "int8"
    assert rows["litert"]["precision"].startswith("int8 dynamic-range")
    assert rows["litert"]["status"] in ("ok", "accuracy-mismatch")  # quantised: allowed to differ, never hidden
    assert rows["litert"]["size_mb"] < rows["tf"]["size_mb"] / 2  # int8 weights
    assert after["notes"]["infer_runs"][-1]["runtimes"] == ["tf", "litert"]
    assert "litert" in done.stdout and "int8" in done.stdout


@pytest.mark.long
def test_a_missing_package_and_a_failed_export_cost_only_their_rows(tmp_path, capsys, monkeypatch):
    import importlib.util

    from l40sbench.classify import runtimes as cl_runtimes

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(registry.importlib.util, "find_spec",
                        lambda name, *a: None if name == "onnxruntime" else real_find_spec(name, *a))

    def broken_export(model, runtime, precision, folder):
        raise RuntimeError("converter says no\nsecond line")

    monkeypatch.setattr(cl_runtimes, "export_keras", broken_export)
    out = tmp_path / "run"
    code = cli.main(["classify", *TINY, "--runtimes", "onnxruntime,litert", "--output-dir", str(out)])
    printed = capsys.readouterr().out
    assert code == 0
    rows = _rows(json.loads((out / "result.json").read_text()))
    assert rows["tf"]["status"] == "ok" and rows["tf"]["inference"]["mean_ms"] > 0
    assert rows["onnxruntime"]["status"] == "not-installed" and "onnxruntime" in rows["onnxruntime"]["reason"]
    assert rows["litert"] == {**rows["litert"], "status": "export-failed",
                              "reason": "RuntimeError: converter says no"}
    assert "not-installed" in printed and "export-failed" in printed


@pytest.mark.long
def test_a_runtime_that_cannot_run_the_precision_says_so(tmp_path, capsys):
    out = tmp_path / "run"
    assert cli.main(["classify", *TINY, "--runtimes", "onnxruntime,savedmodel", "--runtime-precision", "bf16",
                     "--output-dir", str(out)]) == 0
    rows = _rows(json.loads((out / "result.json").read_text()))
    for name in ("onnxruntime", "savedmodel"):
        assert rows[name]["status"] == "unsupported-precision" and "bf16" in rows[name]["reason"]
        assert rows[name]["inference"] is None


@pytest.mark.parametrize("args, fragment", [
    (["--runtimes", "tensorrt"], "runtimes must be"),
    (["--runtimes", "all,tf"], "runtimes must be"),
    (["--runtimes", "tf,tf"], "more than once"),
    (["--runtime-precision", "fp8"], "invalid choice"),
])
def test_bad_runtime_flags_are_one_line_before_any_work(args, fragment, tmp_path):
    done = cli_in_process("classify", *TINY, *args, "--output-dir", tmp_path / "out")
    assert_one_line_exit_2(done, fragment)
    assert not (tmp_path / "out" / "result.json").exists()


def test_infer_bad_inputs(tmp_path, every_runtime):
    out, _ = every_runtime
    assert_one_line_exit_2(cli_in_process("infer", tmp_path / "nowhere"), "run folder not found")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert_one_line_exit_2(cli_in_process("infer", empty), "no result.json")
    no_model = tmp_path / "no_model"
    no_model.mkdir()
    (no_model / "result.json").write_text((out / "result.json").read_text())
    assert_one_line_exit_2(cli_in_process("infer", no_model), "holds no fine-tuned model (model.keras)")
    assert_one_line_exit_2(cli_in_process("infer", out, "--runtimes", "tensorrt"), "unknown runtime 'tensorrt'")


def test_resolve_puts_tf_first_and_all_takes_the_installed():
    assert registry.resolve(("litert", "onnxruntime")) == ("tf", "onnxruntime", "litert")
    assert registry.resolve(("all",))[0] == "tf"
    with pytest.raises(UserError, match="unknown runtime"):
        registry.resolve(("tensorrt",))


def test_classification_agreement():
    reference = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]])
    outputs = np.array([[0.8, 0.2], [0.3, 0.7], [0.4, 0.6]])
    got = agreement.classification(reference, outputs, labels=np.array([0, 1, 1]))
    assert got == {"test_accuracy": 1.0, "agreement_with_tf": pytest.approx(2 / 3),
                   "max_abs_diff_vs_tf": pytest.approx(0.2)}


def _detections(boxes, classes, scores):
    n = len(boxes)
    pad = 4 - n
    return {"num_detections": np.array([[n]]),
            "detection_boxes": np.array([list(boxes) + [[0, 0, 0, 0]] * pad], dtype=float),
            "detection_classes": np.array([list(classes) + [0] * pad]),
            "detection_scores": np.array([list(scores) + [0.0] * pad])}


def test_detection_agreement_matches_boxes_of_the_same_class():
    tf = _detections([[0, 0, 10, 10], [20, 20, 30, 30], [0, 0, 5, 5]], [1, 2, 1], [0.9, 0.8, 0.01])
    runtime = _detections([[0, 0, 10, 11], [20, 20, 30, 30]], [1, 1], [0.85, 0.8])  # the second: wrong class
    got = agreement.detection(tf, runtime, images=1, score_threshold=0.05)
    assert got["tf_detections"] == 2 and got["detections"] == 2  # the 0.01 box is below the threshold
    assert got["matched_share"] == 0.5
    assert got["mean_iou_vs_tf"] == pytest.approx(100 / 110)
    assert got["mean_score_diff_vs_tf"] == pytest.approx(0.05)
    nothing = agreement.detection(_detections([], [], []), runtime, images=1, score_threshold=0.05)
    assert nothing["matched_share"] is None and nothing["mean_iou_vs_tf"] is None


def test_infer_rows_replace_that_runtimes_earlier_rows():
    earlier = ({"runtime": "tf", "v": 1}, {"runtime": "onnxruntime", "v": 1}, {"runtime": "litert", "v": 1})
    new = ({"runtime": "tf", "v": 2}, {"runtime": "litert", "v": 2})
    assert merge(earlier, new) == ({"runtime": "onnxruntime", "v": 1}, {"runtime": "tf", "v": 2},
                                   {"runtime": "litert", "v": 2})


@pytest.mark.long
def test_detection_on_every_runtime_each_row_ok_or_saying_why(tiny_runs, tmp_path, capsys):
    """The tiny detector's SavedModel converted by each library through `infer` (its run already timed
    savedmodel); every row is timed and agrees with tf, or says why not (OpenVINO 2026.4 crashes inside infer
    on some inputs of this detector: that row is 'failed', and the command goes on and exits 0)."""
    import shutil

    out = tmp_path / "run"
    shutil.copytree(tiny_runs["ssd_resnet50_fpn"], out)  # the session's folder stays as the report tests read it
    ran = json.loads((out / "result.json").read_text())
    assert _rows(ran)["savedmodel"]["status"] == "ok"  # the run's own --runtimes savedmodel
    assert cli.main(["infer", str(out), "--runtimes", "onnxruntime,openvino,litert"]) == 0
    printed = capsys.readouterr().out
    result = json.loads((out / "result.json").read_text())
    rows = _rows(result)
    assert list(rows) == ["savedmodel", "tf", "onnxruntime", "openvino", "litert"]
    assert rows["savedmodel"] == _rows(ran)["savedmodel"]  # kept from the run, not run again
    timed = result["dataset"]["test_images"] - result["config"]["warmup"]
    for name, row in rows.items():
        assert row["status"] in ("ok", "failed", "export-failed"), (name, row["status"], row["reason"])
        if row["status"] != "ok":
            assert row["reason"] and row["reason"] in printed and row["inference"] is None
            continue
        assert len(row["inference"]["times_ms"]) == timed
        accuracy = row["accuracy"]
        assert accuracy["map_50_95"] == pytest.approx(rows["tf"]["accuracy"]["map_50_95"], abs=0.01), name
        assert accuracy["detections"] == accuracy["tf_detections"] == rows["tf"]["accuracy"]["detections"]
        if accuracy["tf_detections"]:
            assert accuracy["matched_share"] > 0.95 and accuracy["mean_iou_vs_tf"] > 0.95, name
            assert accuracy["mean_score_diff_vs_tf"] < 1e-3, name
    assert rows["tf"]["status"] == "ok" and rows["litert"]["status"] == "ok"


def test_a_ratio_to_tf_is_drawn_only_between_rows_on_one_kind_of_device():
    """On a GPU machine tf runs on the GPU and the other runtimes on the CPU: "vs tf" would compare devices."""
    from l40sbench.core.results import InferenceResult, RuntimeResult
    from l40sbench.report.tables import runtime_cells
    from l40sbench.runtimes.measure import describe

    def row(name, device, ms):
        return {"runtime": name, "status": "ok", "device": device, "precision": "fp32", "threads": 2,
                "inference": {"mean_ms": ms, "p50_ms": ms, "images_per_second": 1000 / ms}, "accuracy": {}}

    record = {"task": "classify", "inference": {"runtimes": [row("tf", "GPU", 2.0), row("onnxruntime", "CPU", 10.0),
                                                             row("savedmodel", "GPU", 4.0), row("litert", "", 8.0)]}}
    headers, lines, _ = runtime_cells(record)
    vs_tf = {line[0]: line[headers.index("vs tf")] for line in lines}
    assert vs_tf == {"tf": "1.00x", "savedmodel": "0.50x", "onnxruntime": "-", "litert": "0.25x"}  # "": an older record
    assert {line[0]: line[headers.index("device")] for line in lines}["onnxruntime"] == "CPU"

    def result(name, device, ms):
        inference = InferenceResult(batch_size=1, warmup_excluded=1, images_timed=3, mean_ms=ms,
                                    images_per_second=1000 / ms, p50_ms=ms, p90_ms=ms, p99_ms=ms, min_ms=ms,
                                    max_ms=ms, std_ms=0.0)
        return RuntimeResult(runtime=name, status="ok", precision="fp32", threads=2, device=device, inference=inference)

    line = describe(result("onnxruntime", "CPU", 10.0), result("tf", "GPU", 2.0))
    assert "no ratio across devices" in line and "x tf" not in line
    assert "(5.00x tf)" in describe(result("onnxruntime", "CPU", 10.0), result("tf", "CPU", 50.0))


@pytest.mark.long
def test_on_a_gpu_tf_is_timed_again_with_the_gpus_hidden_as_the_cpu_rows_reference(tmp_path, capsys, monkeypatch):
    """Where tf's own row ran on a GPU (made to read so here: the parent's placement), tf runs again in a child
    with CUDA_VISIBLE_DEVICES=-1, and the CPU runtimes' ratio is drawn against that row, not the GPU's."""
    from l40sbench.report.tables import runtime_cells
    from l40sbench.runtimes import forward

    monkeypatch.setattr(forward, "tf_device_kind", lambda: "GPU")
    out = tmp_path / "run"
    assert cli.main(["classify", *TINY, "--runtimes", "onnxruntime", "--output-dir", str(out)]) == 0
    result = json.loads((out / "result.json").read_text())
    rows = _rows(result)
    assert list(rows) == ["tf", "tf-cpu", "onnxruntime"]
    assert [rows[name]["device"] for name in rows] == ["GPU", "CPU", "CPU"]
    cpu_tf = rows["tf-cpu"]
    assert cpu_tf["status"] == "ok" and cpu_tf["settings"]["gpus_hidden"] is True
    assert cpu_tf["accuracy"]["agreement_with_tf"] == 1.0 and cpu_tf["artifact"] == rows["tf"]["artifact"]
    headers, lines, _ = runtime_cells(result)
    vs_tf = {line[0]: line[headers.index("vs tf")] for line in lines}
    expected = cpu_tf["inference"]["mean_ms"] / rows["onnxruntime"]["inference"]["mean_ms"]
    assert vs_tf["onnxruntime"] == f"{expected:.2f}x" and vs_tf["tf-cpu"] == "1.00x"
    assert "runtime tf-cpu: tf again in a child with the GPUs hidden" in capsys.readouterr().err


def test_the_saved_model_converters_make_files_that_run_as_the_model_did(tmp_path):
    """The detector path's three converters (tf2onnx, openvino.convert_model, the TFLite converter) on a tiny
    Keras SavedModel; the long tier runs them on a real detector. fp32 files agree with Keras; LiteRT's int8
    file is smaller and names its dynamic range."""
    import keras
    import onnxruntime
    import openvino

    from l40sbench.runtimes import export

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4, 4, 3)), keras.layers.Flatten(), keras.layers.Dense(64, "relu"),
                              keras.layers.Dense(2, "softmax")])
    saved = tmp_path / "saved_model"
    model.export(str(saved), format="tf_saved_model", verbose=False)
    images = np.random.default_rng(0).random((3, 4, 4, 3), dtype=np.float32)
    expected = model.predict(images, verbose=0)

    onnx = export.saved_model_to_onnx(saved, "fp32", tmp_path, "serving_default")
    session = onnxruntime.InferenceSession(str(onnx.path), providers=["CPUExecutionProvider"])
    got = session.run(None, {session.get_inputs()[0].name: images})[0]
    assert onnx.exporter.startswith("tf2onnx.convert") and np.allclose(got, expected, atol=1e-5)

    ir = export.saved_model_to_openvino(saved, "fp32", tmp_path, "serving_default")
    compiled = openvino.Core().compile_model(str(ir.path), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    got = next(iter(compiled(images).values()))
    assert ir.precision == "fp32" and ir.size_mb > 0 and np.allclose(got, expected, atol=1e-4)

    for folder in ("f", "q"):
        (tmp_path / folder).mkdir()
    fp32 = export.saved_model_to_litert(saved, "fp32", tmp_path / "f", "serving_default")
    int8 = export.saved_model_to_litert(saved, "int8", tmp_path / "q", "serving_default")
    assert int8.precision.startswith("int8 dynamic-range") and int8.size_mb < fp32.size_mb / 2
    assert export.litert_options("fp16")[1].startswith("fp32 compute (fp16 weights")
    assert export.saved_model_as_is(saved, "fp32", tmp_path, "serving_default").size_mb > 0


def _workload(export, mismatch=False, trained="fp32"):
    from l40sbench.runtimes.measure import Workload

    return Workload(images=[np.zeros((1, 4, 4, 3), np.uint8)], export=export, score=lambda outputs: {"top1": 0.5},
                    mismatch=lambda mine, theirs: mismatch, warmup=0, trained_precision=trained)


def test_each_way_a_runtime_row_can_fail_is_its_status_and_one_line(tmp_path, monkeypatch):
    """measure_one with stand-in exports and child timings (the long tier runs the real ones): each status the
    table can show, and why."""
    import importlib.util

    from l40sbench.core import child
    from l40sbench.runtimes import measure
    from l40sbench.runtimes.export import Artifact

    artifact = Artifact(tmp_path / "model.onnx", 0.5, 1.0, "a converter", "fp32")
    timing = {"precision": "fp32", "version": "9", "threads": 2, "load_seconds": 0.1, "device": "CPU",
              "inference": None, "settings": {"threads": 2}}
    monkeypatch.setattr(measure, "_time_in_child", lambda *args, **kwargs: (timing, {}, ""))

    def row(runtime, workload, precision="fp32"):
        return measure.measure_one(runtime, workload, precision, tmp_path / runtime, tmp_path / "in.npz", {},
                                   lambda _: None)

    ok = _workload(lambda *args: artifact)
    assert row("onnxruntime", ok).status == "ok"
    assert row("onnxruntime", _workload(lambda *args: artifact, mismatch=True)).status == "accuracy-mismatch"
    assert (row("openvino", ok, "fp16").status, row("openvino", ok, "fp16").reason) == (
        "unsupported-precision", "asked for fp16; openvino runs fp32 here")  # the child's own word on what ran
    assert row("onnxruntime", ok, "fp16").reason == "onnxruntime takes fp32, not fp16"
    trained = row("savedmodel", _workload(lambda *args: artifact, trained="mixed_bfloat16"))
    assert trained.status == "unsupported-precision" and "as it was trained (mixed_bfloat16)" in trained.reason

    def broken(*args):
        raise RuntimeError("converter says no\nsecond line")

    assert (row("litert", _workload(broken)).status, row("litert", _workload(broken)).reason) == (
        "export-failed", "RuntimeError: converter says no")
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "openvino" else real_find_spec(name, *a))
    missing = row("openvino", ok)
    assert missing.status == "not-installed" and "pip install 'l40sbench[runtimes]'" in missing.reason
    monkeypatch.setattr(measure, "_time_in_child", lambda *args, **kwargs: (None, None, "the child exited 1"))
    assert (row("onnxruntime", ok).status, row("onnxruntime", ok).reason) == ("failed", "the child exited 1")

    gone = child.Outcome(-9, "", "", 1.0, False, False, 10.0, "watchdog")
    assert measure.crash_reason("litert", gone) == "the litert child crashed (SIGKILL) while loading or running the model"
    late = child.Outcome(None, "", "", 1.0, True, False, 10.0, "watchdog")
    assert measure.crash_reason("litert", late, 30) == "the litert child did not finish within 30 s"


def test_tf_on_a_gpu_is_timed_again_with_the_gpus_hidden_as_the_cpu_rows_reference(tmp_path, monkeypatch):
    """measure_runtimes with stand-in children: where tf ran on a GPU, a tf-cpu row (CUDA_VISIBLE_DEVICES=-1)
    comes before the rows that run on the CPU; each row is handed on as it is made."""
    from l40sbench.core.results import RuntimeResult
    from l40sbench.runtimes import measure
    from l40sbench.runtimes.export import Artifact

    hidden = []

    def timed(runtime, *args, env=None, **_):
        hidden.append((runtime, (env or {}).get("CUDA_VISIBLE_DEVICES")))
        return {"precision": "fp32", "version": "2", "threads": 2, "load_seconds": 0.1, "device": "CPU",
                "inference": None, "settings": {"threads": 2}}, {}, ""

    monkeypatch.setattr(measure, "_time_in_child", timed)
    monkeypatch.setattr(measure, "describe", lambda row, reference: row.runtime)
    reference = RuntimeResult("tf", "ok", precision="fp32", precision_requested="fp32", artifact="m", device="GPU")
    export = _workload(lambda *args: Artifact(tmp_path / "model.onnx", 0.5, 1.0, "a converter", "fp32"))
    counts = []
    rows = measure.measure_runtimes(("tf", "onnxruntime"), export, "fp32", tmp_path, reference, lambda _: None,
                                    lambda rows: counts.append(len(rows)))
    assert [r.runtime for r in rows] == ["tf", measure.CPU_REFERENCE, "onnxruntime"] and counts == [1, 2, 3]
    assert hidden == [("tf", "-1"), ("onnxruntime", None)]
    assert rows[1].status == "ok" and rows[1].settings["gpus_hidden"] is True and rows[1].artifact == "m"


def test_the_classifiers_output_is_found_among_inner_tensors_a_converter_exposed(monkeypatch, tmp_path):
    """OpenVINO's conversion of EfficientNetV2B0 hands back its activations beside the probabilities: the row
    scores the one output of tf's shape; where none or several have it, the row fails and says why."""
    import numpy as np

    from l40sbench.classify.runtimes import probabilities_of
    from l40sbench.runtimes import measure
    from l40sbench.runtimes.export import Artifact

    reference = np.array([[0.9, 0.1], [0.2, 0.8]])
    inner = {"Identity:0": reference, "block1a_activation:0": np.zeros((2, 16, 16, 16))}
    assert probabilities_of(inner, reference) is reference
    ambiguous = {"a": reference, "b": reference.copy()}
    monkeypatch.setattr(measure, "_time_in_child", lambda *args, **kwargs: ({"precision": "fp32"}, ambiguous, ""))
    work = measure.Workload(
        images=[], export=lambda runtime, precision, folder: Artifact(folder, 0.1, 1.0, "test", "fp32"),
        score=lambda outputs: {"test_accuracy": float(probabilities_of(outputs, reference).sum())},
        mismatch=lambda accuracy, tf: False, warmup=1, trained_precision="fp32")
    row = measure.measure_one("openvino", work, "fp32", tmp_path / "openvino", tmp_path / "inputs.npz", {},
                              lambda line: None)
    assert row.status == "failed" and row.reason.startswith("its outputs could not be scored: 2 outputs, 2 of them")


def test_an_onnx_export_that_leaves_constants_as_inputs_is_made_again_through_the_savedmodel(tmp_path):
    """Keras' ONNX export leaves a Normalization layer's mean and variance as graph inputs (EfficientNet's first
    layers); the exporter then converts the model's SavedModel with tf2onnx, which freezes them."""
    import keras
    import onnxruntime

    from l40sbench.runtimes.export import keras_to_onnx

    inputs = keras.Input((16, 16, 3), dtype="uint8")
    x = keras.layers.Rescaling(1 / 255)(keras.ops.cast(inputs, "float32"))
    x = keras.layers.Normalization(mean=[0.485, 0.456, 0.406], variance=[0.052, 0.050, 0.051])(x)
    x = keras.layers.GlobalAveragePooling2D()(x)
    model = keras.Model(inputs, keras.layers.Dense(2)(x))
    image = np.random.default_rng(0).integers(0, 255, (1, 16, 16, 3), dtype=np.uint8)
    expected = model(image).numpy()
    artifact = keras_to_onnx(model, "fp32", tmp_path)
    assert "then tf2onnx.convert --saved-model" in artifact.exporter and "left 2 constant(s)" in artifact.exporter
    session = onnxruntime.InferenceSession(str(artifact.path), providers=["CPUExecutionProvider"])
    (only,) = session.get_inputs()
    np.testing.assert_allclose(session.run(None, {only.name: image})[0], expected, rtol=1e-5, atol=1e-5)
    keras.backend.clear_session()
