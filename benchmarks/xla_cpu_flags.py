"""docs/performance-log.md, "Keras backends side by side": classify's vgg19 on jax under XLA's CPU flags, the same work each time.

For each XLA_FLAGS setting, a fresh process (KERAS_BACKEND=jax) builds the model `classify` trains (random
weights, base frozen) and times, each call waited for:
- the latency probe's forward (backends.jax.forward: jax.jit over stateless_call, one uint8 image);
- a batch-16 forward through the same jitted call, the bulk of a frozen-base epoch;
and the peak's 2048 float32 matmul beside them, the calibration for the absolute times. Medians over --calls.

Usage: .venv/bin/python benchmarks/xla_cpu_flags.py [--size 96] [--calls 20]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

SETTINGS = {
    "default": "",
    "xnnpack": "--xla_cpu_use_xnnpack=true",
    "xnnpack + greedy fusion": "--xla_cpu_use_xnnpack=true "
                               "--xla_cpu_experimental_xnn_graph_fusion_mode=XNN_GRAPH_FUSION_MODE_GREEDY",
}

CHILD = """
import json, statistics, sys, time
import numpy as np
import jax.numpy as jnp
from l40sbench.backends import jax as ops
from l40sbench.classify.config import ClassifyConfig
from l40sbench.classify.task import compiled_model
size, calls = int(sys.argv[1]), int(sys.argv[2])
model, _ = compiled_model(ClassifyConfig(base="vgg19", image_size=size, weights="none", backend="jax"), size, 2,
                           lambda _: None)
wait = ops.sync()
def median_s(call):
    call(); wait()
    times = []
    for _ in range(calls):
        start = time.perf_counter(); call(); wait(); times.append(time.perf_counter() - start)
    return statistics.median(times)
image = np.random.default_rng(0).integers(0, 256, (size, size, 3), dtype=np.uint8)
forward = ops.forward(model, size, False)
batch = jnp.asarray(np.random.default_rng(1).random((16, size, size, 3), dtype=np.float32) * 255)
trainable, non_trainable = ops._values(model)  # the probe's own jitted stateless call, at batch 16
bulk = ops._stateless_forward(model)
kept = {}
def bulk_call():
    kept["out"] = bulk(trainable, non_trainable, batch)
mm_call = ops.matmul("float32")(2048)  # the peak's kernel
print(json.dumps({"probe_ms": 1e3 * median_s(lambda: forward(image)), "batch16_ms": 1e3 * median_s(bulk_call),
                  "matmul_gflops": 2 * 2048 ** 3 / median_s(mm_call) / 1e9}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=96)
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()
    print(f"vgg19 at {args.size} px on jax, median of {args.calls} calls each\n")
    print("| XLA_FLAGS | probe ms/image | batch-16 forward ms | 2048 matmul GFLOP/s |\n|---|---|---|---|")
    for name, flags in SETTINGS.items():
        env = {**os.environ, "KERAS_BACKEND": "jax", "XLA_FLAGS": flags, "TF_CPP_MIN_LOG_LEVEL": "2"}
        done = subprocess.run([sys.executable, "-c", CHILD, str(args.size), str(args.calls)], env=env,
                              capture_output=True, text=True)
        if done.returncode:
            print(f"| {name} (`{flags}`) | failed: {done.stderr.strip().splitlines()[-1][:200]} | | |")
            continue
        got = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"| {name} (`{flags or '-'}`) | {got['probe_ms']:.1f} | {got['batch16_ms']:.1f} | "
              f"{got['matmul_gflops']:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
