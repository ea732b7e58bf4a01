"""Inference runtimes side by side for one classifier at batch 1 (docs/performance-log.md, "Inference runtimes").

One process, one model (random weights: speed does not depend on them), every runtime exported by the
product (l40sbench.runtimes.export) and loaded by the product (l40sbench.runtimes.forward), then:
- per-image latency, each runtime alone in turn, in rounds (drift falls on all alike),
  with fp32 asked everywhere, plus OpenVINO at bf16 (its silent default on a CPU with AVX512-BF16);
- utilisation: forward GFLOP x images/s over the float32 matmul peak measured in the same run;
- the probe over each runtime's bare loop of the same call (what the probe adds);
- the suite's latency against the runtime's own benchmark tool where one ships in the wheel
  (OpenVINO's benchmark_app -hint latency, LiteRT's litert-benchmark), run right after the probe.

Usage: .venv/bin/python benchmarks/runtimes.py --out results/runtimes [--base xception] [--size 299]
       [--images 40] [--repeats 5]
Nothing else may run on the machine meanwhile.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

RUNTIMES = ("savedmodel", "onnxruntime", "openvino", "litert")


def _tool(name: str) -> str:
    return str(Path(sys.executable).with_name(name))


def benchmark_app(xml: Path, size: int, precision: str) -> float:
    """OpenVINO's benchmark_app median latency (ms) at batch 1 with the latency hint."""
    done = subprocess.run([_tool("benchmark_app"), "-m", str(xml), "-d", "CPU", "-hint", "latency", "-infer_precision",
                           precision, "-niter", "60", "-shape", f"[1,{size},{size},3]"],
                          capture_output=True, text=True, check=True)
    lines = done.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if "Latency:" in line)
    median = next(line for line in lines[start:] if "Median:" in line)
    return float(median.split("Median:")[1].split()[0])


def litert_benchmark(tflite: Path, threads: int, folder: Path) -> float:
    """LiteRT's litert-benchmark median latency (ms)."""
    out = folder / "litert_benchmark.json"
    subprocess.run([_tool("litert-benchmark"), "--model", str(tflite), "--num_threads", str(threads), "--num_runs",
                    "60", "--warmup_runs", "3", "--result_json", str(out)], capture_output=True, text=True, check=True)
    return float(json.loads(out.read_text())["latency"]["median_ms"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--base", default="xception")
    parser.add_argument("--size", type=int, default=299)
    parser.add_argument("--images", type=int, default=20, help="timed images per runtime and round (after 3 warm-up)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of every runtime in turn")
    parser.add_argument("--repeats", type=int, default=5, help="probe / bare-loop pairs per runtime")
    args = parser.parse_args()

    from l40sbench.backends.tf_flops import forward_gflops
    from l40sbench.classify.config import ClassifyConfig
    from l40sbench.classify.task import compiled_model, make_forward
    from l40sbench.core.stats import summarize
    from l40sbench.core.timing import probe_latency
    from l40sbench.core.utilisation import peak_for
    from l40sbench.peak.measure import measure_env
    from l40sbench.runtimes.measure import threads
    from l40sbench.runtimes.registry import export_keras, load

    folder = Path(tempfile.mkdtemp(prefix="runtimes-"))
    model, _ = compiled_model(ClassifyConfig(base=args.base, image_size=args.size, weights="none", seed=0),
                               args.size, 2, print)
    gflops = forward_gflops(model, args.size, "uint8")
    artifacts = {name: export_keras(model, name, "fp32", folder / name) for name in RUNTIMES}
    forward = make_forward(model, args.size, xla=False)  # takes one image and adds the batch axis itself
    calls = {"tf": lambda image: forward(image[0])}
    precisions = {"tf": "fp32"}
    for name, artifact in artifacts.items():
        loaded = load(name, artifact.path, "fp32", threads(), artifact.precision)
        calls[name], precisions[name] = loaded.call, loaded.precision
    bf16 = load("openvino", artifacts["openvino"].path, "bf16", threads(), "fp32")
    calls["openvino bf16"], precisions["openvino bf16"] = bf16.call, bf16.precision

    print("measuring the peak ...", file=sys.stderr)
    device_peak = measure_env()
    _, fp32_peak = peak_for(device_peak, "fp32")
    _, bf16_peak = peak_for(device_peak, "mixed_bfloat16")
    images = [image[None] for image in
              np.random.default_rng(0).integers(0, 256, (args.images + 3, args.size, args.size, 3), dtype=np.uint8)]
    print("latency, each runtime alone in turn, rounds in rotation ...", file=sys.stderr)
    # Blocks, not image-by-image rotation: a runtime's thread pool spins on after its call and would
    # steal the next runtime's cores (OpenVINO measured 59 ms rotated against 39 ms alone). The product
    # times each runtime alone in its own child; rounds spread drift over all of them.
    times: dict = {name: [] for name in calls}
    for _ in range(args.rounds):
        for name, call in calls.items():
            times[name] += list(probe_latency(call, images, warmup=3).times_ms)
    stats = {name: summarize([t / 1000 for t in ms]) for name, ms in times.items()}

    print("probe over bare loop, per runtime ...", file=sys.stderr)
    overhead = {}
    short = images[:21]
    for name, call in calls.items():
        ratios = []
        for _ in range(args.repeats):
            probed = probe_latency(call, short)
            started = time.perf_counter()
            for image in short[1:]:
                call(image)
            bare = (time.perf_counter() - started) / 20
            ratios.append((probed.mean_ms / 1000) / bare)
        overhead[name] = statistics.median(ratios)

    print("the runtimes' own tools ...", file=sys.stderr)
    own = {}
    suite_again = {}
    for name, tool in (("openvino", lambda: benchmark_app(artifacts["openvino"].path, args.size, "f32")),
                       ("litert", lambda: litert_benchmark(artifacts["litert"].path, threads(), folder))):
        samples = []
        for _ in range(2):  # suite, tool, suite, tool: side by side
            samples.append((probe_latency(calls[name], images[:23], warmup=3).p50_ms, tool()))
        suite_again[name] = statistics.median(s for s, _ in samples)
        own[name] = statistics.median(t for _, t in samples)

    rows = []
    for name, stat in stats.items():
        rate = stat.images_per_second
        rows.append({
            "runtime": name, "precision": precisions[name], "mean_ms": stat.mean_ms, "p50_ms": stat.p50_ms,
            "p99_ms": stat.p99_ms, "images_per_second": rate, "vs_tf": stats["tf"].mean_ms / stat.mean_ms,
            "achieved_gflops": gflops * rate,
            "fraction_of_peak": gflops * rate / (bf16_peak if precisions[name] == "bf16" else fp32_peak),
            "peak": "bfloat16" if precisions[name] == "bf16" else "float32",
            "probe_over_bare_loop": overhead[name],
            "export_seconds": artifacts[name].export_seconds if name in artifacts else None,
            "size_mb": artifacts[name].size_mb if name in artifacts else None,
        })
    result = {"base": args.base, "size": args.size, "images": args.images, "threads": threads(),
              "forward_gflops": gflops, "peak": device_peak, "fp32_peak_gflops": fp32_peak,
              "rows": rows, "own_tool_median_ms": own, "suite_p50_ms_beside_own_tool": suite_again}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "runtimes.json").write_text(json.dumps(result, indent=2))
    shutil.rmtree(folder, ignore_errors=True)

    print(f"{args.base} {args.size}px batch 1, {threads()} threads, {gflops:.2f} GFLOP/image, "
          f"peaks float32 {fp32_peak:.1f}, bfloat16 {bf16_peak:.1f} GFLOP/s")
    print("| runtime | precision | mean ms | p50 ms | p99 ms | images/s | vs tf | % of peak | probe / bare |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in sorted(rows, key=lambda r: r["mean_ms"]):
        print(f"| {r['runtime']} | {r['precision']} | {r['mean_ms']:.2f} | {r['p50_ms']:.2f} | {r['p99_ms']:.2f} | "
              f"{r['images_per_second']:.2f} | {r['vs_tf']:.2f}x | {100 * r['fraction_of_peak']:.1f} % of {r['peak']} | "
              f"{r['probe_over_bare_loop']:.3f} |")
    for name in own:
        print(f"{name}: suite p50 {suite_again[name]:.2f} ms, own tool median {own[name]:.2f} ms, "
              f"suite / tool {suite_again[name] / own[name]:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
