"""Claims on the inference runtimes and LoadGen: each runtime against the peak and its own benchmark tool,
OpenVINO's silent bf16, the LoadGen SUT's overhead, offline and server."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.claims.figures import figure, records, run_peak, suite

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
    return float(next(line for line in lines[start:] if "Median:" in line).split("Median:")[1].split()[0])


def litert_benchmark(tflite: Path, threads: int, folder: Path) -> float:
    """LiteRT's litert-benchmark median latency (ms)."""
    out = folder / "litert_benchmark.json"
    subprocess.run([_tool("litert-benchmark"), "--model", str(tflite), "--num_threads", str(threads), "--num_runs",
                    "60", "--warmup_runs", "3", "--result_json", str(out)], capture_output=True, text=True, check=True)
    return float(json.loads(out.read_text())["latency"]["median_ms"])


def runtimes(sizes: dict) -> dict:
    """One model (random weights) exported by the product to every runtime and loaded by it: per-image latency,
    each runtime alone in turn, in rounds (blocks, not image by image: a runtime's thread pool spins on after its
    call); the probe over a bare loop of the same call; the suite's p50 beside each runtime's own tool, in turns."""
    import numpy as np

    from l40sbench.backends.tf_flops import forward_gflops
    from l40sbench.classify.config import ClassifyConfig
    from l40sbench.classify.probe import make_forward
    from l40sbench.classify.task import compiled_model
    from l40sbench.core.timing import probe_latency
    from l40sbench.core.utilisation import peak_for
    from l40sbench.runtimes.measure import threads
    from l40sbench.runtimes.registry import export_keras, load

    size = sizes["size"]
    model, _ = compiled_model(ClassifyConfig(base=sizes["base"], image_size=size, weights="none", seed=0), size, 2,
                              lambda _: None)
    gflops = forward_gflops(model, size, "uint8")
    _, fp32_peak = peak_for(run_peak(), "fp32")
    rng = np.random.default_rng(0)
    images = [image[None] for image in rng.integers(0, 256, (sizes["images"] + 3, size, size, 3), dtype=np.uint8)]
    with tempfile.TemporaryDirectory() as work:
        folder = Path(work)
        artifacts = {name: export_keras(model, name, "fp32", folder / name) for name in RUNTIMES}
        forward = make_forward(model, size, xla=False)
        calls = {"tf": lambda image: forward(image[0])}
        for name, artifact in artifacts.items():
            calls[name] = load(name, artifact.path, "fp32", threads(), artifact.precision).call
        calls["openvino_bf16"] = load("openvino", artifacts["openvino"].path, "bf16", threads(), "fp32").call
        times: dict = {name: [] for name in calls}
        for _ in range(sizes["rounds"]):
            for name, call in calls.items():
                times[name] += list(probe_latency(call, images, warmup=3).times_ms)
        overhead: dict = {}
        for name, call in calls.items():
            for _ in range(sizes["repeats"]):
                probed = probe_latency(call, images).mean_ms
                started = time.perf_counter()
                for image in images[1:]:
                    call(image)
                overhead.setdefault(name, []).append(probed / (1000 * (time.perf_counter() - started)
                                                               / (len(images) - 1)))
        tools = {"openvino": lambda: benchmark_app(artifacts["openvino"].path, size, "f32"),
                 "litert": lambda: litert_benchmark(artifacts["litert"].path, threads(), folder)}
        own = {name: [probe_latency(calls[name], images, warmup=3).p50_ms / tool() for _ in range(2)]
               for name, tool in tools.items()}
    means = {name: statistics.fmean(ms) for name, ms in times.items() if name != "openvino_bf16"}
    fastest = min(means, key=means.get)
    probe_medians = [statistics.median(r) for r in overhead.values()]
    return {"best_share": figure([gflops * 1000 / ms / fp32_peak for ms in times[fastest]], "x"),
            "tf_over_best": figure([means["tf"] / means[fastest]], "x"),
            "probe_low": figure([min(probe_medians)], "x"), "probe_high": figure([max(probe_medians)], "x"),
            **{f"probe_{name}": figure(ratios, "x") for name, ratios in overhead.items()},
            **{f"own_{name}": figure(ratios, "x") for name, ratios in own.items()},
            **{f"{name}_ms": figure(ms, "ms") for name, ms in times.items()},
            "labels": {"fastest": fastest, "base": sizes["base"], "size": str(size)}}


def _single_stream(runtime: str, artifact: str, size: int):
    """In a child: the runtime's loaded model, 20 random images, and one LoadGen single-stream test of them."""
    import numpy as np

    from l40sbench.loadgen.config import Job
    from l40sbench.loadgen.harness import run_test
    from l40sbench.runtimes.measure import threads
    from l40sbench.runtimes.registry import load

    loaded = load(runtime, Path(artifact), "fp32", threads(), "fp32")
    images = [np.random.default_rng(i).integers(0, 256, (1, size, size, 3), dtype=np.uint8) for i in range(20)]

    def test(folder: Path, seconds: float, expected_ms: float, respond) -> float:
        got = run_test([loaded.call], images, Job("single-stream", 1, 0.0, 1, seconds, None,
                                                  expected_latency_ms=expected_ms / 2), folder, respond=respond)
        return got["latency_ms"]["p50"]

    return loaded, images, test


def sut_overhead(runtime: str, artifact: str, size: int, rounds: int, seconds: float) -> list[float]:
    """In a child: the product's probe p50 and its LoadGen single-stream p50 (each sample's class answered, as
    every test answers) on one loaded model, `rounds` times: each LoadGen test's p50 over the mean of the probes just
    before and just after it. This host moves between two speeds some 15 % apart every few tens of seconds: a probe
    on one side of a move and the test on the other read as a LoadGen overhead (LiteRT's 1.14 of an earlier run);
    bracketing spoils only a round that holds a move, and the median leaves it out."""
    from l40sbench.core.timing import probe_latency
    from l40sbench.runtimes.responses import ResponseFormat, encoder

    loaded, images, test = _single_stream(runtime, artifact, size)
    respond = encoder(ResponseFormat("class"))
    ratios = []
    with tempfile.TemporaryDirectory() as work:
        after = probe_latency(loaded.call, images * 2, warmup=2).p50_ms
        for index in range(rounds):
            before = after
            got = test(Path(work) / str(index), seconds, before, respond)
            after = probe_latency(loaded.call, images * 2, warmup=2).p50_ms
            ratios.append(got / ((before + after) / 2))
    return ratios


def response_cost(runtime: str, artifact: str, size: int, rounds: int, seconds: float) -> list[float]:
    """In a child: LoadGen single-stream p50 with each sample's class answered (MLPerf's response) and without
    (samples completed with no data), in turns, `rounds` pairs: each pair's with / without."""
    from l40sbench.core.timing import probe_latency
    from l40sbench.runtimes.responses import ResponseFormat, encoder

    loaded, images, test = _single_stream(runtime, artifact, size)
    probe = probe_latency(loaded.call, images * 2, warmup=2).p50_ms
    respond = encoder(ResponseFormat("class"))
    ratios = []
    with tempfile.TemporaryDirectory() as work:
        for index in range(rounds):
            without = test(Path(work) / f"without-{index}", seconds, probe, None)
            ratios.append(test(Path(work) / f"with-{index}", seconds, probe, respond) / without)
    return ratios


def loadgen_responses(sizes: dict) -> dict:
    """A classify run (random weights) timed on the runtime as a user runs it, then the cost of answering each
    sample in LoadGen's single-stream, in a process of its own."""
    from benchmarks.claims.figures import in_child

    with tempfile.TemporaryDirectory() as work:
        run = Path(work) / "run"
        suite(["classify", "--base", sizes["base"], "--image-size", str(sizes["size"]), "--limit", str(sizes["limit"]),
               "--epochs", "1", "--weights", "none", "--output-dir", str(run), "--runtimes", sizes["runtime"]])
        (record,) = records(run)
        (row,) = [r for r in record["inference"]["runtimes"] if r["runtime"] == sizes["runtime"]]
        ratios = in_child("benchmarks.claims.runtimes:response_cost", sizes["runtime"], row["artifact"],
                          sizes["size"], sizes["rounds"], sizes["seconds"])
    return {"ratio": figure(ratios, "x"), "labels": {"base": sizes["base"], "size": str(sizes["size"]),
                                                     "runtime": sizes["runtime"],
                                                     "p50": f"{row['inference']['p50_ms']:.2f}"}}


def loadgen(sizes: dict) -> dict:
    """A classify run (random weights), then `infer --scenario single-stream,offline` and `--scenario server
    --find-max-qps --latency-bound-ms 15` as a user runs them; then the SUT's overhead per runtime, each in a
    process of its own."""
    from benchmarks.claims.figures import in_child
    from l40sbench.core.utilisation import peak_for

    with tempfile.TemporaryDirectory() as work:
        run = Path(work) / "run"
        suite(["classify", "--base", sizes["base"], "--image-size", str(sizes["size"]), "--limit", str(sizes["limit"]),
               "--epochs", "1", "--weights", "none", "--output-dir", str(run)])
        common = [str(run), "--runtimes", sizes["runtimes"], "--duration", str(sizes["duration"])]
        suite(["infer", *common, "--scenario", "single-stream,offline", "--max-batch-size", sizes["batches"]])
        suite(["infer", *common, "--scenario", "server", "--find-max-qps", "--latency-bound-ms", "15"])
        (record,) = records(run)
        artifacts = {r["runtime"]: r["artifact"] for r in record["inference"]["runtimes"]}
        sut = {name: in_child("benchmarks.claims.runtimes:sut_overhead", name, artifacts[name], sizes["size"],
                              sizes["rounds"], sizes["sut_seconds"]) for name in sizes["runtimes"].split(",")}
    _, fp32 = peak_for(record["env"]["peak"], "fp32")
    gflops = record["utilisation"]["forward_gflops_per_image"]
    scenarios = record["inference"]["scenarios"]
    offline = max((e for e in scenarios if e["scenario"] == "offline"), key=lambda e: e["samples_per_second"])
    servers = [e for e in scenarios if e["scenario"] == "server" and e["settings"].get("find_max_qps")]
    medians = [statistics.median(r) for r in sut.values()]
    return {"sut_low": figure([min(medians)], "x"), "sut_high": figure(sut[max(sut, key=lambda n: statistics.median(
                sut[n]))], "x"),
            **{f"sut_{name}": figure(ratios, "x") for name, ratios in sut.items()},
            "offline_share": figure([gflops * offline["samples_per_second"] / fp32], "x"),
            "server_qps": figure([max(e["search"]["max_valid_qps"] for e in servers)], "queries/s"),
            "labels": {"offline": f"{offline['runtime']} at batch {offline['settings']['batch']}",
                       "base": sizes["base"], "size": str(sizes["size"])}}
