"""VOC -> TFRecord -> Model Garden's own decoder gives back the XML's boxes and labels."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from official.vision.dataloaders.tf_example_decoder import TfExampleDecoder  # noqa: E402

from l40sbench.detect import voc  # noqa: E402
from l40sbench.detect.tfrecords import cached_tfrecord  # noqa: E402
from tests.test_voc import _png, _write, _xml  # noqa: E402


def test_round_trip_through_model_garden_decoder(tmp_path):
    folder = tmp_path / "train"
    _write(folder, "a", _xml([("banana", (10, 20, 60, 70)), ("apple", (-4, 5, 30.5, 200))]), _png(100, 80))
    _write(folder, "b", _xml([]), _png(64, 48, "RGBA"), ".jpg")  # background image, PNG RGBA data in .jpg
    annotations = [voc.parse_annotation(i, x) for i, x in voc.pair_files(folder)]
    classes = voc.class_names(annotations)
    assert classes == ("apple", "banana")
    path = cached_tfrecord(annotations, classes, tmp_path / "cache", "train")
    assert cached_tfrecord(annotations, classes, tmp_path / "cache", "train") == path  # cached, same key

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
