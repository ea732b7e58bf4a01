"""TensorFlow Datasets as a data source: real TFDS sets built here from the stand-ins, no mocks.

The sets are made with TFDS's own adhoc builder (store_as_tfds_dataset) and prepared into a
temporary data dir; the CLI then reads them in fresh interpreters (the classification set's stats here, the runs
of the long tier), where no builder code for them exists, as a set prepared elsewhere and copied in would be read.
"""

import json
import shutil
import time

import pytest

from tests.conftest import assert_one_line_exit_2, cli_in_process, run_cli
from tests.test_detect_e2e import assert_trained_detector, checked
from tests.test_devices import trained_in_sync

CATS = "l40s_cats_standin"
FRUITS = "l40s_fruits_standin"


def _build_sets(data_dir):
    import tensorflow_datasets as tfds

    from l40sbench.classify import standin as cats_standin
    from l40sbench.classify.standin import standin_path as cats_path
    from l40sbench.data import voc
    from l40sbench.detect.standin import ensure_standin as fruits_standin
    from l40sbench.detect.standin import standin_path as fruits_path

    cats_root = cats_standin.ensure_standin(cats_path())
    classes = sorted(p.name for p in (cats_root / "train").iterdir())
    splits = {split: [(f"{split}/{name}/{path.name}", {"image": str(path), "label": label})
                      for label, name in enumerate(classes) for path in sorted((cats_root / split / name).iterdir())]
              for split in ("train", "test")}
    tfds.dataset_builders.store_as_tfds_dataset(
        name=CATS, version="1.0.0", data_dir=str(data_dir), split_datasets=splits,
        features=tfds.features.FeaturesDict({"image": tfds.features.Image(),
                                             "label": tfds.features.ClassLabel(names=classes)}))

    fruits_root = fruits_standin(fruits_path())
    names = ["apple", "banana", "orange"]
    detect_splits = {}
    for split in ("train", "test"):
        annotations, _ = voc.load_split(fruits_root, split)
        detect_splits[split] = [
            (a.image_path.name, {"image": str(a.image_path), "objects": {
                "bbox": [tfds.features.BBox(o.ymin / a.height, o.xmin / a.width, o.ymax / a.height, o.xmax / a.width)
                         for o in a.objects],
                "label": [names.index(o.name) for o in a.objects]}})
            for a in annotations]
    tfds.dataset_builders.store_as_tfds_dataset(
        name=FRUITS, version="1.0.0", data_dir=str(data_dir), split_datasets=detect_splits,
        features=tfds.features.FeaturesDict({
            "image": tfds.features.Image(),
            "objects": tfds.features.Sequence({"bbox": tfds.features.BBoxFeature(),
                                               "label": tfds.features.ClassLabel(names=names)})}))
    return cats_standin.COUNTS


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    """Both sets prepared in one data dir, then copied to another (as from another machine)."""
    built = tmp_path_factory.mktemp("tfds_built")
    _build_sets(built)
    copied = tmp_path_factory.mktemp("tfds_copied") / "data"
    shutil.copytree(built, copied)
    return copied


def _table(stdout: str) -> dict:
    rows = [[c.strip() for c in line.split("|")] for line in stdout.splitlines() if "|" in line and "-+-" not in line]
    header, *body = rows
    return {row[0]: dict(zip(header[1:], map(int, row[1:]))) for row in body}


def test_stats_of_a_classification_set_match_the_standin(data_dir):
    from l40sbench.classify.standin import COUNTS

    result = run_cli("datasets", "stats", "--data", f"tfds:{CATS}", "--tfds-data-dir", data_dir)  # a fresh interpreter
    assert result.returncode == 0, result.stderr
    assert f"tfds:{CATS}:1.0.0 (splits train, test" in result.stdout
    table = _table(result.stdout)
    for split, counts in COUNTS.items():
        assert table[split] == {**counts, "images": sum(counts.values())}


def test_stats_of_a_detection_set_count_objects_per_class(data_dir):
    from l40sbench.detect.standin import COUNTS

    result = cli_in_process("datasets", "stats", "--data", f"tfds:{FRUITS}:1.0.0", "--tfds-data-dir", data_dir)
    assert result.returncode == 0, result.stderr
    assert "objects per class" in result.stdout
    table = _table(result.stdout)
    for split, counts in COUNTS.items():
        assert table[split] == counts


@pytest.mark.long
def test_classify_through_tfds_end_to_end_then_from_the_decoded_cache(data_dir, tmp_path):
    args = ["classify", "--data", f"tfds:{CATS}", "--tfds-data-dir", data_dir, "--tfds-splits", "train,test[:50%]",
            "--base", "vgg19", "--image-size", "32", "--limit", "8", "--batch-size", "4", "--epochs", "1",
            "--weights", "none"]
    first = run_cli(*args, "--output-dir", tmp_path / "a")
    assert first.returncode == 0, first.stderr
    assert "decoding TFDS" in first.stderr and "from cache" not in first.stderr
    record = json.loads((tmp_path / "a" / "result.json").read_text())
    assert record["dataset"]["source"].startswith(f"tfds:{CATS}:1.0.0 (splits train, test[:50%]")
    assert record["dataset"]["classes"] == {"train": {"cats": 4, "dogs": 4}, "test": {"cats": 4, "dogs": 4}}
    assert record["config"]["data"] == f"tfds:{CATS}" and record["config"]["tfds_splits"] == ["train", "test[:50%]"]
    assert record["complete"] and record["inference"]["images_timed"] == 7
    second = run_cli(*args, "--output-dir", tmp_path / "b")
    assert second.returncode == 0, second.stderr
    assert "decoded images from cache" in second.stderr and "decoding TFDS" not in second.stderr
    again = json.loads((tmp_path / "b" / "result.json").read_text())
    assert again["dataset"] == record["dataset"]


@pytest.mark.long
def test_detect_through_tfds_with_a_class_subset_on_2_logical_devices(data_dir, tmp_path):
    """One detector run for three capabilities (a detector run is CI's costliest unit): a TFDS set with a class
    subset, trained through Model Garden's trainer under MirroredStrategy on two logical CPU devices, and
    faster_rcnn_resnet50 end to end in mixed_bfloat16 (tests/test_detect_e2e.py runs the other two detectors)."""
    started = time.perf_counter()
    result = run_cli("detect", "--data", f"tfds:{FRUITS}", "--tfds-data-dir", data_dir, "--classes", "apple,banana",
                     "--base", "faster_rcnn_resnet50", "--precision", "mixed_bfloat16", "--image-size", "128",
                     "--limit", "4", "--batch-size", "2", "--epochs", "1", "--devices", "2", "--output-dir", tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    record = checked(tmp_path, time.perf_counter() - started)
    trained_in_sync(record, 2, 2)
    assert record["model"]["steps_per_epoch"] == 1  # 4 images at a global batch of 4
    assert record["dataset"]["source"].startswith(f"tfds:{FRUITS}:1.0.0")
    assert record["dataset"]["train_images"] == 4 and record["dataset"]["test_images"] == 4
    assert set(record["dataset"]["classes"]["train"]) <= {"apple", "banana"}
    dropped = record["notes"]["images_dropped_without_selected_class"]
    assert dropped["train"] > 0 and dropped["test"] > 0 and "dropped images without an object" in result.stderr
    assert record["accuracy"]["map_50_95"] is not None and record["inference"]["images_timed"] == 3
    assert set(record["accuracy"]["per_class_ap_50"]) == {"apple", "banana"}
    assert_trained_detector(record, "faster_rcnn_resnet50", ("bfloat16", "float32"))  # counted per replica


def test_a_missing_set_is_one_line_and_exit_2_quickly(tmp_path):
    started = time.monotonic()
    result = cli_in_process("classify", "--data", "tfds:no_such_set_anywhere", "--tfds-data-dir", tmp_path, "--epochs", "1")
    assert_one_line_exit_2(result, f"is not prepared in {tmp_path}")
    assert "tfds build no_such_set_anywhere --data_dir DIR" in result.stderr
    assert time.monotonic() - started < 60


@pytest.mark.parametrize("args, fragment", [
    (["classify", "--data", "tfds:"], "expected tfds:NAME or tfds:NAME:VERSION"),
    (["detect", "--data", "tfds:a:b:c"], "expected tfds:NAME or tfds:NAME:VERSION"),
    (["classify", "--data", "tfds:x", "--tfds-splits", "train"], "--tfds-splits takes TRAIN,TEST"),
    (["classify", "--tfds-splits", "train,test"], "go with --data tfds:NAME"),
    (["classify", "--data", "tfds:x", "--tfds-splits", "train,train"], "gives 'train' for both training and test"),
    (["datasets", "stats", "--tfds-data-dir", "/tmp"], "go with --data tfds:NAME"),
])
def test_bad_tfds_flags_are_one_line_and_exit_2(args, fragment):
    assert_one_line_exit_2(cli_in_process(*args), fragment)


def test_splits_a_set_lacks_are_refused_with_the_slicing_hint(data_dir):
    result = cli_in_process("datasets", "stats", "--data", f"tfds:{CATS}", "--tfds-data-dir", data_dir,
                            "--tfds-splits", "train,validation")
    assert_one_line_exit_2(result, "'validation' is not a split of")
    empty = cli_in_process("classify", "--data", f"tfds:{CATS}", "--tfds-data-dir", data_dir, "--tfds-splits", "train[:0%],test")
    assert_one_line_exit_2(empty, "'train[:0%]' selects no example of")


def test_classify_reads_a_tfds_set_once_then_from_the_decoded_cache(data_dir, tmp_path):
    """The loader the long tier's classify run goes through, in process: decoded once, then from the cache."""
    import numpy as np

    from l40sbench.data.tfds_source import TfdsRef, load_classification

    ref = TfdsRef.parse(f"tfds:{CATS}", data_dir, "train,test[:50%]")
    logs: list[str] = []
    first, source = load_classification(ref, 32, limit=8, strict=False, cache_dir=tmp_path, log=logs.append)
    assert any("decoding TFDS" in line for line in logs) and not first.cache_hit
    assert source.startswith(f"tfds:{CATS}:1.0.0 (splits train, test[:50%]")
    assert first.x["train"].shape == (8, 32, 32, 3) and sorted(np.bincount(first.y["train"])) == [4, 4]
    logs.clear()
    second, _ = load_classification(ref, 32, limit=8, strict=False, cache_dir=tmp_path, log=logs.append)
    assert second.cache_hit and any("decoded images from cache" in line for line in logs)
    assert not any("decoding TFDS" in line for line in logs)
    for split in first.x:
        assert np.array_equal(first.x[split], second.x[split]) and np.array_equal(first.y[split], second.y[split])


def test_detect_reads_a_tfds_set_as_the_voc_boxes_it_was_made_from(data_dir, tmp_path, monkeypatch):
    """TFDS's normalised (y, x) boxes come back as the VOC stand-in's pixel boxes; a class subset drops the rest."""
    from l40sbench.data import tfds_detection, voc
    from l40sbench.data.tfds_source import TfdsRef
    from l40sbench.detect.standin import ensure_standin, standin_path
    from l40sbench.errors import UserError

    ref = TfdsRef.parse(f"tfds:{FRUITS}", data_dir)
    logs: list[str] = []
    data = tfds_detection.load_detection(ref, ("apple", "banana"), strict=False, cache_dir=tmp_path, log=logs.append)
    assert data.classes == ("apple", "banana") and data.source.startswith(f"tfds:{FRUITS}:1.0.0")
    assert data.dropped["train"] > 0 and data.dropped["test"] > 0
    assert any("dropped images without an object" in line for line in logs)
    source, _ = voc.load_split(ensure_standin(standin_path()), "train")
    def boxes(annotations, keep=lambda name: True):  # TFDS keeps its own order: compared as sorted lists
        return sorted(key for key in ((a.width, a.height, tuple((o.name, round(o.xmin), round(o.ymin), round(o.xmax),
                                                                  round(o.ymax)) for o in a.objects if keep(o.name)))
                                      for a in annotations) if key[2])

    assert boxes(data.train) == boxes(source, lambda name: name in data.classes)
    assert len(data.train) == len(source) - data.dropped["train"]
    assert all(a.image_path.is_file() for a in data.train + data.test)

    def no_second_read(*_):
        raise AssertionError("the split was read again instead of its cached index")

    monkeypatch.setattr(tfds_detection, "examples", no_second_read)
    again = tfds_detection.load_detection(ref, None, strict=False, cache_dir=tmp_path, log=lambda _: None)
    assert set(again.classes) == {"apple", "banana", "orange"} and not any(again.dropped.values())
    with pytest.raises(UserError, match="not in TFDS set"):
        tfds_detection.load_detection(ref, ("pear",), strict=False, cache_dir=tmp_path, log=lambda _: None)


def test_a_set_tfds_knows_but_nobody_prepared_says_how_to_prepare_it(tmp_path):
    """A registered set absent from the data dir: with no time to prepare it, the one line names the command;
    a preparing child past its deadline is ended (no network is reached either way)."""
    from l40sbench.data.tfds_source import TfdsRef, _prepare_bounded, open_builder
    from l40sbench.errors import UserError

    ref = TfdsRef.parse("tfds:mnist", tmp_path)
    with pytest.raises(UserError, match=r"preparing it failed \(preparing was not attempted\); prepare it where"):
        open_builder(ref, lambda _: None, timeout_s=0)
    started = time.monotonic()
    assert _prepare_bounded(ref, 0.2) == "no result within 0 s"
    assert time.monotonic() - started < 60  # a hang guard: the child is killed at 0.2 s
