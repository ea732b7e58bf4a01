"""A TFDS set with objects/bbox and objects/label as detect's data: its encoded images written once under the
cache, and the VOC path's annotations made from its boxes, so the rest of detect reads files as for VOC."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from l40sbench.data.tfds_source import (
    Log,
    TfdsRef,
    content_key,
    detection_features,
    examples,
    open_builder,
    resolve_splits,
    source_label,
)
from l40sbench.errors import UserError


@dataclass(frozen=True)
class DetectionData:
    """What detect reads from a TFDS set: the VOC path's annotations and what was left out."""

    train: list
    test: list
    classes: tuple[str, ...]
    source: str
    skipped_files: tuple[str, ...]
    dropped: dict[str, int]  # images per split without an object of the selected classes


def _materialise(builder, ref: TfdsRef, split: str, image_key: str, names, folder: Path, strict: bool,
                 log: Log) -> tuple[list, list[str]]:
    """Writes the split's encoded images under folder (once) and returns (VocImage list, skipped), all classes."""
    import json

    from l40sbench.core.records import write_atomic
    from l40sbench.data.images import decode_rgb
    from l40sbench.data.voc import VocImage, VocObject

    tag = re.sub(r"[^A-Za-z0-9]+", "_", split)
    index_path = folder / f"{tag}.json"
    if not index_path.is_file():
        entries, skipped = [], []
        folder.mkdir(parents=True, exist_ok=True)
        for number, example in enumerate(examples(builder, split, image_key)):
            data = bytes(example[image_key])
            rgb = decode_rgb(data)
            where = f"tfds:{ref.name} {split} #{number}"
            if rgb is None:
                skipped.append(where)
                continue
            path = folder / f"{tag}-{number:06d}.img"
            path.write_bytes(data)
            height, width = rgb.shape[:2]
            boxes = [[float(v) for v in box] for box in example["objects"]["bbox"]]
            entries.append({"file": path.name, "width": width, "height": height,
                            "objects": [[names[int(label)], *box]
                                        for label, box in zip(example["objects"]["label"], boxes)]})
        write_atomic(index_path, json.dumps({"entries": entries, "skipped": skipped}))
    index = json.loads(index_path.read_text())
    if index["skipped"] and strict:
        raise UserError(f"unreadable image (--strict): {index['skipped'][0]}")
    for where in index["skipped"]:
        log(f"warning: skipping unreadable image {where}")
    annotations = []
    for entry in index["entries"]:
        width, height = entry["width"], entry["height"]
        objects = tuple(VocObject(name, xmin * width, ymin * height, xmax * width, ymax * height)
                        for name, ymin, xmin, ymax, xmax in entry["objects"]  # TFDS boxes: normalised y, x
                        if (xmax - xmin) * width >= 1 and (ymax - ymin) * height >= 1)  # as VOC drops degenerate ones
        annotations.append(VocImage(folder / entry["file"], width, height, objects))
    return annotations, index["skipped"]


def load_detection(ref: TfdsRef, classes: tuple[str, ...] | None, *, strict: bool, cache_dir: Path, log: Log):
    """The VOC path's annotations from a set with objects/bbox and objects/label.

    The encoded images are written once under the cache (key: name, version, splits), so the
    rest of detect (TFRecords, Model Garden's parser, the serving probe) reads files as for VOC.
    With `classes`, other objects are dropped, then images left without an object, and counted.
    """
    from dataclasses import replace

    builder = open_builder(ref, log)
    splits = resolve_splits(builder, ref)
    image_key, names = detection_features(builder)
    unknown = sorted(set(classes or ()) - set(names))
    if unknown:
        raise UserError(f"--classes {unknown} not in TFDS set {ref.spec} (its classes: {list(names)})")
    selected = tuple(classes) if classes else tuple(names)
    folder = Path(cache_dir) / f"detect-tfds-{content_key(ref.name, str(builder.info.version), splits, image_key)}"
    out: dict[str, list] = {}
    dropped: dict[str, int] = {}
    skipped: list[str] = []
    for role, split in zip(("train", "test"), splits):
        log(f"reading TFDS {ref.spec} split {split} ...")
        annotations, unreadable = _materialise(builder, ref, split, image_key, names, folder, strict, log)
        skipped += unreadable
        kept = [replace(a, objects=tuple(o for o in a.objects if o.name in selected)) for a in annotations]
        out[role] = [a for a in kept if a.objects]
        dropped[role] = len(kept) - len(out[role])
        if not out[role]:
            raise UserError(f"TFDS set {ref.spec} split {split}: no image with an object of {list(selected)}")
    if any(dropped.values()):
        log(f"dropped images without an object of {list(selected)}: train {dropped['train']}, test {dropped['test']}")
    used = tuple(c for c in selected if any(o.name == c for a in out["train"] + out["test"] for o in a.objects))
    return DetectionData(out["train"], out["test"], tuple(classes) if classes else used,
                         source_label(builder, ref, splits), tuple(skipped), dropped)
