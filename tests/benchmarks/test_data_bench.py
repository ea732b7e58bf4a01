"""The product's image decode and its decoded-image cache, each against OpenCV's own decode.

The reference is OpenCV's `imdecode` + `resize` over the same file bytes
(read before the rounds, so disk is on neither side), not the product's
decode_rgb: a slower product decode must read as a slower product.
"""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from l40sbench.classify.standin import ensure_standin, standin_path
from l40sbench.data import folders as data
from tests.benchmarks.conftest import References, record_gate, run_pedantic

SIZE = 64


@pytest.fixture(scope="module")
def layout():
    return data.scan(ensure_standin(standin_path())).limited(40)  # 20 cats + 20 dogs per split


def opencv_decode(blobs: list[bytes]) -> list[np.ndarray]:
    """OpenCV alone: decode to BGR, resize to SIZE x SIZE."""
    return [cv2.resize(cv2.imdecode(np.frombuffer(blob, np.uint8), cv2.IMREAD_COLOR), (SIZE, SIZE),
                       interpolation=cv2.INTER_AREA) for blob in blobs]


def _blobs(layout) -> list[bytes]:
    return [path.read_bytes() for split in data.SPLITS for name in layout.classes for path in layout.files[split][name]]


def test_decode_against_opencv(benchmark, layout):
    blobs = _blobs(layout)
    references = References(warmup_rounds=1, opencv=lambda: opencv_decode(blobs))
    run_pedantic(benchmark, lambda: data.decode_layout(layout, SIZE), references, rounds=15)
    if not benchmark.disabled:
        record_gate(benchmark, "decode_over_opencv", references.ratio(benchmark, "opencv"), baseline=True,
                    what="the product's decode of 80 files at 64 px (reading, decode, RGB, resize) / "
                         "OpenCV's imdecode + resize of the same bytes")


def test_cache_load_against_decoding(benchmark, layout, tmp_path):
    cache = tmp_path / "cache"
    first = data.load_images(layout, SIZE, cache_dir=cache)
    assert not first.cache_hit
    blobs = _blobs(layout)

    def load():
        images = data.load_images(layout, SIZE, cache_dir=cache)
        assert images.cache_hit
        return images

    references = References(warmup_rounds=1, opencv=lambda: opencv_decode(blobs))
    run_pedantic(benchmark, load, references, rounds=25)  # a few ms each: many rounds for a steady median
    if not benchmark.disabled:
        ratio = references.ratio(benchmark, "opencv")
        record_gate(benchmark, "cache_load_over_decode", ratio, maximum=0.5, baseline=True,
                    what="loading 80 decoded 64 px images from the cache (content hash included) / "
                         "OpenCV's imdecode + resize of the same bytes")
