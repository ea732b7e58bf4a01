"""docs/performance-log.md, "How far the learning tests are from their bounds": how far the two learning tests are from their bounds.

classify: for each seed and TensorFlow thread count, in a fresh process,
builds the model of tests/test_classify_e2e.py::test_training_learns_the_standin
the way the product does, scores the test split before training (what a loop
that does not update the weights would score) and after --epochs (12, as the test) of model.fit.
With --backend jax, the same for tests/test_backends.py::test_training_learns_the_standin_on_jax
(KERAS_BACKEND=jax; the thread variables are TensorFlow's, so jax runs once per seed).

detect: runs the command of tests/test_detect_e2e.py::test_training_lowers_the_loss
(the CLI) for each seed and thread count and prints the ratio it asserts on:
the model loss of the last three epochs over that of the first three.

Usage: .venv/bin/python .ci/learning_margin.py {classify,detect} [--seeds 0,1,2] [--threads 1,2]
       .venv/bin/python .ci/learning_margin.py classify --backend jax [--epochs 12] [--seeds 0,1,2,3,4]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ONE_RUN = """
import json, os, sys
import numpy as np
from l40sbench import paths
from l40sbench.data import folders as data_mod
from l40sbench.classify.config import ClassifyConfig
from l40sbench.classify.task import compiled_model, resolve_data
config = ClassifyConfig(**json.loads(sys.argv[1]))
layout, _ = resolve_data(config, lambda _: None)
images = data_mod.load_images(layout.limited(config.limit), config.image_size, cache_dir=paths.cache_dir())
model, _ = compiled_model(config, config.image_size, 2, lambda _: None)
def accuracy():
    predicted = np.argmax(model.predict(images.x["test"], verbose=0, batch_size=64), axis=1)
    return float(np.mean(predicted == images.y["test"]))
before = accuracy()
model.fit(images.x["train"], images.y["train"], batch_size=config.batch_size, epochs=config.epochs, shuffle=True,
          verbose=0)
print(json.dumps({"untrained": before, "trained": accuracy()}))
"""


DETECT = ["--base", "ssd_resnet50_fpn", "--image-size", "128", "--limit", "8", "--epochs", "20", "--batch-size", "4"]


def classify(seed: str, env: dict, epochs: int = 12, backend: str = "tensorflow") -> str:
    config = {"base": "resnet50", "image_size": 32, "limit": 200, "epochs": epochs, "weights": "none",
              "seed": int(seed), "backend": backend}
    out = subprocess.run([sys.executable, "-c", ONE_RUN, json.dumps(config)], env=env, capture_output=True,
                         text=True, check=True).stdout
    scores = json.loads(out.strip().splitlines()[-1])
    return f"{scores['untrained']:.3f} | {scores['trained']:.3f}"


def detect(seed: str, env: dict) -> str:
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([sys.executable, "-m", "l40sbench", "detect", *DETECT, "--seed", seed, "--output-dir", out],
                       env=env, capture_output=True, check=True)
        losses = json.loads((Path(out) / "result.json").read_text())["notes"]["loss_components_per_epoch"]
    model_loss = losses["model_loss"]
    return f"{sum(model_loss[-3:]) / sum(model_loss[:3]):.3f} | {' '.join(f'{v:.2f}' for v in model_loss)}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", choices=("classify", "detect"))
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--epochs", type=int, default=12, help="classify: epochs of model.fit (default 12)")
    parser.add_argument("--backend", default="tensorflow", choices=("tensorflow", "jax"), help="classify only")
    args = parser.parse_args()
    if args.backend != "tensorflow":
        args.threads = "-"
    columns = ("untrained accuracy | trained accuracy" if args.task == "classify"
               else "last 3 / first 3 epochs' model loss | model loss per epoch")
    print(f"| threads | seed | {columns} |\n|---|---|---|---|")
    for threads in args.threads.split(","):
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", KERAS_BACKEND=args.backend)
        if threads != "-":
            env.update(TF_NUM_INTRAOP_THREADS=threads, TF_NUM_INTEROP_THREADS=threads)
        for seed in args.seeds.split(","):
            cells = (classify(seed, env, args.epochs, args.backend) if args.task == "classify"
                     else detect(seed, env))
            print(f"| {threads} | {seed} | {cells} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
