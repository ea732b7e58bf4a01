"""LoadGen scenarios for one classifier, through the product's own `infer --scenario` (docs/performance-log.md, "MLPerf LoadGen scenarios").

Makes (or reuses) a classify run of --base at --size with random weights (speed does not depend on
them), then runs, in one process after another and nothing else on the machine:
- the float32 and bfloat16 matmul peaks (l40sbench.peak), before and after, as the calibration;
- `infer RUN --runtimes R --scenario single-stream,offline --batch 1,2,4,8,16 --duration D`: for each
  runtime the one-image probe, LoadGen single-stream and LoadGen offline at each batch;
- `infer RUN --runtimes R --scenario server --find-max-qps --duration D` at MLPerf's 15 ms bound;
- the SUT's overhead, per runtime in a process of its own: the product's probe (40 images) and the
  product's LoadGen single-stream test (8 s) on the same loaded model, alternating, --rounds pairs;
  the median of the pairs' p50 ratios (separate processes minutes apart differ by up to 10 % on
  this shared machine, so only adjacent pairs are compared);
then prints, per runtime: that ratio, offline samples/s at each batch over single-stream samples/s,
and the best offline rate's share of the float32 peak measured here.

Usage: .venv/bin/python benchmarks/loadgen.py --out results/loadgen [--base xception] [--size 299]
       [--runtimes tf,onnxruntime,openvino,litert] [--duration 20] [--batches 1,2,4,8,16] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _cli(*args: str) -> None:
    print("+ l40sbench " + " ".join(args), file=sys.stderr, flush=True)
    subprocess.run([sys.executable, "-m", "l40sbench", *args], check=True, cwd=REPO)


def overhead(runtime: str, artifact: str, rounds: int, folder: Path) -> dict:
    """Probe p50 and LoadGen single-stream p50 on one loaded model, alternating, `rounds` pairs."""
    import statistics

    import numpy as np

    from l40sbench.core.timing import probe_latency
    from l40sbench.loadgen.config import Job
    from l40sbench.loadgen.harness import run_test
    from l40sbench.runtimes.measure import threads
    from l40sbench.runtimes.registry import load

    loaded = load(runtime, Path(artifact), "fp32", threads(), "fp32")
    size = 299
    if artifact.endswith(".keras"):
        import keras

        size = keras.saving.load_model(artifact).input_shape[1]
    images = [np.random.default_rng(i).integers(0, 256, (1, size, size, 3), dtype=np.uint8) for i in range(20)]
    pairs = []
    for index in range(rounds):
        probe = probe_latency(loaded.call, images * 2, warmup=2).p50_ms
        figures = run_test([loaded.call], images, Job("single-stream", 1, 0.0, 1, 8.0, None,
                                                      expected_latency_ms=probe / 2), folder / f"{runtime}-{index}")
        pairs.append((probe, figures["latency_ms"]["p50"]))
    return {"runtime": runtime, "pairs_p50_ms": pairs,
            "loadgen_over_probe_p50": statistics.median(loadgen / probe for probe, loadgen in pairs)}


def main() -> int:
    if sys.argv[1:2] == ["--overhead"]:  # the per-runtime child of the overhead pass
        _, _, runtime, artifact, rounds, out = sys.argv
        Path(out).write_text(json.dumps(overhead(runtime, artifact, int(rounds), Path(out).parent)))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--base", default="xception")
    parser.add_argument("--size", type=int, default=299)
    parser.add_argument("--limit", type=int, default=40, help="images per class of the stand-in set (the test split "
                                                              "is the query sample library)")
    parser.add_argument("--runtimes", default="tf,onnxruntime,openvino,litert")
    parser.add_argument("--duration", default="20")
    parser.add_argument("--batches", default="1,2,4,8,16")
    parser.add_argument("--rounds", type=int, default=5, help="probe / LoadGen single-stream pairs per runtime")
    parser.add_argument("--skip-infer", action="store_true",
                        help="reuse the scenario entries the run's record already holds for these runtimes")
    args = parser.parse_args()

    from l40sbench.core.reading import read_result_file
    from l40sbench.core.utilisation import peak_for
    from l40sbench.peak.measure import measure_env

    run = args.out / f"{args.base}-{args.size}"
    if not (run / "result.json").is_file():
        _cli("classify", "--base", args.base, "--image-size", str(args.size), "--limit", str(args.limit), "--epochs",
             "1", "--weights", "none", "--output-dir", str(run))
    peaks = [measure_env()]
    if not args.skip_infer:
        _cli("infer", str(run), "--runtimes", args.runtimes, "--scenario", "single-stream,offline", "--max-batch-size",
             args.batches, "--duration", args.duration)
        _cli("infer", str(run), "--runtimes", args.runtimes, "--scenario", "server", "--find-max-qps", "--duration",
             args.duration, "--latency-bound-ms", "15")
    (record,) = read_result_file(run / "result.json")[:1]
    probes = {r["runtime"]: r for r in record["inference"]["runtimes"]}
    sut = {}
    for name in args.runtimes.split(","):
        print(f"+ SUT overhead on {name} ({args.rounds} probe / LoadGen pairs)", file=sys.stderr, flush=True)
        out = args.out / "overhead" / f"{name}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, __file__, "--overhead", name, probes[name]["artifact"], str(args.rounds),
                        str(out)], check=True, cwd=REPO)
        sut[name] = json.loads(out.read_text())
    peaks.append(measure_env())
    fp32 = [peak_for(p, "fp32")[1] for p in peaks]
    gflops = record["utilisation"]["forward_gflops_per_image"]
    rows = []
    for name in args.runtimes.split(","):
        mine = [e for e in record["inference"]["scenarios"] if e["runtime"] == name]
        single = next(e for e in mine if e["scenario"] == "single-stream")
        offline = {e["settings"]["batch"]: e for e in mine if e["scenario"] == "offline"}
        server = next(e for e in mine if e["scenario"] == "server" and e["settings"].get("find_max_qps"))
        best = max(offline, key=lambda b: offline[b]["samples_per_second"])
        rows.append({
            "runtime": name, "precision": single["precision"], "probe_p50_ms": probes[name]["inference"]["p50_ms"],
            "single_stream_p50_ms": single["latency_ms"]["p50"], "single_stream_result": single["result"],
            "record_single_stream_over_probe_p50": single["latency_ms"]["p50"] / probes[name]["inference"]["p50_ms"],
            "sut_over_probe_p50": sut[name]["loadgen_over_probe_p50"], "sut_pairs_p50_ms": sut[name]["pairs_p50_ms"],
            "single_stream_samples_per_second": single["samples_per_second"],
            "offline_samples_per_second": {b: e["samples_per_second"] for b, e in sorted(offline.items())},
            "offline_result": {b: e["result"] for b, e in sorted(offline.items())},
            "best_batch": best, "offline_over_single_stream":
                offline[best]["samples_per_second"] / single["samples_per_second"],
            "offline_share_of_fp32_peak": gflops * offline[best]["samples_per_second"] / min(fp32),
            "server_max_valid_qps": server["search"]["max_valid_qps"], "server_why_zero": server["search"]["why_zero"],
            "server_result": server["result"],
        })
    result = {"base": args.base, "size": args.size, "forward_gflops": gflops, "fp32_peak_gflops_before_after": fp32,
              "duration_s": float(args.duration), "rows": rows}
    (args.out / "loadgen.json").write_text(json.dumps(result, indent=2))
    print(f"{args.base} {args.size}px, {gflops:.2f} GFLOP/image, float32 peak {fp32[0]:.1f} before, {fp32[1]:.1f} "
          f"after (GFLOP/s); each test {args.duration} s")
    print("| runtime | precision | probe p50 ms | LoadGen single-stream p50 ms | SUT / probe (pairs) | single-stream /s | "
          "offline /s by batch | best / single | best % of fp32 peak | server max VALID qps (15 ms) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        by_batch = ", ".join(f"{b}: {v:.1f}" for b, v in r["offline_samples_per_second"].items())
        print(f"| {r['runtime']} | {r['precision']} | {r['probe_p50_ms']:.2f} | {r['single_stream_p50_ms']:.2f} | "
              f"{r['sut_over_probe_p50']:.3f} | {r['single_stream_samples_per_second']:.1f} | {by_batch} | "
              f"{r['offline_over_single_stream']:.2f}x (batch {r['best_batch']}) | "
              f"{100 * r['offline_share_of_fp32_peak']:.1f} % | {r['server_max_valid_qps']:g} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
