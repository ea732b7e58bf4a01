"""Real Model Garden detectors on the fruit stand-in, at a small size."""

import json
import math

import pytest

from l40sbench import cli
from tests.test_classify_e2e import INFERENCE_KEYS, RESULT_KEYS, TRAIN_KEYS

pytest.importorskip("official.vision")


def detect(tmp_path, capsys, *args):
    out = tmp_path / "out"
    code = cli.main(["detect", "--output-dir", str(out), *map(str, args)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads((out / "result.json").read_text()), captured


@pytest.mark.parametrize("base", ["ssd_resnet50_fpn", "faster_rcnn_resnet50", "faster_rcnn_inception_v2"])
def test_each_detector_end_to_end(tmp_path, capsys, base):
    from l40sbench.tf_device import has_gpu

    # Without --epochs and without a GPU the run trains 1 epoch and projects the article's 200.
    epochs = ["--epochs", 1] if base != "ssd_resnet50_fpn" or has_gpu() else []
    result, captured = detect(
        tmp_path, capsys, "--base", base, "--image-size", 128, "--limit", 4, "--batch-size", 2, *epochs
    )
    if not epochs:
        assert "no GPU visible: training 1 epoch instead of the article's 200" in captured.err
        assert result["config"]["epochs"] == 1 and result["notes"]["epochs_defaulted_for_cpu"] is True
        projected = result["notes"]["projected_article_protocol_seconds"]
        assert projected == pytest.approx(200 * result["train"]["first_epoch_seconds"])
    assert RESULT_KEYS <= result.keys() and result["task"] == "detect" and result["complete"] is True
    assert result["dataset"]["source"] == "stand-in" and result["dataset"]["test_images"] == 4
    assert result["model"]["classes"] == ["apple", "banana", "orange"] and result["model"]["num_classes"] == 4
    assert TRAIN_KEYS <= result["train"].keys() and result["train"]["epochs"] == 1
    assert all(math.isfinite(loss) for loss in result["train"]["loss_per_epoch"])
    inference = result["inference"]
    assert INFERENCE_KEYS <= inference.keys()
    assert inference["images_timed"] == result["dataset"]["test_images"] - 1 == 3
    assert set(inference["stages_mean_ms"]) == {"preprocess", "model_with_postprocess", "total"}
    accuracy = result["accuracy"]
    assert 0.0 <= accuracy["map_50_95"] <= accuracy["map_50"] <= 1.0
    assert set(accuracy["per_class_ap_50"]) == {"apple", "banana", "orange"}
    assert "COCO mAP" in captured.out and "mean ms/image" in captured.out


def test_training_lowers_the_loss(tmp_path, capsys):
    """A loop that does not update the weights keeps its loss and fails here."""
    result, _ = detect(
        tmp_path, capsys, "--base", "ssd_resnet50_fpn", "--image-size", 128, "--limit", 8, "--epochs", 8,
        "--batch-size", 4,
    )
    # The detection loss without the L2 term, which random init makes large and slow to move.
    model_loss = result["notes"]["loss_components_per_epoch"]["model_loss"]
    assert len(model_loss) == 8
    assert model_loss[-1] < 0.85 * model_loss[0], model_loss
