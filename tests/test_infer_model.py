"""`infer --model PATH`: a model file of yours timed as it is, without training, on every runtime that can load
it, into a run folder of a classify run's shape."""

import hashlib
import json

import numpy as np
import pytest

from l40sbench.classify.runtimes import labels_for
from tests.conftest import assert_one_line_exit_2, cli_in_process

DATA = ("--limit", "8")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A tiny two-class model of the user's (64 px, its own rescaling), as a .keras file, its ONNX export and
    its SavedModel."""
    import keras

    keras.utils.set_random_seed(0)  # the same weights, so the same outputs, every session
    inputs = keras.Input((64, 64, 3))
    x = keras.layers.Rescaling(1 / 255)(inputs)
    x = keras.layers.Conv2D(8, 3, strides=2, activation="relu")(x)
    x = keras.layers.GlobalAveragePooling2D()(x)
    model = keras.Model(inputs, keras.layers.Dense(2, activation="softmax")(x), name="pets")
    folder = tmp_path_factory.mktemp("given")
    model.save(folder / "pets.keras")
    model(np.zeros((1, 64, 64, 3), "float32"))  # Keras' ONNX exporter takes a model that has been called
    model.export(str(folder / "pets.onnx"), format="onnx", verbose=False)
    model.export(str(folder / "pets_sm"), format="tf_saved_model", verbose=False)
    keras.backend.clear_session()
    return folder


def record_in(folder):
    return json.loads((folder / "result.json").read_text())


def rows_by_runtime(record):
    return {row["runtime"]: row for row in record["inference"]["runtimes"]}


def infer_record(path, out, *flags) -> dict:
    """`infer --model PATH FLAGS` into `out`: its record, after a clean exit that printed nothing of TensorFlow's
    profiler."""
    result = cli_in_process("infer", "--model", path, *flags, "--output-dir", out)
    assert result.returncode == 0, result.stderr
    assert "is deprecated" not in result.stderr  # TensorFlow's profiler says nothing of its own
    return record_in(out)


def test_a_keras_file_is_timed_on_each_runtime_untrained_and_they_agree(files, tmp_path):
    out = tmp_path / "run"
    result = cli_in_process("infer", "--model", files / "pets.keras", *DATA, "--runtimes", "onnxruntime",
                            "--output-dir", out)
    assert result.returncode == 0, result.stderr
    record = record_in(out)
    assert record["task"] == "classify" and record["complete"] and record["train"]["epochs"] == 0
    assert record["config"]["image_size"] == 64  # the size the file declares
    digest = hashlib.sha256((files / "pets.keras").read_bytes()).hexdigest()
    assert record["model"]["file"]["sha256"] == digest and record["model"]["kind"] == "keras"
    rows = rows_by_runtime(record)
    assert set(rows) == {"tf", "onnxruntime"}
    for row in rows.values():
        assert row["status"] == "ok", row
        # the same model on each runtime: its outputs within float32 rounding of tf's (an argmax can flip only
        # where two classes' scores are that close)
        assert row["accuracy"]["max_abs_diff_vs_tf"] < 1e-4 and row["accuracy"]["agreement_with_tf"] >= 0.75
        assert row["accuracy"]["test_accuracy"] is not None
        assert row["inference"]["images_timed"] == 7  # 8 test images, the first excluded
        # each image file's way to a label, timed beside the model's call on every runtime
        assert set(row["inference"]["stages_mean_ms"]) == {"model", "decode", "resize", "file_to_label"}, row
    assert record["utilisation"]["forward_gflops_per_image"] > 0
    # the guard's bursts before and after the reference's probe, as compare reads a machine from them
    assert [b["moment"] for b in record["stability"]["speed"]["bursts"]] == ["start", "after the probe"]
    assert (out / "model.keras").is_file()  # a folder of a classify run's shape: `infer RUN_DIR` takes it
    assert "agreement with tf" in result.stdout


def test_its_onnx_export_is_timed_on_the_runtimes_that_read_onnx(files, tmp_path):
    out = tmp_path / "run"
    result = cli_in_process("infer", "--model", files / "pets.onnx", *DATA, "--runtimes", "onnxruntime,litert",
                            "--scenario", "single-stream", "--duration", "0.5", "--min-queries", "10",
                            "--mode", "accuracy", "--output-dir", out)
    assert result.returncode == 0, result.stderr
    record = record_in(out)
    assert record["notes"]["reference_runtime"] == "onnxruntime"
    # a CPU run whatever the host's GPUs: said first, and in the record
    assert f"infer --model {files / 'pets.onnx'}: on the CPU (onnxruntime's CPU provider is the reference)" in result.stderr
    choice = record["env"]["device_choice"]
    assert choice["chosen"] == "cpu" and choice["why"].startswith("an ONNX file: onnxruntime (the reference)")
    rows = rows_by_runtime(record)
    assert rows["onnxruntime"]["status"] == "ok" and rows["onnxruntime"]["device"] == "CPU"  # OpenVINO reading an ONNX file: the NCHW test below
    # LoadGen as `infer RUN_DIR` runs it: its accuracy log scored as the probe's outputs were
    tests = {entry["runtime"]: entry for entry in record["inference"]["scenarios"]}
    assert set(tests) == {"onnxruntime"}
    assert all(entry["accuracy"]["matches_probe"] for entry in tests.values())
    assert (out / "loadgen").is_dir()
    assert rows["litert"]["status"] == "export-failed" and "does not read ONNX" in rows["litert"]["reason"]
    assert "tf" not in rows
    assert "agreement with onnxruntime" in result.stdout and "vs onnxruntime" in result.stdout


def test_a_savedmodel_folder_is_timed_with_its_declared_size(files, tmp_path, monkeypatch):
    """Made to read as if tf ran on a GPU: then tf is timed again in a child with the GPUs hidden, which loads
    the SavedModel as it is (its signature takes float pixels)."""
    from l40sbench.runtimes import forward

    monkeypatch.setattr(forward, "tf_device_kind", lambda: "GPU")
    out = tmp_path / "run"
    result = cli_in_process("infer", "--model", files / "pets_sm", *DATA, "--runtimes", "onnxruntime",
                            "--preprocess", "none", "--output-dir", out)  # its Rescaling is inside the signature
    assert result.returncode == 0, result.stderr
    record = record_in(out)
    rows = rows_by_runtime(record)
    assert list(rows) == ["tf", "tf-cpu", "onnxruntime"]
    assert rows["tf-cpu"]["status"] == "ok" and rows["tf-cpu"]["accuracy"]["max_abs_diff_vs_tf"] < 1e-4
    assert record["config"]["image_size"] == 64 and record["model"]["kind"] == "savedmodel"
    assert record["model"]["file"]["bytes"] > 0
    # the restored signature's convolutions counted (a called function is inlined for the profiler), as Keras' own
    import keras

    from l40sbench.backends.tf_flops import forward_gflops

    counted = forward_gflops(keras.saving.load_model(files / "pets.keras"), 64)
    assert counted > 0 and record["utilisation"]["forward_gflops_per_image"] == pytest.approx(counted)
    assert rows_by_runtime(record)["tf"]["accuracy"]["test_accuracy"] is not None
    again = cli_in_process("infer", out)  # nothing to reload from: said in one line
    assert_one_line_exit_2(again, "infer --model")


def test_outputs_that_are_not_the_datas_classes_are_scored_for_agreement_only():
    labels = np.array([0, 1, 1])
    assert labels_for(np.zeros((3, 2)), labels, 2)[0] is labels
    kept, why = labels_for(np.zeros((3, 1000)), labels, 2)
    assert kept is None and "1000 classes, the data's 2" in why and "agreement only" in why


def test_one_score_per_image_has_no_argmax_agreement():
    from l40sbench.runtimes.agreement import classification

    scores = classification(np.array([[0.2], [0.9]]), np.array([[0.3], [0.1]]), None)
    assert scores["agreement_with_tf"] is None and scores["max_abs_diff_vs_tf"] == pytest.approx(0.8)


def test_bad_model_paths_and_flags_are_one_line_and_exit_2(files, tmp_path):

    (tmp_path / "empty").mkdir()
    (tmp_path / "broken.onnx").write_text("not a model")
    (tmp_path / "model.pt").write_bytes(b"\0")
    cases = [
        (("--model", tmp_path / "missing.keras"), "no file or folder"),
        (("--model", tmp_path / "empty"), "not a SavedModel"),
        (("--model", tmp_path / "broken.onnx"), "onnxruntime cannot load it"),
        (("--model", tmp_path / "model.pt"), "a .keras file, a SavedModel folder or an .onnx file"),
        (("--model", files / "pets.keras", "--image-size", "32"), "takes 64 px images only"),
        (("--model", files / "pets.keras", tmp_path), "one of them"),
        ((), "one of them"),
        ((tmp_path, "--data", tmp_path), "--data goes with --model"),
    ]
    for args, fragment in cases:
        result = cli_in_process("infer", *args, "--output-dir", tmp_path / "out") if "--model" in args else \
            cli_in_process("infer", *args)
        assert_one_line_exit_2(result, fragment)
        assert fragment in result.stderr, (args, result.stderr)
    assert not (tmp_path / "out").exists()  # a refused run leaves no folder behind


def test_an_onnx_file_taking_nchw_with_other_classes_is_fed_so_and_scored_for_agreement(tmp_path):
    """As PyTorch exports: (batch, 3, h, w) float in; here three outputs, not the stand-in's two classes."""
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("GlobalAveragePool", ["image"], ["pooled"]),
         helper.make_node("Flatten", ["pooled"], ["scores"])],
        "channel_means", [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["n", 3, 48, 48])],
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["n", 3])])
    path = tmp_path / "means.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    out = tmp_path / "run"
    result = cli_in_process("infer", "--model", path, *DATA, "--runtimes", "onnxruntime,openvino",
                            "--output-dir", out)
    assert result.returncode == 0, result.stderr
    record = record_in(out)
    assert record["config"]["image_size"] == 48
    assert "3 classes, the data's 2" in record["notes"]["accuracy"] and record["accuracy"]["test_accuracy"] is None
    rows = rows_by_runtime(record)
    assert rows["openvino"]["status"] == "ok" and rows["openvino"]["accuracy"]["agreement_with_tf"] == 1.0
    assert rows["openvino"]["accuracy"]["max_abs_diff_vs_tf"] < 1e-3  # the same channel means: fed NCHW alike
