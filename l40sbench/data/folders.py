"""Folder-per-class image sets: DIR/train/<class>/* and DIR/test/<class>/*.

Images are decoded once, resized to the model input and kept as uint8 arrays:
in memory for the run and on disk keyed by a hash of the files' content, so
epoch time measures the model and a second run starts fast.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from l40sbench.core.text import Log
from l40sbench.data.images import decode_rgb, is_image_name, resize_square
from l40sbench.errors import UserError

SPLITS = ("train", "test")
# Bump when decoding or resizing changes, so old cache entries are not reused.
DECODER_VERSION = 1



@dataclass(frozen=True)
class Layout:
    """The image files found, per split and class (sorted, before decoding)."""

    root: Path
    classes: tuple[str, ...]
    files: dict[str, dict[str, tuple[Path, ...]]]

    def limited(self, limit: int | None) -> Layout:
        """At most `limit` images per split, the same number from each class."""
        if limit is None:
            return self
        per_class = limit // len(self.classes)
        if per_class < 1:
            raise UserError(
                f"--limit {limit} is smaller than the number of classes ({len(self.classes)})"
            )
        files = {
            split: {c: paths[:per_class] for c, paths in by_class.items()}
            for split, by_class in self.files.items()
        }
        return Layout(self.root, self.classes, files)


@dataclass(frozen=True, eq=False)
class ImageSet:
    """Decoded images (N x S x S x 3 uint8 RGB) and integer labels per split."""

    classes: tuple[str, ...]
    x: dict[str, np.ndarray]
    y: dict[str, np.ndarray]
    skipped_files: tuple[str, ...] = ()
    cache_hit: bool = False
    counts: dict[str, dict[str, int]] = field(default_factory=dict)


def _subdirs(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))


def scan(root: Path) -> Layout:
    """Finds the class folders and image files, or raises UserError saying what is wrong."""
    root = Path(root)
    if not root.exists():
        raise UserError(f"data directory not found: {root}")
    if not root.is_dir():
        raise UserError(f"data path is not a directory: {root}")
    if not any(root.iterdir()):
        raise UserError(f"data directory is empty: {root} (expected {root}/train/<class>/ and {root}/test/<class>/)")
    files: dict[str, dict[str, tuple[Path, ...]]] = {}
    classes: tuple[str, ...] = ()
    for split in SPLITS:
        split_dir = root / split
        if not split_dir.is_dir():
            raise UserError(f"missing split folder {split_dir} (expected {root}/{split}/<class>/<images>)")
        found = tuple(d.name for d in _subdirs(split_dir))
        if split == "train":
            classes = found
            if len(classes) < 2:
                raise UserError(
                    f"{split_dir} has {len(classes)} class folder(s) {list(classes)}; at least two are needed"
                )
        elif found != classes:
            missing = sorted(set(classes) - set(found))
            extra = sorted(set(found) - set(classes))
            raise UserError(
                f"class folders of {split_dir} differ from train: missing {missing}, extra {extra}"
            )
        files[split] = {}
        for name in classes:
            paths = tuple(sorted(p for p in (split_dir / name).iterdir() if p.is_file() and is_image_name(p)))
            if not paths:
                raise UserError(f"class folder has no images: {split_dir / name}")
            files[split][name] = paths
    return Layout(root, classes, files)


def _content_key(layout: Layout, image_size: int) -> str:
    digest = hashlib.sha256(f"v{DECODER_VERSION}:{image_size}:{layout.classes}".encode())
    for split in SPLITS:
        for name in layout.classes:
            for path in layout.files[split][name]:
                digest.update(f"{split}/{name}/{path.name}\0".encode())
                digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:32]


# One image to decode: (class index, where it comes from for messages, a function returning its bytes).
Item = tuple[int, str, Callable[[], bytes]]


def decode_items(
    classes: tuple[str, ...], items: dict[str, Iterable[Item]], image_size: int | None, *, total: int | None = None,
    strict: bool = False, log: Log = lambda _: None,
) -> ImageSet:
    """Decodes each split's items by content; unreadable ones are skipped (or, with strict, an error).

    With image_size None the images are only checked, not kept (for `datasets stats`).
    """
    x: dict[str, np.ndarray] = {}
    y: dict[str, np.ndarray] = {}
    skipped: list[str] = []
    counts: dict[str, dict[str, int]] = {}
    report_every = max((total or 0) // 10, 100)
    done = 0
    for split, split_items in items.items():
        images, labels = [], []
        counts[split] = {name: 0 for name in classes}
        for label, where, read in split_items:
            done += 1
            if done % report_every == 0:
                log(f"  decoded {done}/{total or '?'}")
            rgb = decode_rgb(read())
            if rgb is None:
                if strict:
                    raise UserError(f"unreadable image (--strict): {where}")
                log(f"warning: skipping unreadable image {where}")
                skipped.append(where)
                continue
            counts[split][classes[label]] += 1
            if image_size is not None:
                images.append(resize_square(rgb, image_size))
                labels.append(label)
        size = image_size or 0
        x[split] = np.stack(images) if images else np.zeros((0, size, size, 3), np.uint8)
        y[split] = np.asarray(labels, dtype=np.int32)
    return ImageSet(classes, x, y, tuple(skipped), False, counts)


def decode_layout(
    layout: Layout, image_size: int | None, *, strict: bool = False, log: Log = lambda _: None
) -> ImageSet:
    """Decodes every file of a folder layout; a class left with no readable image is an error."""
    items = {split: [(label, str(path), path.read_bytes)
                     for label, name in enumerate(layout.classes) for path in layout.files[split][name]]
             for split in SPLITS}
    total = sum(len(v) for v in items.values())
    images = decode_items(layout.classes, items, image_size, total=total, strict=strict, log=log)
    for split in SPLITS:
        for name in layout.classes:
            if images.counts[split][name] == 0:
                raise UserError(f"no readable images in {layout.root / split / name}")
    return images


def _save_cache(path: Path, images: ImageSet) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {"classes": images.classes, "skipped_files": images.skipped_files, "counts": images.counts}
    arrays = {f"{kind}_{split}": getattr(images, kind)[split] for kind in ("x", "y") for split in SPLITS}
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".npz")
    try:
        with os.fdopen(fd, "wb") as handle:
            np.savez(handle, meta=np.asarray(json.dumps(meta)), **arrays)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _load_cache(path: Path) -> ImageSet | None:
    try:
        with np.load(path) as data:
            meta = json.loads(str(data["meta"]))
            x = {s: data[f"x_{s}"] for s in SPLITS}
            y = {s: data[f"y_{s}"] for s in SPLITS}
    except (OSError, KeyError, ValueError):
        return None  # a damaged entry is decoded again and overwritten
    return ImageSet(tuple(meta["classes"]), x, y, tuple(meta["skipped_files"]), True, meta["counts"])


def cached_images(cache_path: Path | None, make: Callable[[], ImageSet], *, strict: bool = False,
                  log: Log = lambda _: None) -> ImageSet:
    """The decoded set from cache_path when it holds it, else make() (then saved there)."""
    if cache_path is not None:
        cached = _load_cache(cache_path) if cache_path.is_file() else None
        # A strict run must still fail on a set whose cached decode skipped files.
        if cached is not None and not (strict and cached.skipped_files):
            log(f"decoded images from cache {cache_path}")
            return cached
    images = make()
    if cache_path is not None:
        _save_cache(cache_path, images)
    return images


def load_images(
    layout: Layout,
    image_size: int,
    *,
    strict: bool = False,
    cache_dir: Path | None = None,
    log: Log = lambda _: None,
) -> ImageSet:
    """Decoded, resized images for the layout, from the disk cache when it has them."""
    cache_path = None if cache_dir is None else Path(cache_dir) / f"classify-{_content_key(layout, image_size)}.npz"

    def make() -> ImageSet:
        log(f"decoding images at {image_size}x{image_size} (cached for later runs) ...")
        return decode_layout(layout, image_size, strict=strict, log=log)

    return cached_images(cache_path, make, strict=strict, log=log)
