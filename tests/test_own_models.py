"""Your own model: any keras.applications model by name, a .keras file of yours as the base, and Model Garden's
detectors by their experiment names."""

import hashlib
import json
import subprocess
import sys

import numpy as np
import pytest

from l40sbench.classify import applications
from l40sbench.classify.bases import BASES, NAMED
from tests.conftest import REPO, assert_one_line_exit_2, cli_in_process, run_cli

TINY = ("--image-size", "32", "--limit", "8", "--batch-size", "4", "--epochs", "1")


def test_every_installed_application_is_a_base_with_the_sizes_its_constructor_states():
    found = applications.constructors()
    assert sorted(BASES.names()) == sorted(name.lower() for name in found)
    for name, constructor in found.items():
        spec, stated = BASES.get(name.lower()), applications.stated_sizes(constructor)
        if stated is not None:
            assert (spec.default_size, spec.min_size) == stated, name
        assert spec.module == applications.module_of(name, constructor), name
    # the five the suite always named keep their entries
    assert [(BASES.get(n).default_size, BASES.get(n).min_size) for n in NAMED] == [
        (299, 71), (299, 75), (224, 32), (224, 32), (224, 32)]
    assert BASES.get("resnet50").module == "resnet50"


def test_the_table_counts_a_bases_parameters_as_keras_builds_it():
    import keras

    spec = BASES.get("mobilenetv3small")  # states no sizes: the one path that builds to find them
    assert (spec.default_size, spec.min_size) == (224, 32)
    built = keras.applications.MobileNetV3Small(include_top=False, weights=None, input_shape=(32, 32, 3))
    assert spec.parameters == built.count_params()
    keras.backend.clear_session()


def test_list_bases_lists_every_application_without_importing_keras():
    code = ("import sys; from l40sbench import cli; code = cli.main(['classify', '--list-bases']); "
            "assert code == 0; assert not {'keras', 'tensorflow', 'jax'} & set(sys.modules), sorted(sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if line.split(" ")[0] in BASES.names()]
    assert len(rows) == len(BASES.names()) >= 40
    assert any(row.startswith("efficientnetv2b0 ") and "| 224 " in row for row in rows)
    assert f"{len(rows)} bases: every keras.applications model" in done.stdout


def test_an_application_not_named_before_fine_tunes_end_to_end_by_any_case(tmp_path):
    out = tmp_path / "run"
    result = cli_in_process("classify", "--base", "MobileNet", *TINY, "--weights", "none",
                            "--output-dir", out)
    assert result.returncode == 0, result.stderr
    record = json.loads((out / "result.json").read_text())
    assert record["base"] == "mobilenet" and record["complete"] is True
    assert record["devices"]["trained_weight_max_change"] > 0
    assert record["utilisation"]["forward_gflops_per_image"] > 0


@pytest.fixture(scope="module")
def own_file(tmp_path_factory):
    """A small Keras model of the user's, saved as a .keras file: any image size in, a feature map out."""
    import keras

    inputs = keras.Input((None, None, 3))
    x = keras.layers.Rescaling(1 / 255)(inputs)
    x = keras.layers.Conv2D(8, 3, strides=2, activation="relu")(x)
    x = keras.layers.Conv2D(16, 3, strides=2, activation="relu")(x)
    path = tmp_path_factory.mktemp("own") / "mine.keras"
    keras.Model(inputs, x, name="mine").save(path)
    keras.backend.clear_session()
    return path


def test_a_keras_file_of_yours_fine_tunes_and_the_record_names_it(own_file, tmp_path):
    out = tmp_path / "run"
    result = cli_in_process("classify", "--model", own_file, *TINY, "--fine-tune", "all", "--output-dir", out)
    assert result.returncode == 0, result.stderr
    record = json.loads((out / "result.json").read_text())
    assert record["base"] == "mine" and record["weights"] == "the file's own (mine.keras)"
    facts = record["model"]["file"]
    assert facts["sha256"] == hashlib.sha256(own_file.read_bytes()).hexdigest()
    assert facts["bytes"] == own_file.stat().st_size
    assert record["devices"]["trained_weight_max_change"] > 0 and record["inference"]["images_timed"] > 0
    assert np.isfinite(record["train"]["loss_per_epoch"]).all()


@pytest.fixture(scope="module")
def text_file(tmp_path_factory):
    import keras

    inputs = keras.Input((12,), dtype="int32")
    x = keras.layers.Embedding(100, 8)(inputs)
    path = tmp_path_factory.mktemp("text") / "words.keras"
    keras.Model(inputs, keras.layers.GlobalAveragePooling1D()(x)).save(path)
    keras.backend.clear_session()
    return path


def test_a_file_that_is_not_a_model_of_images_is_one_line_and_exit_2(text_file, own_file, tmp_path):
    corrupt = tmp_path / "corrupt.keras"
    corrupt.write_bytes(b"not a zip at all")
    assert_one_line_exit_2(cli_in_process("classify", "--model", corrupt, *TINY), "is not a Keras model file")
    assert_one_line_exit_2(cli_in_process("classify", "--model", text_file, *TINY),
                           "its input is not an RGB image (batch, height, width, 3): it takes (None, 12)")
    assert_one_line_exit_2(cli_in_process("classify", "--model", tmp_path / "none.keras", *TINY), "no file at")
    assert_one_line_exit_2(cli_in_process("classify", "--model", own_file, "--weights", "none", *TINY),
                           "--weights does not apply with --model")
    assert_one_line_exit_2(cli_in_process("classify", "--model", own_file, "--base", "vgg19", *TINY),
                           "--base vgg19 does not apply with --model: the file is the base")
    assert_one_line_exit_2(cli_in_process("classify", "--base", "efficientnetv9", *TINY), "unknown base")


def test_detect_lists_model_gardens_experiments_beside_the_studys_detectors():
    result = run_cli("detect", "--list-bases")
    assert result.returncode == 0, result.stderr
    for name in ("retinanet_resnetfpn_coco", "fasterrcnn_resnetfpn_coco", "ssd_resnet50_fpn"):
        assert any(line.startswith(f"{name} ") for line in result.stdout.splitlines()), result.stdout
    assert "Model Garden's retinanet_resnetfpn_coco as registered" in result.stdout


@pytest.mark.long
@pytest.mark.parametrize("experiment", ["retinanet_resnetfpn_coco", "fasterrcnn_resnetfpn_coco"])
def test_model_gardens_detectors_train_and_serve_by_the_same_protocol(experiment, tmp_path, capsys):
    from tests.test_detect_e2e import detect

    result, _ = detect(tmp_path, capsys, "--base", experiment, "--image-size", 128, "--limit", 4,
                       "--batch-size", 2, "--epochs", 1)
    assert result["base"] == experiment
    assert result["model"]["model_garden_experiment"] == experiment
    assert result["utilisation"]["forward_gflops_per_image"] > 0 and "map_50_95" in result["accuracy"]
