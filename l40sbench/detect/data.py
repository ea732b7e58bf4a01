"""detect's data: the annotations of a VOC folder, a TFDS set or the generated stand-in, with --limit."""

from __future__ import annotations

from pathlib import Path

from l40sbench import paths
from l40sbench.core.text import Log
from l40sbench.data import tfds_detection, tfds_source, voc
from l40sbench.detect.config import DetectConfig
from l40sbench.detect.standin import ensure_standin, standin_path
from l40sbench.errors import UserError


def load_annotations(config: DetectConfig, log: Log):
    """(train, test, classes, source, skipped files, images dropped per split) from --data (a VOC folder or
    a TFDS set) or the stand-in, --limit applied."""
    if tfds_source.is_tfds(config.data):
        ref = tfds_source.TfdsRef.parse(config.data, config.tfds_data_dir, config.tfds_splits)
        got = tfds_detection.load_detection(ref, config.classes, strict=config.strict, cache_dir=paths.cache_dir(),
                                         log=log)
        return (spread(got.train, config.limit), spread(got.test, config.limit), got.classes, got.source,
                got.skipped_files, got.dropped)
    if config.data is None:
        root = ensure_standin(standin_path())
        log(f"data: generated stand-in for Kaggle 'Fruit Images for Object Detection' at {root} (not the real set)")
        source = "stand-in"
    else:
        root, source = Path(config.data), str(Path(config.data).resolve())
        if not root.is_dir():
            raise UserError(f"data directory not found: {root}")
    train, skipped_train = voc.load_split(root, "train", config.classes, log, config.strict)
    test, skipped_test = voc.load_split(root, "test", config.classes, log, config.strict)
    classes = config.classes or voc.class_names(train + test)
    if not classes:
        raise UserError(f"no objects in the annotations under {root}")
    return (spread(train, config.limit), spread(test, config.limit), tuple(classes), source,
            tuple(skipped_train + skipped_test), {})


def spread(annotations: list, limit: int | None) -> list:
    """At most `limit` images, evenly spaced over the sorted files so every kind is kept."""
    if limit is None or limit >= len(annotations):
        return annotations
    return [annotations[i * len(annotations) // limit] for i in range(limit)]
