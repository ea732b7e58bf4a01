"""Folder-per-class loader: messy files, exact counts, layout errors, cache."""

import io

import cv2
import numpy as np
import pytest
from PIL import Image

from l40sbench.classify.standin import COUNTS, _write_split
from l40sbench.data import folders as data
from l40sbench.errors import UserError


def _array(seed, height=40, width=56):
    rng = np.random.default_rng(seed)
    return cv2.resize((rng.random((4, 4, 3)) * 255).astype(np.uint8), (width, height))


def _encode(image: Image.Image, fmt: str) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, fmt)
    return buffer.getvalue()


def _messy_class(folder, seed):
    """Returns (readable file names, unreadable file names) written into folder."""
    folder.mkdir(parents=True)
    rgb = Image.fromarray(_array(seed))
    good = {
        "plain.jpg": _encode(rgb, "JPEG"),
        "png_inside.jpg": _encode(rgb, "PNG"),
        "gray.png": _encode(rgb.convert("L"), "PNG"),
        "rgba.png": _encode(rgb.convert("RGBA"), "PNG"),
        "palette.png": _encode(rgb.convert("P"), "PNG"),
        "cmyk.jpg": _encode(rgb.convert("CMYK"), "JPEG"),
        "UPPER.JPEG": _encode(rgb, "JPEG"),
    }
    jpeg = _encode(rgb, "JPEG")
    bad = {"truncated.jpg": jpeg[: len(jpeg) // 2], "empty.jpg": b"", "text_inside.png": b"not an image"}
    ignored = {"notes.txt": b"hello", ".DS_Store": b"\0\1", ".hidden.jpg": jpeg, "labels.csv": b"a,b"}
    for name, payload in {**good, **bad, **ignored}.items():
        (folder / name).write_bytes(payload)
    return sorted(good), sorted(bad)


@pytest.fixture
def messy_set(tmp_path):
    root = tmp_path / "set"
    unreadable = []
    for split in data.SPLITS:
        for index, name in enumerate(("cats", "dogs")):
            _, bad = _messy_class(root / split / name, index)
            unreadable += [str(root / split / name / b) for b in bad]
    (root / "train" / ".cache").mkdir()  # hidden folders are not classes
    return root, sorted(unreadable)


def test_messy_files_give_exact_counts_and_skipped_list(messy_set, tmp_path):
    root, unreadable = messy_set
    warnings = []
    images = data.load_images(data.scan(root), 32, cache_dir=tmp_path / "cache", log=warnings.append)
    assert images.classes == ("cats", "dogs")
    assert images.counts == {"train": {"cats": 7, "dogs": 7}, "test": {"cats": 7, "dogs": 7}}
    assert sorted(images.skipped_files) == unreadable
    assert sum("skipping unreadable image" in w for w in warnings) == len(unreadable)
    assert images.x["train"].shape == (14, 32, 32, 3) and images.x["train"].dtype == np.uint8
    assert images.y["test"].tolist() == [0] * 7 + [1] * 7


def test_every_readable_variant_decodes_to_the_same_rgb(tmp_path):
    folder = tmp_path / "c"
    names, _ = _messy_class(folder, 3)
    reference = data.decode_rgb((folder / "plain.jpg").read_bytes()).astype(int)
    for name in ("png_inside.jpg", "rgba.png", "cmyk.jpg"):
        decoded = data.decode_rgb((folder / name).read_bytes())
        assert decoded.shape == (40, 56, 3)
        assert np.abs(decoded.astype(int) - reference).mean() < 12, name
    # A palette quantises colours; it must decode to exactly what its palette says.
    palette = data.decode_rgb((folder / "palette.png").read_bytes())
    assert np.array_equal(palette, np.asarray(Image.open(folder / "palette.png").convert("RGB")))
    gray = data.decode_rgb((folder / "gray.png").read_bytes())
    assert gray.shape == (40, 56, 3) and np.array_equal(gray[..., 0], gray[..., 2])


def test_strict_turns_a_skip_into_an_error(messy_set):
    root, _ = messy_set
    with pytest.raises(UserError, match="unreadable image"):
        data.load_images(data.scan(root), 32, strict=True)


def test_second_load_comes_from_the_content_keyed_cache(messy_set, tmp_path):
    root, _ = messy_set
    layout = data.scan(root)
    first = data.load_images(layout, 32, cache_dir=tmp_path / "cache")
    second = data.load_images(layout, 32, cache_dir=tmp_path / "cache")
    assert not first.cache_hit and second.cache_hit
    assert np.array_equal(first.x["test"], second.x["test"])
    assert second.skipped_files == first.skipped_files and second.counts == first.counts
    # A changed file changes the key: no stale pixels.
    (root / "test" / "cats" / "plain.jpg").write_bytes(_encode(Image.fromarray(_array(99)), "JPEG"))
    assert not data.load_images(data.scan(root), 32, cache_dir=tmp_path / "cache").cache_hit
    # So does another image size.
    assert not data.load_images(layout, 40, cache_dir=tmp_path / "cache").cache_hit


def test_limit_keeps_classes_balanced(messy_set):
    root, _ = messy_set
    limited = data.scan(root).limited(4)
    assert {c: len(p) for c, p in limited.files["train"].items()} == {"cats": 2, "dogs": 2}
    with pytest.raises(UserError, match="smaller than the number of classes"):
        data.scan(root).limited(1)


def _folders(root, layout):
    for path in layout:
        (root / path).mkdir(parents=True)
        (root / path / "a.png").write_bytes(_encode(Image.fromarray(_array(0)), "PNG"))


@pytest.mark.parametrize(
    "layout, message",
    [
        ([], "data directory is empty"),
        (["train/cats", "train/dogs"], "missing split folder"),
        (["train/cats", "test/cats"], "at least two are needed"),
        (["train/cats", "train/dogs", "test/cats"], r"missing \['dogs'\]"),
        (["train/cats", "train/dogs", "test/cats", "test/dogs", "test/birds"], r"extra \['birds'\]"),
    ],
)
def test_layout_errors_name_the_problem(tmp_path, layout, message):
    root = tmp_path / "d"
    root.mkdir()
    _folders(root, layout)
    with pytest.raises(UserError, match=message):
        data.scan(root)


def test_missing_path_and_class_without_images(tmp_path):
    with pytest.raises(UserError, match="not found"):
        data.scan(tmp_path / "nope")
    _folders(tmp_path, ["train/cats", "train/dogs", "test/cats"])
    (tmp_path / "test" / "dogs").mkdir()
    (tmp_path / "test" / "dogs" / "readme.txt").write_text("x")
    with pytest.raises(UserError, match="class folder has no images"):
        data.scan(tmp_path)


def test_standin_generation_is_deterministic_and_learnable_shape(tmp_path):
    counts = {"cats": 3, "dogs": 3}
    _write_split(tmp_path / "a", counts, seed=5)
    _write_split(tmp_path / "b", counts, seed=5)
    files_a = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*.jpg"))
    assert len(files_a) == 6
    for rel in files_a:
        assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes()
    shapes = {data.decode_rgb((tmp_path / "a" / rel).read_bytes()).shape[:2] for rel in files_a}
    assert len(shapes) > 1  # varied sizes and aspect ratios
    assert COUNTS == {"train": {"cats": 279, "dogs": 278}, "test": {"cats": 70, "dogs": 70}}


def test_runs_that_ask_for_a_stand_in_at_once_generate_it_once_and_each_finds_it_whole(tmp_path):
    """Runs started together on a fresh checkout: one generates, the others wait and read the same set."""
    import threading
    import time

    from l40sbench.data.generated import generate_once

    made = []

    def write(folder):
        made.append(folder)
        time.sleep(0.3)  # long enough for every other caller to arrive meanwhile
        (folder / "a.txt").write_text("a")

    found = []
    callers = [threading.Thread(target=lambda: found.append(
        (generate_once(tmp_path / "set", {"seed": 1}, write) / "a.txt").read_text())) for _ in range(4)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join()
    assert len(made) == 1 and found == ["a"] * 4
