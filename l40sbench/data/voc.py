"""Pascal VOC annotations (one XML beside each image), as in Kaggle's fruit set.

Real files are messy; each case either works or fails with a message naming
the file. XML is parsed with defusedxml, so entity-expansion ("billion laughs")
and external-entity files are rejected instead of expanded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from xml.etree.ElementTree import ParseError

import defusedxml
import defusedxml.ElementTree as SafeET

from l40sbench.core.text import Log
from l40sbench.data.images import decode_rgb, is_image_name
from l40sbench.errors import UserError

# The Kaggle archive unpacks to train_zip/train and test_zip/test; plain train/test also work.
SPLIT_DIRS = {"train": ("train_zip/train", "train"), "test": ("test_zip/test", "test")}


class UnreadableImage(UserError):
    """An image file that does not decode (truncated, empty, not an image)."""


@dataclass(frozen=True)
class VocObject:
    name: str
    xmin: float
    ymin: float
    xmax: float
    ymax: float


@dataclass(frozen=True)
class VocImage:
    image_path: Path
    width: int
    height: int
    objects: tuple[VocObject, ...]


def split_dir(root: Path, split: str) -> Path:
    for candidate in SPLIT_DIRS[split]:
        if (root / candidate).is_dir():
            return root / candidate
    options = " or ".join(str(root / c) for c in SPLIT_DIRS[split])
    raise UserError(f"missing {split} folder: expected {options}")


def pair_files(folder: Path) -> list[tuple[Path, Path]]:
    """(image, xml) pairs by file stem; an unpaired file on either side is an error."""
    files = [p for p in sorted(folder.iterdir()) if p.is_file() and not p.name.startswith(".")]
    images = {p.stem: p for p in files if is_image_name(p)}
    xmls = {p.stem: p for p in files if p.suffix.lower() == ".xml"}
    no_xml = sorted(images[s].name for s in images.keys() - xmls.keys())
    no_image = sorted(xmls[s].name for s in xmls.keys() - images.keys())
    if no_xml or no_image:
        parts = []
        if no_xml:
            parts.append(f"images without XML: {', '.join(no_xml)}")
        if no_image:
            parts.append(f"XML without image: {', '.join(no_image)}")
        raise UserError(f"{folder}: " + "; ".join(parts))
    if not images:
        raise UserError(f"no annotated images in {folder}")
    return [(images[s], xmls[s]) for s in sorted(images)]


def _number(node, tag: str, xml_path: Path) -> float:
    text = node.findtext(tag)
    try:
        return float(text)
    except (TypeError, ValueError):
        raise UserError(f"{xml_path}: <{tag}> is {text!r}, not a number") from None


def _parse_xml(xml_path: Path):
    try:
        return SafeET.parse(xml_path).getroot()
    except (defusedxml.DTDForbidden, defusedxml.EntitiesForbidden, defusedxml.ExternalReferenceForbidden) as exc:
        raise UserError(f"{xml_path}: rejected unsafe XML ({type(exc).__name__})") from None
    except ParseError as exc:
        raise UserError(f"{xml_path}: not valid XML ({exc})") from None


def parse_annotation(
    image_path: Path, xml_path: Path, classes: Sequence[str] | None = None, log: Log = lambda _: None
) -> VocImage:
    """One image's objects, boxes clipped to the decoded image; degenerate boxes dropped.

    The image size always comes from the decoded image: `<size>` is often 0 or
    missing in real files, and a box outside the real image cannot be learned.
    """
    root = _parse_xml(xml_path)
    rgb = decode_rgb(image_path.read_bytes())
    if rgb is None:
        raise UnreadableImage(f"unreadable image: {image_path}")
    height, width = rgb.shape[:2]
    objects = []
    for index, node in enumerate(root.iter("object")):
        name = (node.findtext("name") or "").strip()
        if not name:
            raise UserError(f"{xml_path}: object {index + 1} has no <name>")
        if classes is not None and name not in classes:
            raise UserError(f"{xml_path}: class {name!r} is not one of --classes {list(classes)}")
        box = node.find("bndbox")
        if box is None:
            raise UserError(f"{xml_path}: object {index + 1} ({name}) has no <bndbox>")
        xmin, ymin, xmax, ymax = (_number(box, tag, xml_path) for tag in ("xmin", "ymin", "xmax", "ymax"))
        xmin, xmax = max(0.0, min(xmin, width)), max(0.0, min(xmax, width))
        ymin, ymax = max(0.0, min(ymin, height)), max(0.0, min(ymax, height))
        if xmax - xmin < 1 or ymax - ymin < 1:
            log(f"warning: {xml_path}: dropping degenerate {name} box after clipping to {width}x{height}")
            continue
        objects.append(VocObject(name, xmin, ymin, xmax, ymax))
    return VocImage(image_path, width, height, tuple(objects))


def class_names(annotations: Sequence[VocImage]) -> tuple[str, ...]:
    return tuple(sorted({o.name for a in annotations for o in a.objects}))


def load_split(
    root: Path, split: str, classes: Sequence[str] | None = None, log: Log = lambda _: None, strict: bool = False
) -> tuple[list[VocImage], list[str]]:
    """(annotations, skipped image paths): an unreadable image is skipped with a warning, or with
    `strict` is an error."""
    folder = split_dir(root, split)
    annotations, skipped = [], []
    for image, xml in pair_files(folder):
        try:
            annotations.append(parse_annotation(image, xml, classes, log))
        except UnreadableImage:
            if strict:
                raise UserError(f"unreadable image (--strict): {image}") from None
            log(f"warning: skipping unreadable image {image}")
            skipped.append(str(image))
    if not annotations:
        raise UserError(f"no readable images in {folder}")
    return annotations, skipped


def object_counts(annotations: Sequence[VocImage]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for annotation in annotations:
        for obj in annotation.objects:
            counts[obj.name] = counts.get(obj.name, 0) + 1
    return dict(sorted(counts.items()))
