"""What scoring the test split between fit epochs costs under MirroredStrategy (docs/performance-log.md, "Fine-tuning on 1 and 2 devices").

One process per mode, nothing else running: vgg19 at 96 px built and compiled as classify builds it,
under MirroredStrategy over 2 logical CPU devices, `fit` for 5 epochs of 64 random images at a global
batch of 32, each epoch timed by a callback; between epochs nothing (none), Keras' evaluate (evaluate),
or a plain compiled forward on the primary device (plain). It is why classify skips per-epoch scoring
under a strategy.

Usage:
  .venv/bin/python benchmarks/scoring_under_strategy.py            # all three modes, each in its own process
  .venv/bin/python benchmarks/scoring_under_strategy.py --mode evaluate
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

import numpy as np

MODES = ("none", "evaluate", "plain")


def one(mode: str) -> None:
    import keras
    import tensorflow as tf

    from l40sbench.backends.tf_device import place
    from l40sbench.classify.config import ClassifyConfig
    from l40sbench.classify.task import compiled_model

    placement = place(2, 2)
    config = ClassifyConfig(base="vgg19", image_size=96, weights="none", seed=0)
    rng = np.random.default_rng(0)
    x = rng.integers(0, 255, (64, 96, 96, 3), dtype=np.uint8)
    y = rng.integers(0, 2, 64)
    model, _ = compiled_model(config, 96, 2, lambda message: None, placement)
    forward = tf.function(lambda images: model(images, training=False))
    epochs: list[float] = []

    class Timer(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.started = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            epochs.append(time.perf_counter() - self.started)
            if mode == "evaluate":
                model.evaluate(x[:32], y[:32], batch_size=16, verbose=0)
            elif mode == "plain":
                for i in range(0, 32, 16):
                    forward(tf.convert_to_tensor(x[i:i + 16])).numpy()

    model.fit(x, y, batch_size=32, epochs=5, verbose=0, shuffle=True, callbacks=[Timer()])
    print(f"{mode}: epochs {', '.join(f'{s:.2f}' for s in epochs)} s", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=MODES)
    args = parser.parse_args()
    if args.mode:
        one(args.mode)
        return 0
    for mode in MODES:  # a process each: logical devices are set before TensorFlow starts
        subprocess.run([sys.executable, __file__, "--mode", mode], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
