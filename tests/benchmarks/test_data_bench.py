"""The decoded-image cache against decoding the same files."""

from __future__ import annotations

from l40sbench.classify import data
from l40sbench.classify.run import standin_path
from l40sbench.classify.standin import ensure_standin
from tests.benchmarks.conftest import References, record_gate, run_pedantic

SIZE = 64


def test_cache_load_against_decoding(benchmark, tmp_path):
    layout = data.scan(ensure_standin(standin_path())).limited(40)  # 20 cats + 20 dogs per split
    cache = tmp_path / "cache"
    first = data.load_images(layout, SIZE, cache_dir=cache)
    assert not first.cache_hit

    def load():
        images = data.load_images(layout, SIZE, cache_dir=cache)
        assert images.cache_hit
        return images

    references = References(warmup_rounds=1, decode=lambda: data.decode_layout(layout, SIZE))
    seconds = run_pedantic(benchmark, load, references, rounds=25)  # a few ms each: many rounds for a steady median
    if seconds is not None:
        ratio = seconds / references.median("decode")
        record_gate(benchmark, "cache_load_over_decode", ratio, maximum=0.5, baseline=True,
                    what="loading 80 decoded 64 px images from the cache (content hash included) / decoding them")
