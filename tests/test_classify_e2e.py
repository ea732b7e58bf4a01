"""Real Keras training and inference on the stand-in, at small sizes."""

import json
import os
import time

import numpy as np
import pytest

from l40sbench import cli
from l40sbench.classify import model as model_mod
from l40sbench.classify.bases import BASES, BaseSpec
from tests.conftest import assert_csv_matches_json, assert_ctrl_c_keeps_finished_epochs, assert_timing_wiring

RESULT_KEYS = {
    "schema", "task", "base", "complete", "config", "env", "dataset", "train", "inference", "accuracy", "weights",
}
DATASET_KEYS = {"source", "train_images", "test_images", "classes", "skipped_files"}
TRAIN_KEYS = {"epochs", "batch_size", "epoch_seconds", "total_seconds", "first_epoch_seconds", "steady_epoch_seconds",
              "wall_seconds"}
INFERENCE_KEYS = {
    "batch_size", "warmup_excluded", "images_timed", "mean_ms", "images_per_second",
    "p50_ms", "p90_ms", "p99_ms", "min_ms", "max_ms", "std_ms",
}
ENV_KEYS = {"python", "tensorflow", "keras", "devices", "cuda", "cudnn", "cpu", "cpu_count", "os",
            "suite_commit", "timestamp_utc"}
CONFIG_KEYS = {"base", "data", "epochs", "batch_size", "image_size", "weights", "fine_tune", "limit",
               "output_dir", "seed", "precision", "xla", "strict"}


def classify(tmp_path, capsys, *args):
    out = tmp_path / "out"
    started = time.perf_counter()
    code = cli.main(["classify", "--output-dir", str(out), *map(str, args)])
    wall_seconds = time.perf_counter() - started
    captured = capsys.readouterr()
    assert code == 0, captured.err
    result = json.loads((out / "result.json").read_text())
    assert_csv_matches_json(out)
    assert_timing_wiring(result, wall_seconds, epochs=result["config"]["epochs"],
                         test_images=result["dataset"]["test_images"])
    return result, captured, out


@pytest.mark.parametrize("base, size", [pytest.param("xception", 71, marks=pytest.mark.long),
                                        pytest.param("inceptionv3", 75, marks=pytest.mark.long), ("vgg19", 32)])
def test_article_bases_end_to_end(tmp_path, capsys, tiny_runs, base, size):
    if base == "vgg19":  # the suite's tiny classify run (tests/conftest.py): 3 epochs, made once
        out, printed = tiny_runs[base], tiny_runs.output(base)
        result = json.loads((out / "result.json").read_text())
        assert_csv_matches_json(out)
        assert_timing_wiring(result, printed.wall_seconds, epochs=3, test_images=8)
        captured = printed
    else:
        result, captured, out = classify(
            tmp_path, capsys, "--base", base, "--image-size", size, "--limit", 8, "--epochs", 2,
            "--batch-size", 4, "--weights", "none",
        )
    epochs = result["config"]["epochs"]
    assert RESULT_KEYS <= result.keys()
    assert result["schema"] == "l40sbench.result/1" and result["task"] == "classify"
    assert result["base"] == base and result["complete"] is True and result["weights"] == "random"
    assert CONFIG_KEYS <= result["config"].keys() and result["config"]["image_size"] == size
    features = {"xception": 2048, "inceptionv3": 2048, "vgg19": 512}[base]
    assert result["model"]["trainable_parameters"] == 2 * features + 2  # --fine-tune head: base frozen
    assert ENV_KEYS <= result["env"].keys() and result["env"]["tensorflow"]
    assert DATASET_KEYS <= result["dataset"].keys()
    assert result["dataset"]["source"] == "stand-in"
    assert result["dataset"]["classes"] == {"train": {"cats": 4, "dogs": 4}, "test": {"cats": 4, "dogs": 4}}
    train = result["train"]
    assert TRAIN_KEYS <= train.keys()
    assert train["epochs"] == epochs and len(train["epoch_seconds"]) == epochs and train["batch_size"] == 4
    assert train["first_epoch_seconds"] == train["epoch_seconds"][0]
    assert train["steady_epoch_seconds"] == pytest.approx(sum(train["epoch_seconds"][1:]) / (epochs - 1))
    assert train["total_seconds"] == pytest.approx(sum(train["epoch_seconds"]))
    assert len(train["loss_per_epoch"]) == epochs and min(train["loss_per_epoch"]) > 0
    inference = result["inference"]
    assert INFERENCE_KEYS <= inference.keys()
    assert inference["images_timed"] == result["dataset"]["test_images"] - 1 == 7
    assert inference["warmup_excluded"] == 1 and inference["batch_size"] == 1
    assert inference["min_ms"] <= inference["p50_ms"] <= inference["p90_ms"] <= inference["p99_ms"] <= inference["max_ms"]
    assert inference["images_per_second"] == pytest.approx(1000 / inference["mean_ms"])
    # 8 test images: the accuracy is a whole number of eighths, from the same predictions the probe timed.
    assert result["accuracy"]["test_accuracy"] * 8 == pytest.approx(round(result["accuracy"]["test_accuracy"] * 8))
    # Scored after each epoch outside its clock; after the last, the same model on the same images.
    assert train["test_metric"] == "test_accuracy" and len(train["test_metric_per_epoch"]) == epochs
    assert all(v * 8 == pytest.approx(round(v * 8)) for v in train["test_metric_per_epoch"])
    assert abs(train["test_metric_per_epoch"][-1] - result["accuracy"]["test_accuracy"]) <= 1 / 8 + 1e-9
    assert "test_accuracy" in captured.err
    assert (out / "result.csv").read_text().startswith("accuracy.test_accuracy,")
    device_peak = result["env"]["peak"]
    assert device_peak["matmul"]["float32"]["gflops"] >= device_peak["matmul"]["float32"]["median_gflops"] > 0
    assert device_peak["conv_float32_gflops"] > 0 and device_peak["device_kind"] == "CPU"
    # The session's first run measures the peak, the others read it (tests/conftest.py); the block says which.
    label = "Peak (same run)" if device_peak["source"] == "measured in this run" else "Peak (earlier, this device)"
    assert device_peak["source"] in ("measured in this run", f"read from {os.environ['L40SBENCH_PEAK_FILE']}")
    assert label in captured.out and "utilisation" in captured.out
    assert "stand-in" in captured.err
    for heading in ("Environment", "training wall time", "time per epoch (wall less test scoring / epochs, the studies' definition)",
                    "epoch clock mean", "mean ms/image", "images/s", "p99 ms"):
        assert heading in captured.out


def test_a_runs_own_scoring_and_its_time_to_first_step_are_recorded_apart(tiny_runs):
    """The tiny vgg19 run: each epoch's test scoring on a clock of its own, outside the studies' time per
    epoch; the time from the command's start to the first step, by part."""
    from l40sbench.report.tables import wall_epoch_seconds

    result = json.loads((tiny_runs["vgg19"] / "result.json").read_text())
    train = result["train"]
    scoring = train["scoring_seconds_per_epoch"]
    assert len(scoring) == train["epochs"] == 3 and all(s > 0 for s in scoring)
    assert wall_epoch_seconds(train) == pytest.approx((train["wall_seconds"] - sum(scoring)) / 3)
    assert train["wall_seconds"] > train["total_seconds"] + sum(scoring) * 0.99  # wall holds both clocks
    first = result["time_to_first_step"]
    assert first["seconds"] == pytest.approx(sum(first["parts_seconds"].values())) and first["seconds"] > 0
    assert {"data", "model and weights", "env, peak and the stability guard"} <= first["parts_seconds"].keys()
    assert "main()" in first["from"]  # made in-process by the test session: the process's start is not counted
    assert "time to first step:" in tiny_runs.output("vgg19").out


@pytest.mark.long
def test_training_learns_the_standin(tmp_path, capsys, monkeypatch):
    """A loop that does not update the weights stays at chance and fails here.

    A linear head on the frozen features of a randomly initialised ResNet-50 (its
    skip connections carry the stand-in's colour cue to the pooled features, where
    a random VGG's plain stack loses it) is a convex problem, so it ends in the same
    place on any machine: 0.950-0.979 after 12 epochs over seeds 0-2 and 1 or 2
    TensorFlow threads, where the untrained model scores 0.379-0.5
    (docs/performance-log.md, "How far the learning tests are from their bounds").

    The same run (a training run is CI's costly unit) has two more purposes: it measures its own peak, as a
    user's run does (the tests' other runs read the session's, tests/conftest.py), and it trains with
    --epoch-scoring off, which changes no weight: only the final scoring runs. Under xdist another worker may
    be busy while it measures its peak and idle while it trains (or the reverse): assert_timing_wiring's
    utilisation bounds hold with room for that at a few per cent of the peak.
    """
    monkeypatch.delenv("L40SBENCH_PEAK_FILE")
    result, captured, _ = classify(
        tmp_path, capsys, "--base", "resnet50", "--image-size", 32, "--limit", 200, "--epochs", 12,
        "--weights", "none", "--epoch-scoring", "off",
    )
    assert result["model"]["trainable_parameters"] == 2 * 2048 + 2  # the head alone
    assert result["dataset"]["train_images"] == 200 and result["dataset"]["test_images"] == 140
    accuracy = result["accuracy"]["test_accuracy"]
    assert accuracy >= 0.85, f"test accuracy {accuracy:.3f} after 12 epochs (bound 0.85; chance 0.5)"
    assert result["env"]["peak"]["source"] == "measured in this run" and "measured_utc" in result["env"]["peak"]
    assert "measuring this device's peak" in captured.err and "Peak (same run)" in captured.out
    # --epoch-scoring off: nothing scored between epochs, nothing to price
    assert result["config"]["epoch_scoring"] is False and result["train"]["test_metric_per_epoch"] == []
    assert result["train"]["scoring_seconds_per_epoch"] == []
    from l40sbench.cli import main

    assert main(["cost", "--results", str(tmp_path / "out" / "result.json"), "--price", "1", "--per", "hour",
                 "--target", "0.5"]) == 2
    assert "trained with --epoch-scoring off" in capsys.readouterr().err


def test_local_weights_file_is_loaded(tmp_path):
    import keras

    base = keras.applications.VGG19(include_top=False, weights=None, input_shape=(32, 32, 3))
    path = tmp_path / "vgg19.weights.h5"
    base.save_weights(path)
    built, label = model_mod.build_base(BASES.get("vgg19"), 32, str(path), print)
    assert label == f"file {path}"
    for saved, loaded in zip(base.weights, built.weights, strict=True):
        np.testing.assert_array_equal(saved.numpy(), loaded.numpy())


@pytest.mark.long
def test_a_run_records_the_weights_file_it_loaded(tmp_path, capsys):
    import keras

    path = tmp_path / "vgg19.weights.h5"
    keras.applications.VGG19(include_top=False, weights=None, input_shape=(32, 32, 3)).save_weights(path)
    result, _, _ = classify(
        tmp_path, capsys, "--base", "vgg19", "--image-size", 32, "--limit", 4, "--epochs", 1, "--weights", path,
    )
    assert result["weights"] == f"file {path}"


def test_garbage_weights_file_is_a_user_error(tmp_path, capsys):
    path = tmp_path / "garbage.h5"
    path.write_bytes(b"not hdf5")
    code = cli.main(["classify", "--base", "vgg19", "--image-size", "32", "--limit", "4", "--weights", str(path),
                     "--output-dir", str(tmp_path / "o")])
    assert code == 2
    assert "cannot load weights file" in capsys.readouterr().err


class _Offline(BaseSpec):
    """A base whose ImageNet download fails the way Keras' get_file does offline."""

    def constructor(self):
        real = super().constructor()

        def build(include_top, weights, input_shape):
            if weights == "imagenet":
                raise Exception("URL fetch failure on https://example.invalid/w.h5: None -- no network")
            return real(include_top=include_top, weights=weights, input_shape=input_shape)

        return build


class _Stalled(BaseSpec):
    """A base whose ImageNet download never answers. The stalled thread outlives the test, so it must never go on
    to a real download: one did, printing Keras' "Downloading data from ..." into another test's captured stdout."""

    def constructor(self):
        real = super().constructor()

        def build(include_top, weights, input_shape):
            if weights == "imagenet":
                time.sleep(30)
                raise Exception("stalled download given up")
            return real(include_top=include_top, weights=weights, input_shape=input_shape)

        return build


@pytest.mark.parametrize("spec_class, reason", [(_Offline, "URL fetch failure"), (_Stalled, "no answer within 1 s")])
def test_unavailable_imagenet_falls_back_to_random_without_hanging(spec_class, reason):
    spec = spec_class("vgg19", "VGG19", "vgg19", 224, 32)
    messages = []
    started = time.monotonic()
    base, label = model_mod.build_base(spec, 32, "imagenet", messages.append, timeout_s=1.0)
    assert time.monotonic() - started < 20
    assert label == "random (imagenet unavailable)"
    assert base.output_shape == (None, 1, 1, 512)
    assert len(messages) == 1 and reason in messages[0] and "random initialisation" in messages[0]


def test_sigterm_keeps_finished_epochs_as_ctrl_c_does(tmp_path):
    """A spot instance taken back (SIGTERM): the same one line, the record kept and marked. Ctrl-C's own path:
    tests/test_detect_learning.py."""
    assert_ctrl_c_keeps_finished_epochs(tmp_path / "interrupted", "classify", "--base", "vgg19", "--image-size", 32,
                                        "--limit", 16, "--batch-size", 4, "--weights", "none", stop="SIGTERM")


def test_crash_mid_training_keeps_finished_epochs(tmp_path, monkeypatch):
    from l40sbench.classify.config import ClassifyConfig
    from l40sbench.core.records import write_result
    from l40sbench.harness import epochs as epochs_mod
    from l40sbench.harness.run import run_task

    def crash_on_second_epoch(epoch_seconds, remaining):
        if len(epoch_seconds) == 2:
            raise RuntimeError("simulated crash in epoch 2")
        return 0.0

    monkeypatch.setattr(epochs_mod, "eta_seconds", crash_on_second_epoch)
    config = ClassifyConfig(base="vgg19", image_size=32, limit=4, epochs=5, weights="none", batch_size=2)
    out = tmp_path / "crashed"
    with pytest.raises(RuntimeError, match="simulated crash"):
        run_task("classify", config, log=lambda _: None, save=lambda record: write_result(out, record))
    result = json.loads((out / "result.json").read_text())
    assert result["complete"] is False
    assert len(result["train"]["epoch_seconds"]) == 2 and result["inference"] is None


@pytest.mark.parametrize("name", ["resnet50", "mobilenetv2"])
def test_extra_bases_build_and_predict(name):
    spec = BASES.get(name)
    base, label = model_mod.build_base(spec, spec.min_size, "none", print)
    model = model_mod.build_classifier(spec, base, spec.min_size, 3, None)
    assert label == "random"
    assert [w for w in model.trainable_weights if "head" not in w.path] == []
    probabilities = model(np.zeros((2, spec.min_size, spec.min_size, 3), np.uint8)).numpy()
    assert probabilities.shape == (2, 3)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, rtol=1e-5)


def test_fine_tune_top_layers_unfreezes_exactly_those():
    spec = BASES.get("vgg19")
    base, _ = model_mod.build_base(spec, 32, "none", print)
    model_mod.build_classifier(spec, base, 32, 2, 4)
    assert [layer.trainable for layer in base.layers[-4:]] == [True] * 4
    assert not any(layer.trainable for layer in base.layers[:-4])
