"""Real Model Garden detectors on the fruit stand-in, at a small size."""

import json
import math
import time

import pytest

from l40sbench import cli
from l40sbench.detect.evaluate import evaluate
from tests.conftest import assert_csv_matches_json, assert_timing_wiring, cli_in_process, export_dir
from tests.test_classify_e2e import INFERENCE_KEYS, RESULT_KEYS, TRAIN_KEYS


def detect(tmp_path, capsys, *args):
    out = tmp_path / "out"
    started = time.perf_counter()
    code = cli.main(["detect", "--output-dir", str(out), *map(str, args)])
    wall_seconds = time.perf_counter() - started
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return checked(out, wall_seconds), captured


def checked(out, wall_seconds):
    """The run's record, once its CSV, its clocks and its serving latency check out."""
    result = json.loads((out / "result.json").read_text())
    assert_csv_matches_json(out)
    assert_timing_wiring(result, wall_seconds, epochs=result["config"]["epochs"],
                         test_images=result["dataset"]["test_images"])
    # The latency reported is the whole serving call's, the last of the three probes.
    assert result["inference"]["stages_mean_ms"]["total"] == result["inference"]["mean_ms"]
    return result


def assert_trained_detector(result, base, dtypes):
    """What a detector run's record holds of its one epoch: the precision that ran, no loss scaling, a finite
    loss, and the training FLOPs counted from the training step (tests/test_detect_flops.py)."""
    assert (result["model"]["compute_dtype"], result["model"]["variable_dtype"]) == dtypes
    assert result["model"]["loss_scaling"] is False
    (loss,) = result["train"]["loss_per_epoch"]
    assert math.isfinite(loss) and loss > 0
    utilisation = result["utilisation"]
    assert utilisation["train_flops_per_image"].startswith("counted: TensorFlow's profiler over the traced training")
    if base.startswith("faster_rcnn"):  # 64 sampled regions per image in training against serving's 300
        assert utilisation["train_gflops_per_image"] < 3 * utilisation["forward_gflops_per_image"]


# faster_rcnn_resnet50 runs end to end in mixed_bfloat16 (the mixed precision a CPU runs at a usable speed;
# float16 is emulated: minutes, checked by hand) through TFDS on two devices: tests/test_tfds.py. The merge tier
# checks the suite's tiny detector (tests/conftest.py); every other detector is the long tier's.
@pytest.mark.parametrize("base", ["ssd_resnet50_fpn", pytest.param("faster_rcnn_inception_v2", marks=pytest.mark.long)])
def test_each_detector_end_to_end(tmp_path, capsys, tiny_runs, base):
    if base == "ssd_resnet50_fpn":  # the suite's tiny detector run (tests/conftest.py), these flags: made once
        out, captured = tiny_runs[base], tiny_runs.output(base)
        result, epochs = checked(out, captured.wall_seconds), tiny_runs.epochs_flag(base)
        export = export_dir(out)
    else:  # the custom backbone is the one most likely to break a SavedModel: that run exports too
        out, epochs, export = tmp_path / "out", ["--epochs", 1], tmp_path / "saved_model"
        result, captured = detect(tmp_path, capsys, "--base", base, "--image-size", 128, "--limit", 4, "--batch-size", 2,
                                  "--precision", "fp32", *epochs, "--export", export, "--score-threshold", 0)
    assert_trained_detector(result, base, ("float32", "float32"))
    if not epochs:  # without --epochs and without a GPU the run trains 1 epoch and projects the article's 200
        assert "no GPU visible: training 1 epoch instead of the article's 200" in captured.err
        assert result["config"]["epochs"] == 1 and result["notes"]["epochs_defaulted_for_cpu"] is True
        projected = result["notes"]["projected_article_protocol_seconds"]  # the first epoch + 199 steady ones
        steps = result["train"]["first_epoch_step_seconds"]
        assert len(steps) >= 2, steps  # the tiny run's epoch has steps to take a steady pace from
        steady = sum(steps[1:]) / (len(steps) - 1) * len(steps)
        assert projected == pytest.approx(result["train"]["first_epoch_seconds"] + 199 * steady)
    assert RESULT_KEYS <= result.keys() and result["task"] == "detect" and result["complete"] is True
    assert result["dataset"]["source"] == "stand-in" and result["dataset"]["test_images"] == 4
    assert result["model"]["classes"] == ["apple", "banana", "orange"] and result["model"]["num_classes"] == 4
    assert TRAIN_KEYS <= result["train"].keys() and result["train"]["epochs"] == 1
    inference = result["inference"]
    assert INFERENCE_KEYS <= inference.keys()
    assert inference["images_timed"] == result["dataset"]["test_images"] - 1 == 3
    assert set(inference["stages_mean_ms"]) == {"preprocess", "model_with_postprocess", "total"}
    # The mAP reported is what the ground truth and detections written beside it score.
    scored = [json.loads((out / f"coco_{name}.json").read_text()) for name in ("ground_truth", "detections")]
    assert result["accuracy"] == evaluate(*scored)
    assert set(result["accuracy"]["per_class_ap_50"]) == {"apple", "banana", "orange"}
    assert "COCO mAP" in captured.out and "mean ms/image" in captured.out
    assert result["notes"]["serving_over_model"] > 0 and 0 < result["notes"]["preprocess_share"] < 1
    assert result["notes"]["export_dir"] == str(export.resolve())
    assert "SavedModel:" in captured.out
    assert_export_reproduces_the_run(export, out, expect_detections=base != "ssd_resnet50_fpn")


def assert_export_reproduces_the_run(export, out_dir, expect_detections=True):
    """The SavedModel gives the detections the run scored: same weights, same pre- and post-processing. A young
    SSD keeps no box at all (its sigmoid scores stay under Model Garden's own NMS threshold): then every image
    must give none again."""
    import numpy as np
    import tensorflow as tf

    from l40sbench.data.images import decode_rgb
    from l40sbench.data.voc import split_dir
    from l40sbench.detect.evaluate import to_coco_detections
    from l40sbench.detect.standin import standin_path

    serve = tf.saved_model.load(str(export)).signatures["serving_default"]
    ground_truth = json.loads((out_dir / "coco_ground_truth.json").read_text())
    scored = json.loads((out_dir / "coco_detections.json").read_text())
    assert bool(scored) == expect_detections  # every box the model kept (--score-threshold 0)
    root = split_dir(standin_path(), "test")
    for image in ground_truth["images"]:
        pixels = decode_rgb((root / image["file_name"]).read_bytes())
        out = serve(tf.constant(pixels[None]))
        n = int(out["num_detections"][0])
        # Model Garden keeps the aspect: the longer side becomes 128, each side rounded on its own.
        ratio = 128 / max(image["height"], image["width"])
        scale_yx = (round(image["height"] * ratio) / image["height"], round(image["width"] * ratio) / image["width"])
        again = to_coco_detections(
            image["id"], out["detection_boxes"][0, :n].numpy(), out["detection_classes"][0, :n].numpy().astype(int),
            out["detection_scores"][0, :n].numpy(), scale_yx=scale_yx, score_threshold=0.0,
        )
        before = [d for d in scored if d["image_id"] == image["id"]]
        assert [d["category_id"] for d in again] == [d["category_id"] for d in before]
        np.testing.assert_allclose([d["bbox"] for d in again], [d["bbox"] for d in before], atol=1e-3)
        np.testing.assert_allclose([d["score"] for d in again], [d["score"] for d in before], atol=1e-5)


def test_infer_times_a_detector_run_again_through_its_reloaded_saved_model(tiny_runs, tmp_path):
    """`infer` on the suite's tiny detector (a copy of its folder; the SavedModel stays where the run put it):
    the test split read again with the run's settings, tf timed afresh as the reference, its score as the run's."""
    import shutil

    run = tmp_path / "run"
    shutil.copytree(tiny_runs["ssd_resnet50_fpn"], run)
    before = json.loads((run / "result.json").read_text())
    result = cli_in_process("infer", run, "--runtimes", "tf")
    assert result.returncode == 0, result.stderr
    assert "through the reloaded SavedModel" in result.stderr
    after = json.loads((run / "result.json").read_text())
    assert after["notes"]["infer_runs"][-1]["complete"] and after["inference"]["mean_ms"] == before["inference"]["mean_ms"]
    (tf,) = [row for row in after["inference"]["runtimes"] if row["runtime"] == "tf"]
    assert tf["status"] == "ok" and tf["inference"]["images_timed"] == before["inference"]["images_timed"]
    assert tf["accuracy"]["detections"] == before["accuracy"]["detections"]  # the same model on the same images
    assert tf["accuracy"]["map_50_95"] == pytest.approx(before["accuracy"]["map_50_95"], abs=1e-6)
