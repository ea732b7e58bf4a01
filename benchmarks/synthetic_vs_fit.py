"""The sweep's images/s against a plain Keras `model.fit`, in alternating rounds; utilisation; 1 -> 2 devices.

Behind docs/performance-log.md, "Synthetic sweeps". For each model (default resnet50 and
vgg16) at batch 32, each round runs, one after another, each in a fresh
process as the sweep runs them:
  - the sweep's own configuration (l40sbench.synthetic.children.run_job: the
    child worker, MirroredStrategy over 1 device, per-step clock);
  - a plain `model.fit` of the same registry model on tensors already in memory
    (compile with SGD; one epoch of warm-up + timed steps, each step timed by
    a callback from on_train_batch_begin to on_train_batch_end, the warm-up
    steps dropped: the same per-step figure the sweep reports, without
    Keras' per-fit set-up, which took ~35 s for vgg16 on 96 images here);
  - the sweep at 2 logical CPU devices (with --scaling);
  - the sweep in inference mode (with --inference).
Taking the sides in turn lets a shared host's drift fall on both. It prints
per round and then the medians, their ratio, the utilisation of the matmul
peak measured at the start, and that peak. Run it with nothing else
on the machine.

Usage:
  .venv/bin/python benchmarks/synthetic_vs_fit.py --rounds 3 --scaling --inference
  .venv/bin/python benchmarks/synthetic_vs_fit.py --models resnet50 --warmup 2 --steps 6
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from l40sbench.core import child
from l40sbench.core.utilisation import summary as peak_summary
from l40sbench.synthetic.children import measure_peak, run_job
from l40sbench.synthetic.config import SweepConfig
from l40sbench.synthetic.job import StepSettings
from l40sbench.synthetic.sweep import with_utilisation
from l40sbench.synthetic.worker import ROW_MARKER

FIT_CHILD = """
import json, sys, time
import keras, tensorflow as tf
from l40sbench.synthetic.models import MODELS
name, batch, warmup, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
spec = MODELS.get(name)
model = spec.build()
model.compile(optimizer=keras.optimizers.SGD(0.005), loss="sparse_categorical_crossentropy")
x = tf.random.uniform([batch * (warmup + steps), spec.size, spec.size, 3])
y = tf.random.uniform([batch * (warmup + steps)], maxval=1000, dtype=tf.int32)
seconds = []
class StepClock(keras.callbacks.Callback):
    def on_train_batch_begin(self, batch, logs=None):
        self.started = time.perf_counter()
    def on_train_batch_end(self, batch, logs=None):
        seconds.append(time.perf_counter() - self.started)
model.fit(x, y, batch_size=batch, epochs=1, shuffle=False, verbose=0, callbacks=[StepClock()])
timed = seconds[warmup:]
print(MARKER + json.dumps({"images_per_second": batch * len(timed) / sum(timed)}))
""".replace("MARKER", repr(ROW_MARKER))


def fit_images_per_second(model: str, batch: int, warmup: int, steps: int) -> float:
    outcome = child.run([sys.executable, "-c", FIT_CHILD, model, str(batch), str(warmup), str(steps)],
                        timeout_s=3600, memory_limit_mb=None)
    lines = [line for line in outcome.stdout.splitlines() if line.startswith(ROW_MARKER)]
    if not lines:
        raise RuntimeError(outcome.stderr[-2000:])
    return json.loads(lines[-1][len(ROW_MARKER):])["images_per_second"]


def sweep_row(config: SweepConfig, model: str, batch: int, devices: int, state: dict, **overrides):
    row = with_utilisation(run_job(config.job(model, batch, devices, **overrides), config, gpu=False), state)
    if row.status != "ok":
        raise RuntimeError(f"{model}: {row.status} {row.error}")
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="resnet50,vgg16")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--scaling", action="store_true", help="also the sweep at 2 logical CPU devices")
    parser.add_argument("--inference", action="store_true", help="also the sweep in inference mode")
    args = parser.parse_args()
    models = args.models.split(",")
    settings = StepSettings(warmup_steps=args.warmup, steps=args.steps)
    config = SweepConfig(models=tuple(models), batch_sizes=(args.batch,), settings=settings, output_dir=Path("."))
    state = measure_peak(config, log=lambda m: print(m, file=sys.stderr, flush=True))
    print(f"peak at start: {peak_summary(state['peak'])}; CPU {state['env']['cpu']}", flush=True)
    figures: dict = {m: {"sweep": [], "fit": [], "util": [], "sweep2": [], "infer": [], "infer_util": []}
                     for m in models}
    for round_index in range(1, args.rounds + 1):
        for model in models:
            f = figures[model]
            row = sweep_row(config, model, args.batch, 1, state)
            f["sweep"].append(row.images_per_second)
            f["util"].append(row.utilisation)
            f["fit"].append(fit_images_per_second(model, args.batch, args.warmup, args.steps))
            line = (f"round {round_index} {model}: sweep {f['sweep'][-1]:.3f} images/s "
                    f"(util {100 * row.utilisation:.1f} %, jitter {row.step_jitter_percent:.1f} %), "
                    f"fit {f['fit'][-1]:.3f} images/s, ratio {f['sweep'][-1] / f['fit'][-1]:.3f}")
            if args.scaling:
                two = sweep_row(config, model, args.batch, 2, state)
                f["sweep2"].append(two.images_per_second)
                line += f"; 2 devices {two.images_per_second:.3f} images/s"
            if args.inference:
                inf = sweep_row(config, model, args.batch, 1, state, mode="inference",
                                warmup_steps=args.warmup, steps=2 * args.steps)
                f["infer"].append(inf.images_per_second)
                f["infer_util"].append(inf.utilisation)
                line += f"; inference {inf.images_per_second:.3f} images/s (util {100 * inf.utilisation:.1f} %)"
            print(line, flush=True)
    print()
    print("| model | batch | sweep images/s (median) | model.fit images/s (median) | sweep / fit | per-round ratios "
          "| training utilisation | 2-device efficiency | inference images/s | inference utilisation |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    med = statistics.median
    for model in models:
        f = figures[model]
        ratios = ", ".join(f"{s / t:.3f}" for s, t in zip(f["sweep"], f["fit"]))
        scaling = f"{med(f['sweep2']) / (2 * med(f['sweep'])):.3f}" if f["sweep2"] else "-"
        inference = f"{med(f['infer']):.3f}" if f["infer"] else "-"
        infer_util = f"{100 * med(f['infer_util']):.1f} %" if f["infer_util"] else "-"
        print(f"| {model} | {args.batch} | {med(f['sweep']):.3f} | {med(f['fit']):.3f} | "
              f"{med(f['sweep']) / med(f['fit']):.3f} | {ratios} | {100 * med(f['util']):.1f} % | {scaling} | "
              f"{inference} | {infer_util} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
