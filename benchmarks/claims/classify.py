"""Claims on classification: the input pipeline, the latency probe, listing the bases, the protocol's epochs and images."""

from __future__ import annotations

import statistics
import time

from benchmarks.claims.figures import figure


def _classifier(sizes: dict):
    """(compiled classifier with random weights, train images, labels, test images) on the stand-in."""
    import keras

    from l40sbench import paths
    from l40sbench.classify.bases import BASES
    from l40sbench.classify.model import build_base, build_classifier
    from l40sbench.classify.standin import ensure_standin, standin_path
    from l40sbench.data import folders

    keras.utils.set_random_seed(0)
    layout = folders.scan(ensure_standin(standin_path())).limited(sizes["limit"])
    images = folders.load_images(layout, sizes["image_size"], cache_dir=paths.cache_dir())
    spec = BASES.get(sizes["base"])
    model = build_classifier(spec, build_base(spec, sizes["image_size"], "none", print)[0], sizes["image_size"], 2,
                             None)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", jit_compile=False)
    return model, images.x["train"], images.y["train"], images.x["test"]


def input_pipeline(sizes: dict) -> dict:
    """The product's path (model.fit on the cached uint8 arrays, shuffled) against the same tensors batched in a
    cached tf.data pipeline, an epoch of each in turns."""
    import tensorflow as tf

    from l40sbench.classify.task import epoch_callback
    from l40sbench.core.timing import EpochClock

    model, x, y, _ = _classifier(sizes)
    in_memory = tf.data.Dataset.from_tensor_slices((x, y)).batch(16).cache().prefetch(tf.data.AUTOTUNE)
    for _ in in_memory:  # fill the cache: later epochs read tensors already in memory
        pass

    def epoch(feed: str) -> float:
        clock, seconds = EpochClock(), []
        callback = epoch_callback(clock.start, lambda _e, _l: seconds.append(clock.stop()))
        if feed == "cache":
            model.fit(x, y, batch_size=16, epochs=1, shuffle=True, verbose=0, callbacks=[callback])
        else:
            model.fit(in_memory, epochs=1, verbose=0, callbacks=[callback])
        return seconds[0]

    epoch("cache"), epoch("memory")  # warm-up: tracing and first allocations
    cache, memory = [], []
    for _ in range(sizes["rounds"]):
        cache.append(epoch("cache"))
        memory.append(epoch("memory"))
    return {"ratio": figure([c / m for c, m in zip(cache, memory, strict=True)], "x"),
            "cache": figure(cache, "s"), "memory": figure(memory, "s")}


def probe_overhead(sizes: dict) -> dict:
    """The probe's mean per image against a bare loop over the same compiled call, in turns; and model.predict
    of one image at a time against the probe."""
    from l40sbench.classify.probe import make_forward
    from l40sbench.core.timing import probe_latency

    model, _, _, x_test = _classifier(sizes)
    forward = make_forward(model, sizes["image_size"], xla=False)
    probe_ms, ratios = [], []
    for _ in range(sizes["rounds"]):
        probe_ms.append(probe_latency(forward, x_test).mean_ms)
        started = time.perf_counter()
        for image in x_test[1:]:
            forward(image)
        ratios.append(probe_ms[-1] / ((time.perf_counter() - started) * 1000 / (len(x_test) - 1)))
    model.predict(x_test[:1], verbose=0)  # its own warm-up
    probe = statistics.fmean(probe_ms)
    predict = []
    for image in x_test[1:41]:
        started = time.perf_counter()
        model.predict(image[None], verbose=0)
        predict.append((time.perf_counter() - started) * 1000 / probe)
    return {"ratio": figure(ratios, "x"), "predict": figure(predict, "x"), "probe_ms": figure(probe_ms, "ms")}


LISTINGS = {"classify": ["classify", "--list-bases"], "detect": ["detect", "--list-bases"], "version": ["--version"]}


def list_bases(sizes: dict) -> dict:
    """`classify --list-bases` and `detect --list-bases` in fresh interpreters as a user runs them, beside the
    CLI's own start."""
    from benchmarks.claims.figures import timed_rounds

    return {name: figure(timed_rounds(argv, sizes["rounds"], timeout=120, check=True)[0], "s")
            for name, argv in LISTINGS.items()}


def protocol(sizes: dict) -> dict:
    """Each base as a user runs it (`classify --base B`, the protocol's batch and native size; random weights:
    speed does not depend on them; fewer than the protocol's 10 epochs, the steady ones kept): the steady epochs
    and the probe's per-image times."""
    import tempfile
    from pathlib import Path

    from benchmarks.claims.figures import records, suite

    out: dict = {}
    with tempfile.TemporaryDirectory() as work:
        for base in sizes["bases"]:
            folder = Path(work) / base
            suite(["classify", "--base", base, *sizes["flags"], "--output-dir", str(folder)])
            (record,) = records(folder)
            out[f"epoch_{base}"] = figure(record["train"]["epoch_seconds"][1:], "s")
            out[f"image_{base}"] = figure(record["inference"]["times_ms"], "ms")
            out["epochs"] = figure([record["train"]["epochs"]], "epochs")
    return out
