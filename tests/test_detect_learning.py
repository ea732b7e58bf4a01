"""A detector learns, and an interrupted detector run keeps its finished epochs: a module of its own so that
CI's workers share the detector runs (tests/conftest.py, SLOWEST_FIRST).

A crash mid-training is the harness's (harness.run.run_task), the same for both tasks:
tests/test_classify_e2e.py checks it once."""

import pytest

from tests.conftest import assert_ctrl_c_keeps_finished_epochs
from tests.test_detect_e2e import detect

pytestmark = pytest.mark.long  # 20 detector epochs; the merge tier's Ctrl-C is classify's

LOSS_RATIO_BOUND = 0.85


def test_training_lowers_the_loss(tmp_path, capsys):
    """A loop that does not update the weights keeps its loss and fails here.

    The detection loss without the L2 term (which random init makes large and slow to
    move), its last three epochs against its first three: one epoch's loss moves by
    ±10 % with the parser's random flips and scales alone, so single epochs are too
    noisy to compare (docs/performance-log.md, "How far the learning tests are from their bounds", has the spread over seeds and
    thread counts).
    """
    result, _ = detect(
        tmp_path, capsys, "--base", "ssd_resnet50_fpn", "--image-size", 128, "--limit", 8, "--epochs", 20,
        "--batch-size", 4,
    )
    model_loss = result["notes"]["loss_components_per_epoch"]["model_loss"]
    assert len(model_loss) == 20
    ratio = sum(model_loss[-3:]) / sum(model_loss[:3])
    assert ratio < LOSS_RATIO_BOUND, f"last 3 / first 3 epochs' model loss {ratio:.3f} (bound {LOSS_RATIO_BOUND})"


QUICK = ["--base", "ssd_resnet50_fpn", "--image-size", "128", "--limit", "2", "--batch-size", "2"]


def test_ctrl_c_keeps_finished_epochs(tmp_path):
    assert_ctrl_c_keeps_finished_epochs(tmp_path / "interrupted", "detect", *QUICK)


def test_xla_compiles_the_training_step_and_the_record_says_so(tmp_path, capsys):
    result, _ = detect(tmp_path, capsys, *QUICK, "--epochs", "2", "--xla")
    assert result["config"]["xla"] is True
    assert result["devices"]["compile"] == {"training": "XLA (jit_compile)",
                                            "inference": "tf.function (the serving signature), no XLA"}
    assert result["devices"]["trained_weight_max_change"] > 0
    assert result["utilisation"]["train_gflops_per_image"] > 2 * result["utilisation"]["forward_gflops_per_image"]
