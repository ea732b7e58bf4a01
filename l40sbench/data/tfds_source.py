"""TensorFlow Datasets as a data source: `--data tfds:NAME[:VERSION]` for classify, detect and stats.

A prepared set is read from its own files (TFDS needs no builder code for
that); a registered set that is not prepared gets one bounded attempt at
`download_and_prepare`, and otherwise one line naming the data dir and the
`tfds build` command that prepares it elsewhere. Images come out still
encoded (SkipDecoding) so they go through the suite's own decode and resize,
exactly as folder data does. tensorflow_datasets is imported only here.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from l40sbench.core.text import Log
from l40sbench.errors import UserError, said

PREFIX = "tfds:"
PREPARE_TIMEOUT_S = 40.0  # one attempt at preparing an absent set, in a child killed at the deadline
SPLITS_EXAMPLE = "train[:80%],train[80%:]"
SPLITS_HINT = f"--tfds-splits '{SPLITS_EXAMPLE}'"



def is_tfds(data) -> bool:
    return isinstance(data, str) and data.startswith(PREFIX)


@dataclass(frozen=True)
class TfdsRef:
    """A TFDS set as the user named it: `tfds:NAME` or `tfds:NAME:VERSION`, a data dir and splits."""

    name: str
    version: str | None = None
    data_dir: Path | None = None
    splits: tuple[str, str] | None = None

    @classmethod
    def parse(cls, text: str, data_dir: Path | None = None, splits: str | tuple | None = None) -> TfdsRef:
        parts = text[len(PREFIX):].split(":")
        if not parts[0] or len(parts) > 2 or (len(parts) == 2 and not parts[1]):
            raise UserError(f"--data {text!r}: expected tfds:NAME or tfds:NAME:VERSION (e.g. tfds:cats_vs_dogs:4.0.1)")
        if isinstance(splits, str):
            splits = tuple(s.strip() for s in splits.split(","))
            if len(splits) != 2 or not all(splits):
                raise UserError(f"--tfds-splits takes TRAIN,TEST in TFDS slicing syntax, e.g. {SPLITS_EXAMPLE}")
            if splits[0] == splits[1]:
                raise UserError(f"--tfds-splits gives {splits[0]!r} for both training and test: a model scored on "
                                f"the images it trained on says nothing; e.g. {SPLITS_EXAMPLE}")
        return cls(parts[0], parts[1] if len(parts) == 2 else None, data_dir, splits)

    @property
    def spec(self) -> str:
        return f"{self.name}:{self.version}" if self.version else self.name

    def data_root(self) -> str:
        """The data dir TFDS reads: --tfds-data-dir, else $TFDS_DATA_DIR, else ~/tensorflow_datasets."""
        return str(self.data_dir or os.environ.get("TFDS_DATA_DIR") or Path("~/tensorflow_datasets").expanduser())


def _prepare_bounded(ref: TfdsRef, timeout_s: float) -> str | None:
    """One `download_and_prepare` in a child process, killed at the deadline; None when it worked, else why not.

    A child, not a thread: TFDS downloads on pool threads that the interpreter waits for at exit,
    so a stalled download in a thread would hold the process long after the error was printed.
    """
    code = ("import sys, tensorflow_datasets as tfds; "
            "tfds.builder(sys.argv[1], data_dir=sys.argv[2] or None).download_and_prepare()")
    try:
        done = subprocess.run([sys.executable, "-c", code, ref.spec, str(ref.data_dir or "")], capture_output=True,
                              text=True, timeout=timeout_s, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    except subprocess.TimeoutExpired:
        return f"no result within {timeout_s:.0f} s"
    if done.returncode == 0:
        return None
    lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
    return (lines[-1] if lines else f"exit code {done.returncode}")[:200]


def open_builder(ref: TfdsRef, log: Log, timeout_s: float = PREPARE_TIMEOUT_S):
    """The prepared builder, or UserError naming the data dir and the command that prepares the set."""
    import tensorflow_datasets as tfds

    root = ref.data_root()
    prepare = (f"prepare it where there is network with `tfds build {ref.spec} --data_dir DIR`, copy DIR here "
               f"and pass --tfds-data-dir DIR")
    def builder_now():
        return tfds.builder(ref.spec, data_dir=str(ref.data_dir) if ref.data_dir else None)

    try:
        builder = builder_now()
    except Exception as exc:  # DatasetNotFoundError and friends: not registered and not in the data dir
        raise UserError(f"TFDS set {ref.spec!r} is not prepared in {root} and is not a dataset TFDS knows "
                        f"({said(exc)}); {prepare}") from None
    if builder.is_prepared():
        return builder
    if timeout_s <= 0:
        reason = "preparing was not attempted"
    else:
        log(f"TFDS set {ref.spec} is not prepared in {root}; trying to prepare it (at most {timeout_s:.0f} s) ...")
        reason = _prepare_bounded(ref, timeout_s)
        if reason is None:
            builder = builder_now()
            if builder.is_prepared():
                return builder
            reason = "it ended without a prepared set"
    raise UserError(f"TFDS set {ref.spec!r} is not prepared in {root} and preparing it failed ({reason}); {prepare}")


def resolve_splits(builder, ref: TfdsRef) -> tuple[str, str]:
    """(train, test) split expressions: --tfds-splits, else the set's own train and test."""
    available = list(builder.info.splits.keys())
    if ref.splits is None:
        if "train" in available and "test" in available:
            return "train", "test"
        raise UserError(f"TFDS set {ref.spec} has splits {available}, not both train and test: choose two with "
                        f"{SPLITS_HINT}")
    for split in ref.splits:
        try:
            examples = builder.info.splits[split].num_examples
        except Exception as exc:  # a bad slice or unknown split name
            raise UserError(f"--tfds-splits: {split!r} is not a split of {ref.spec} ({said(exc)}; "
                            f"splits: {available})") from None
        if not examples:
            raise UserError(f"--tfds-splits: {split!r} selects no example of {ref.spec} (splits: {available})")
    return ref.splits


def source_label(builder, ref: TfdsRef, splits: tuple[str, str]) -> str:
    """What the result's dataset.source says: the set, its version and the splits."""
    return f"tfds:{ref.name}:{builder.info.version} (splits {splits[0]}, {splits[1]}; data dir {ref.data_root()})"


def classification_features(builder, log: Log) -> tuple[str, str, tuple[str, ...]]:
    """(image feature, label feature, class names); says which were taken when a set has several."""
    import tensorflow_datasets as tfds

    features = builder.info.features
    images = [k for k, f in features.items() if isinstance(f, tfds.features.Image)]
    labels = [k for k, f in features.items() if isinstance(f, tfds.features.ClassLabel)]
    if not images or not labels:
        raise UserError(f"TFDS set {builder.info.name} has no image and class-label features to classify "
                        f"(features: {list(features.keys())})")
    supervised = builder.info.supervised_keys or ()
    image = supervised[0] if len(supervised) == 2 and supervised[0] in images else images[0]
    label = supervised[1] if len(supervised) == 2 and supervised[1] in labels else labels[0]
    if len(images) > 1 or len(labels) > 1:
        log(f"TFDS features: image {image!r} of {images}, label {label!r} of {labels}")
    return image, label, tuple(features[label].names)


def detection_features(builder) -> tuple[str, tuple[str, ...]]:
    """(image feature, class names of objects/label) of a set with objects/bbox and objects/label."""
    import tensorflow_datasets as tfds

    features = builder.info.features
    images = [k for k, f in features.items() if isinstance(f, tfds.features.Image)]
    objects = features["objects"] if "objects" in features.keys() else None
    inner = getattr(objects, "feature", None)
    if not images or inner is None or not {"bbox", "label"} <= set(inner.keys()) or \
            not isinstance(inner["label"], tfds.features.ClassLabel):
        raise UserError(f"TFDS set {builder.info.name} has no image with objects/bbox and objects/label to detect "
                        f"(features: {list(features.keys())})")
    return ("image" if "image" in images else images[0]), tuple(inner["label"].names)


def examples(builder, split: str, image_key: str) -> Iterator[dict]:
    """The split's examples as NumPy, in the set's order, with the image still encoded (bytes)."""
    import tensorflow_datasets as tfds

    dataset = builder.as_dataset(split=split, shuffle_files=False,
                                 decoders={image_key: tfds.decode.SkipDecoding()})
    return iter(tfds.as_numpy(dataset))


def content_key(*parts) -> str:
    import hashlib

    return hashlib.sha256(repr(parts).encode()).hexdigest()[:32]


def load_classification(ref: TfdsRef, image_size: int, *, limit: int | None, strict: bool, cache_dir: Path | None,
                        log: Log):
    """(ImageSet, source label) for classify: decoded, resized and cached like folder data.

    The cache key is the set's name, version and splits, the features taken, the size and the
    limit, so a second run reads neither TFDS nor a single image again.
    """
    from l40sbench.data import folders

    builder = open_builder(ref, log)
    splits = resolve_splits(builder, ref)
    image_key, label_key, classes = classification_features(builder, log)
    if limit is not None and limit // len(classes) < 1:
        raise UserError(f"--limit {limit} is smaller than the number of classes ({len(classes)})")
    per_class = None if limit is None else limit // len(classes)
    key = content_key(folders.DECODER_VERSION, ref.name, str(builder.info.version), splits, image_key, label_key,
                       image_size, per_class)
    cache_path = None if cache_dir is None else Path(cache_dir) / f"classify-tfds-{key}.npz"

    def items(split: str):
        taken = [0] * len(classes)
        for index, example in enumerate(examples(builder, split, image_key)):
            label = int(example[label_key])
            if per_class is not None:
                if taken[label] >= per_class:
                    if min(taken) >= per_class:
                        return  # every class full: the rest of the split is not read
                    continue
            taken[label] += 1
            yield label, f"tfds:{ref.name} {split} #{index}", (lambda data=example[image_key]: bytes(data))

    def make():
        log(f"decoding TFDS {ref.spec} splits {splits[0]}, {splits[1]} at {image_size}x{image_size} "
            f"(cached for later runs) ...")
        images = folders.decode_items(classes, {"train": items(splits[0]), "test": items(splits[1])}, image_size,
                                       strict=strict, log=log)
        for split in folders.SPLITS:
            if not images.y[split].size:
                raise UserError(f"TFDS set {ref.spec}: no readable images in split {splits[folders.SPLITS.index(split)]}")
        return images

    return folders.cached_images(cache_path, make, strict=strict, log=log), source_label(builder, ref, splits)


def split_counts(builder, splits: tuple[str, str], task: str):
    """(per split: count per class, per split: images), the stats table's figures; objects for detect."""
    if task == "detect":
        image_key, names = detection_features(builder)
    else:
        image_key, label_key, names = classification_features(builder, lambda _: None)
    counts: dict[str, dict[str, int]] = {}
    images: dict[str, int] = {}
    for split in splits:
        per_class = dict.fromkeys(names, 0)
        images[split] = 0
        for example in examples(builder, split, image_key):
            images[split] += 1
            labels = example["objects"]["label"] if task == "detect" else [example[label_key]]
            for label in labels:
                per_class[names[int(label)]] += 1
        counts[split] = per_class
    return counts, images
