"""VOC -> TFRecord -> Model Garden's own decoder gives back the XML's boxes and labels."""

import numpy as np
import tensorflow as tf
from official.vision.dataloaders.tf_example_decoder import TfExampleDecoder

from l40sbench.data import voc
from l40sbench.detect import tfrecords
from l40sbench.detect.tfrecords import cached_tfrecord
from tests.test_voc import _png, _write, _xml


def _no_conversion(*_):
    raise AssertionError("converted again instead of reading the cache")


def test_round_trip_through_model_garden_decoder(tmp_path, monkeypatch):
    folder = tmp_path / "train"
    _write(folder, "a", _xml([("banana", (10, 20, 60, 70)), ("apple", (-4, 5, 30.5, 200))]), _png(100, 80))
    _write(folder, "b", _xml([]), _png(64, 48, "RGBA"), ".jpg")  # background image, PNG RGBA data in .jpg
    annotations = [voc.parse_annotation(i, x) for i, x in voc.pair_files(folder)]
    classes = voc.class_names(annotations)
    assert classes == ("apple", "banana")
    path = cached_tfrecord(annotations, classes, tmp_path / "cache", "train")
    written = path.read_bytes()
    with monkeypatch.context() as patched:  # the second call must read the cache, not convert again
        patched.setattr(tfrecords, "write_tfrecord", _no_conversion)
        assert cached_tfrecord(annotations, classes, tmp_path / "cache", "train") == path
    other = cached_tfrecord(annotations, ("apple", "banana", "kiwi"), tmp_path / "cache", "train")
    assert other != path and path.read_bytes() == written  # other classes, other key; the first file untouched

    decoder = TfExampleDecoder()
    decoded = [decoder.decode(record) for record in tf.data.TFRecordDataset(str(path))]
    assert len(decoded) == 2
    first, second = decoded
    np.testing.assert_allclose(
        first["groundtruth_boxes"].numpy(),
        [[20 / 80, 10 / 100, 70 / 80, 60 / 100], [5 / 80, 0.0, 80 / 80, 30.5 / 100]],  # ymin, xmin, ymax, xmax
        rtol=1e-6,
    )
    assert first["groundtruth_classes"].numpy().tolist() == [2, 1]
    assert tuple(first["image"].shape) == (80, 100, 3)
    assert int(first["height"]) == 80 and int(first["width"]) == 100
    assert first["source_id"].numpy() == b"1"
    assert second["groundtruth_boxes"].shape[0] == 0 and tuple(second["image"].shape) == (48, 64, 3)
