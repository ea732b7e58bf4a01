"""How much of a measured number is the harness rather than the model?

Two ratios, each measured in one run with the two sides interleaved (this
machine is shared and noisy):

1. Input pipeline: an epoch fed from the decoded cache (the product's path:
   model.fit on the cached uint8 arrays, shuffled) versus an epoch fed from
   the same tensors already batched in memory (a cached tf.data pipeline).
2. Latency probe: the probe's mean per-image time versus a bare loop over the
   same compiled call, and versus model.predict per image.

Usage: .venv/bin/python benchmarks/classify_overheads.py [--base vgg19] [--image-size 96]
"""

from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402

from l40sbench import paths  # noqa: E402
from l40sbench.backends import facts  # noqa: E402
from l40sbench.classify.bases import BASES  # noqa: E402
from l40sbench.classify.model import build_base, build_classifier  # noqa: E402
from l40sbench.classify.standin import ensure_standin, standin_path  # noqa: E402
from l40sbench.classify.task import epoch_callback, make_forward  # noqa: E402
from l40sbench.core.env import fingerprint  # noqa: E402
from l40sbench.core.timing import EpochClock, probe_latency  # noqa: E402
from l40sbench.data import folders as data_mod  # noqa: E402
from l40sbench.peak.measure import measure as measure_peak  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="vgg19")
    parser.add_argument("--image-size", type=int, default=96)
    parser.add_argument("--limit", type=int, default=160)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(0)
    layout = data_mod.scan(ensure_standin(standin_path())).limited(args.limit)
    images = data_mod.load_images(layout, args.image_size, cache_dir=paths.cache_dir())
    x, y, x_test = images.x["train"], images.y["train"], images.x["test"]
    spec = BASES.get(args.base)
    base, _ = build_base(spec, args.image_size, "none", print)
    model = build_classifier(spec, base, args.image_size, 2, None)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", jit_compile=False)

    machine = measure_peak()  # the rates beside the times below (docs/PERFORMANCE.md, "How to read these figures")
    in_memory = tf.data.Dataset.from_tensor_slices((x, y)).batch(16).cache().prefetch(tf.data.AUTOTUNE)
    for _ in in_memory:  # fill the cache: later epochs read tensors already in memory
        pass

    def epoch(feed) -> float:
        clock = EpochClock()
        seconds = []
        callback = epoch_callback(clock.start, lambda _e, _l: seconds.append(clock.stop()))
        if feed == "cache":
            model.fit(x, y, batch_size=16, epochs=1, shuffle=True, verbose=0, callbacks=[callback])
        else:
            model.fit(in_memory, epochs=1, verbose=0, callbacks=[callback])
        return seconds[0]

    epoch("cache"), epoch("memory")  # warm-up: tracing and first allocations
    fed = {"cache": [], "memory": []}
    for _ in range(args.rounds):
        for feed in fed:
            fed[feed].append(epoch(feed))

    forward = make_forward(model, args.image_size, xla=False)
    probe_ms, bare_ms, predict_ms = [], [], []
    for _ in range(args.rounds):
        probe_ms.append(probe_latency(forward, x_test).mean_ms)
        start = time.perf_counter()
        for image in x_test[1:]:
            forward(image)
        bare_ms.append((time.perf_counter() - start) * 1000 / (len(x_test) - 1))
    model.predict(x_test[:1], verbose=0)  # its own warm-up
    for image in x_test[1:41]:
        start = time.perf_counter()
        model.predict(image[None], verbose=0)
        predict_ms.append((time.perf_counter() - start) * 1000)

    cache_s, memory_s = np.mean(fed["cache"]), np.mean(fed["memory"])
    probe, bare, predict = np.mean(probe_ms), np.mean(bare_ms), np.mean(predict_ms)
    env = fingerprint(facts())
    summary = {
        "base": args.base, "image_size": args.image_size, "train_images": len(x), "test_images": len(x_test),
        "rounds": args.rounds, "calibration": machine.to_dict(), "cpu": env["cpu"], "cpu_count": env["cpu_count"], "tensorflow": env["tensorflow"],
        "epoch_seconds_from_cache": fed["cache"], "epoch_seconds_from_memory": fed["memory"],
        "epoch_ratio_cache_over_memory": cache_s / memory_s,
        "probe_mean_ms": probe_ms, "bare_loop_mean_ms": bare_ms,
        "probe_ratio_over_bare_loop": probe / bare,
        "model_predict_mean_ms": predict,
        "predict_ratio_over_probe": predict / probe,
    }
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
