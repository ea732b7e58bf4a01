"""Pascal VOC parsing: every messy case from the detection issue, from files written here."""

import io

import cv2
import numpy as np
import pytest
from PIL import Image

from l40sbench.data import voc
from l40sbench.detect.standin import COUNTS, ensure_standin
from l40sbench.errors import UserError


def _xml(objects, size=(100, 80)):
    size_xml = "" if size is None else f"<size><width>{size[0]}</width><height>{size[1]}</height><depth>3</depth></size>"
    body = "".join(
        f"<object><name>{n}</name><bndbox><xmin>{a}</xmin><ymin>{b}</ymin><xmax>{c}</xmax><ymax>{d}</ymax></bndbox></object>"
        for n, (a, b, c, d) in objects
    )
    return f"<annotation><filename>x.jpg</filename>{size_xml}{body}</annotation>"


def _png(width=100, height=80, mode="RGB"):
    buffer = io.BytesIO()
    Image.new(mode, (width, height), 120 if mode in ("L", "P") else (120, 60, 30, 255)[: len(mode)]).save(buffer, "PNG")
    return buffer.getvalue()


def _write(folder, stem, xml, image=None, suffix=".jpg"):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{stem}{suffix}").write_bytes(image if image is not None else _png())
    (folder / f"{stem}.xml").write_text(xml)
    return folder / f"{stem}{suffix}", folder / f"{stem}.xml"


def test_size_zero_or_missing_comes_from_the_image(tmp_path):
    for stem, size in (("zero", (0, 0)), ("missing", None)):
        image, xml = _write(tmp_path, stem, _xml([("apple", (10, 10, 50, 40))], size=size), _png(120, 90))
        parsed = voc.parse_annotation(image, xml)
        assert (parsed.width, parsed.height) == (120, 90)


@pytest.mark.parametrize("mode", ["RGB", "RGBA", "P", "L"])
def test_png_data_in_jpg_and_odd_modes_decode(tmp_path, mode):
    image, xml = _write(tmp_path, f"m{mode}", _xml([("apple", (1, 1, 20, 20))]), _png(mode=mode), ".jpg")
    assert voc.parse_annotation(image, xml).objects[0].name == "apple"


def test_boxes_are_clipped_floats_kept_and_degenerate_dropped(tmp_path):
    objects = [("apple", (-5, -3.5, 130, 95)), ("banana", (10.25, 20.5, 30.75, 40.5)),
               ("orange", (60, 60, 60, 70)), ("orange", (150, 10, 170, 30))]
    image, xml = _write(tmp_path, "boxes", _xml(objects))
    warnings = []
    parsed = voc.parse_annotation(image, xml, log=warnings.append)
    assert [(o.name, o.xmin, o.ymin, o.xmax, o.ymax) for o in parsed.objects] == [
        ("apple", 0.0, 0.0, 100.0, 80.0), ("banana", 10.25, 20.5, 30.75, 40.5)]
    assert len(warnings) == 2 and all("degenerate orange" in w for w in warnings)


def test_class_outside_the_given_classes_names_file_and_class(tmp_path):
    image, xml = _write(tmp_path, "kiwi", _xml([("kiwi", (1, 1, 20, 20))]))
    with pytest.raises(UserError, match=r"kiwi\.xml: class 'kiwi' is not one of --classes"):
        voc.parse_annotation(image, xml, classes=("apple", "banana"))


def test_unpaired_files_are_listed(tmp_path):
    _write(tmp_path, "ok", _xml([("apple", (1, 1, 20, 20))]))
    (tmp_path / "lonely.jpg").write_bytes(_png())
    (tmp_path / "orphan.xml").write_text(_xml([]))
    (tmp_path / "notes.txt").write_text("ignored")
    with pytest.raises(UserError, match=r"images without XML: lonely\.jpg; XML without image: orphan\.xml"):
        voc.pair_files(tmp_path)


def test_empty_annotation_is_a_background_image(tmp_path):
    image, xml = _write(tmp_path, "empty", _xml([]))
    parsed = voc.parse_annotation(image, xml)
    assert parsed.objects == () and parsed.width == 100


BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
<!ENTITY lol9 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">]>
<annotation><object><name>&lol9;</name></object></annotation>"""
EXTERNAL = """<?xml version="1.0"?>
<!DOCTYPE a [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><annotation><filename>&xxe;</filename></annotation>"""


@pytest.mark.parametrize("text", [BILLION_LAUGHS, EXTERNAL])
def test_entity_expansion_and_external_entities_are_rejected(tmp_path, text):
    image, xml = _write(tmp_path, "evil", text)
    with pytest.raises(UserError, match="rejected unsafe XML"):
        voc.parse_annotation(image, xml)


def test_broken_xml_and_bad_numbers_name_the_file(tmp_path):
    image, xml = _write(tmp_path, "broken", "<annotation><object>")
    with pytest.raises(UserError, match=r"broken\.xml: not valid XML"):
        voc.parse_annotation(image, xml)
    image, xml = _write(tmp_path, "nan", _xml([("apple", ("a", 1, 2, 3))]))
    with pytest.raises(UserError, match=r"<xmin> is 'a'"):
        voc.parse_annotation(image, xml)


def test_unreadable_images_are_skipped_and_listed_or_fail_with_strict(tmp_path):
    folder = tmp_path / "train"
    _write(folder, "good", _xml([("apple", (1, 1, 20, 20))]))
    truncated, _ = _write(folder, "cut", _xml([("apple", (1, 1, 20, 20))]), b"\xff\xd8\xff\xe0 truncated")
    empty, _ = _write(folder, "empty", _xml([]), b"")
    warnings = []
    annotations, skipped = voc.load_split(tmp_path, "train", log=warnings.append)
    assert [a.image_path.name for a in annotations] == ["good.jpg"]
    assert skipped == [str(truncated), str(empty)]
    assert sum("skipping unreadable image" in w for w in warnings) == 2
    with pytest.raises(UserError, match=r"unreadable image \(--strict\): .*cut\.jpg"):
        voc.load_split(tmp_path, "train", strict=True)
    (folder / "good.jpg").write_bytes(b"")
    with pytest.raises(UserError, match="no readable images in"):
        voc.load_split(tmp_path, "train")


def test_both_kaggle_and_plain_split_folders_are_found(tmp_path):
    (tmp_path / "train_zip" / "train").mkdir(parents=True)
    (tmp_path / "test").mkdir()
    assert voc.split_dir(tmp_path, "train") == tmp_path / "train_zip" / "train"
    assert voc.split_dir(tmp_path, "test") == tmp_path / "test"
    with pytest.raises(UserError, match="missing train folder"):
        voc.split_dir(tmp_path / "test", "train")


def test_fruit_standin_has_the_kaggle_counts(tmp_path):
    root = ensure_standin(tmp_path / "fruit")
    for split, counts in COUNTS.items():
        annotations, skipped = voc.load_split(root, split)
        assert skipped == []
        assert len(annotations) == counts["images"]
        assert voc.object_counts(annotations) == {c: counts[c] for c in ("apple", "banana", "orange")}
        assert all(a.objects for a in annotations)
        assert any(len({o.name for o in a.objects}) > 1 for a in annotations)
    assert voc.class_names(voc.load_split(root, "test")[0]) == ("apple", "banana", "orange")
    sizes = {cv2.imread(str(p)).shape[:2] for p in list((root / "test_zip" / "test").glob("*.jpg"))[:10]}
    assert len(sizes) > 1 and np.all([min(s) > 0 for s in sizes])
