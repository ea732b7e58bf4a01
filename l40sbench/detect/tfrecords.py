"""VOC annotations -> TFRecords of tf.Example in the keys Model Garden's decoder reads.

Converted once and cached by a hash of the files' content and the class list.
Images are re-encoded as JPEG from the OpenCV decode, so PNG-in-.jpg, CMYK,
palette and RGBA files all reach TensorFlow's decoder as plain RGB JPEG.
Class ids start at 1 (0 is background in Model Garden's detectors).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

import cv2

from l40sbench.data.images import decode_rgb
from l40sbench.data.voc import VocImage

CONVERTER_VERSION = 1


def _feature(values, kind: str):
    import tensorflow as tf

    values = list(values)
    if kind == "bytes":
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=values))
    if kind == "int":
        return tf.train.Feature(int64_list=tf.train.Int64List(value=values))
    return tf.train.Feature(float_list=tf.train.FloatList(value=values))


def to_example(annotation: VocImage, classes: Sequence[str], image_id: int):
    """One tf.Example: JPEG bytes, size, normalised boxes, 1-based class ids."""
    import tensorflow as tf

    rgb = decode_rgb(annotation.image_path.read_bytes())
    ok, jpeg = cv2.imencode(".jpg", cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, 95])
    if not ok:
        raise RuntimeError(f"JPEG encoding failed for {annotation.image_path}")
    w, h = float(annotation.width), float(annotation.height)
    objects = annotation.objects
    features = {
        "image/encoded": _feature([jpeg.tobytes()], "bytes"),
        "image/format": _feature([b"jpeg"], "bytes"),
        "image/filename": _feature([annotation.image_path.name.encode()], "bytes"),
        "image/source_id": _feature([str(image_id).encode()], "bytes"),
        "image/height": _feature([annotation.height], "int"),
        "image/width": _feature([annotation.width], "int"),
        "image/object/bbox/xmin": _feature([o.xmin / w for o in objects], "float"),
        "image/object/bbox/xmax": _feature([o.xmax / w for o in objects], "float"),
        "image/object/bbox/ymin": _feature([o.ymin / h for o in objects], "float"),
        "image/object/bbox/ymax": _feature([o.ymax / h for o in objects], "float"),
        "image/object/class/label": _feature([classes.index(o.name) + 1 for o in objects], "int"),
        "image/object/class/text": _feature([o.name.encode() for o in objects], "bytes"),
        "image/object/area": _feature([(o.xmax - o.xmin) * (o.ymax - o.ymin) for o in objects], "float"),
        "image/object/is_crowd": _feature([0] * len(objects), "int"),
    }
    return tf.train.Example(features=tf.train.Features(feature=features))


def content_key(annotations: Sequence[VocImage], classes: Sequence[str]) -> str:
    digest = hashlib.sha256(f"v{CONVERTER_VERSION}:{list(classes)}".encode())
    for annotation in annotations:
        digest.update(annotation.image_path.name.encode() + b"\0")
        digest.update(hashlib.sha256(annotation.image_path.read_bytes()).digest())
        digest.update(repr((annotation.width, annotation.height, annotation.objects)).encode())
    return digest.hexdigest()[:32]


def write_tfrecord(path: Path, annotations: Sequence[VocImage], classes: Sequence[str]) -> Path:
    """Writes atomically; image ids are 1-based positions (the COCO ground truth uses the same)."""
    import tensorflow as tf

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tfrecord.tmp")
    os.close(fd)
    try:
        with tf.io.TFRecordWriter(tmp) as writer:
            for image_id, annotation in enumerate(annotations, start=1):
                writer.write(to_example(annotation, classes, image_id).SerializeToString())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def cached_tfrecord(
    annotations: Sequence[VocImage], classes: Sequence[str], cache_dir: Path, split: str
) -> Path:
    """The split's TFRecord, converted only when no file with the same content key exists."""
    path = Path(cache_dir) / f"detect-{split}-{content_key(annotations, classes)}.tfrecord"
    return path if path.is_file() else write_tfrecord(path, annotations, classes)
