"""The LoadGen child: `python -m l40sbench.loadgen.child REQUEST.json`.

Loads one runtime's model once per worker (tf and the SavedModel once, shared: TensorFlow's pool is
the process's), reads the decoded images and runs each job of the request under LoadGen. Each job
writes its figures to <job folder>/scenario.json the moment it ends, so a stop keeps the finished
jobs; progress.json is rewritten about every second for the parent to show.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np

from l40sbench.core.records import to_json, write_atomic
from l40sbench.loadgen import audits
from l40sbench.loadgen.config import (
    CONFIRM_MIN_QUERIES,
    MIN_SEARCH_RUN_S,
    SEARCH_MIN_QUERIES,
    SEARCH_RUN_FRACTION,
    SEARCH_STEPS,
    Job,
)
from l40sbench.loadgen.harness import run_test
from l40sbench.loadgen.search import confirm, find_max_qps, more_queries_needed
from l40sbench.runtimes.child import read_images
from l40sbench.runtimes.responses import ResponseFormat, encoder

RESULT_FILE = "scenario.json"
DIRECT_ANSWERS = "direct_answers.json"  # each library sample's response, its forward called alone (hex, in order)
PROGRESS_FILE = "progress.json"
SHARED = ("tf", "savedmodel")  # thread-safe calls into one process-wide pool: loaded once, shared by workers


def load_calls(request: dict, workers: int) -> tuple[list, dict]:
    """One forward per worker, and what the runtime reports it runs (precision, threads, version)."""
    from l40sbench.runtimes.registry import load

    shared = request["runtime"] in SHARED
    threads = request["threads"] if shared else max(1, request["threads"] // workers)
    loaded = [load(request["runtime"], Path(request["artifact"]), request["precision"], threads,
                   request["file_precision"], xla=request.get("xla", False))
              for _ in range(1 if shared else workers)]
    if request.get("decoding"):  # a detector file's format: its host stages inside each call, as the probe timed
        from l40sbench.runtimes.staged import Decoding, staged

        loaded = [staged(item, Decoding.from_dict(request["decoding"])) for item in loaded]
    calls = [loaded[0].call] * workers if shared else [item.call for item in loaded]
    first = loaded[0]
    return calls, {"precision": first.precision, "threads_per_worker": first.threads, "version": first.version,
                   "runtime_settings": first.settings, "workers_share_one_model": shared}


def warm_sizes(jobs: list[Job]) -> range:
    """Every batch size the SUT can form: dynamic batching takes what is queued, 1 up to the job's batch."""
    return range(1, max(job.batch for job in jobs) + 1)


def warm_up(calls: list, images: list, sizes: range) -> None:
    """Each worker's forward called once at every batch size the SUT can form, before LoadGen starts: each new
    shape retraces under XLA, autotunes under cuDNN, re-plans in OpenVINO, and none of that may fall inside a
    latency (MLPerf SUTs warm up the same way). Costs sizes x (sizes + 1) / 2 images per worker."""
    for call in dict.fromkeys(calls):
        for batch in sizes:
            call(np.concatenate([images[i % len(images)] for i in range(batch)]))


def library_pass(call, images: list, respond) -> tuple[list[bytes] | None, float]:
    """Each library sample through the forward alone, outside LoadGen: its responses (None without `respond`) and
    the images/s of the pass, the probe of this library on this runtime."""
    answers, started = [], time.perf_counter()
    for index, image in enumerate(images):
        outputs = call(image)
        if respond is not None:
            answers.append(respond(outputs, 0, index))
    return (answers if respond is not None else None), len(images) / (time.perf_counter() - started)


def rescaled(job: Job, factor: float, keep_expected_qps: bool) -> Job:
    """A job's generation hints, taken from the rows' probe on other images, scaled to the library's rate."""
    def times(value):
        return None if value is None else value * factor

    def over(value):
        return None if value is None else value / factor

    return dataclasses.replace(job, expected_latency_ms=over(job.expected_latency_ms),
                               expected_qps=job.expected_qps if keep_expected_qps else times(job.expected_qps),
                               capacity_qps=times(job.capacity_qps), start_qps=times(job.start_qps),
                               probe_p50_ms=over(job.probe_p50_ms))


def run_job(calls: list, images: list, job: Job, folder: Path, progress, respond=None,
            audit_config: Path | None = None) -> dict:
    """One job's figures: a LoadGen test (an audit's with the audit.config it needs, written beside its logs and
    removed after), or a server search and its confirming run."""
    text = audits.config_text(job.audit, job.mlperf_model) if job.audit in audits.TOLERANCE else None
    if text is not None:
        audit_config = folder / audits.AUDIT_CONFIG
        folder.mkdir(parents=True, exist_ok=True)
        audit_config.write_text(text)
    if not job.find_max_qps:
        try:
            return run_test(calls, images, job, folder, on_progress=progress(job.tag), respond=respond,
                            audit_config=audit_config)
        finally:
            if text is not None:
                audit_config.unlink(missing_ok=True)
    probe = job.start_qps
    if job.probe_p50_ms > job.latency_bound_ms:
        rate, steps, why = 0.0, [], (f"the median single-image latency ({job.probe_p50_ms:.1f} ms) is above "
                                     f"the {job.latency_bound_ms:g} ms bound: no rate can meet it")
    else:
        short = max(MIN_SEARCH_RUN_S, job.duration_s * SEARCH_RUN_FRACTION)
        queries = max(SEARCH_MIN_QUERIES, job.min_queries or 0)
        rate, steps = find_max_qps(
            lambda qps: run_test(calls, images, job, folder / f"search-{qps:.3f}", target_qps=qps,
                                 duration_s=short, min_queries=queries, on_progress=progress(f"{job.tag} @ {qps:.1f}"),
                                 respond=respond, audit_config=audit_config),
            probe, max_steps=SEARCH_STEPS)
        why = "" if rate else (f"the bound was missed down to {min(s['qps'] for s in steps):.3g} queries/s, where "
                               "queueing no longer adds to the latency")
    if not rate:  # one run at the lowest rate tried (or a quarter of the probe's) shows LoadGen's verdict
        confirm_at = min((step["qps"] for step in steps), default=probe / 4)
        figures = run_test(calls, images, job, folder, target_qps=confirm_at,
                           on_progress=progress(f"{job.tag} at {confirm_at:.1f}"), respond=respond,
                           audit_config=audit_config)
        return {**figures, "search": {"max_valid_qps": 0.0, "search_qps": rate, "steps": steps,
                                      "confirmed_at_qps": confirm_at, "confirming_runs": [], "why_zero": why}}

    def run_confirm(qps: float, queries: int | None) -> dict:
        return run_test(calls, images, job, folder, target_qps=qps, min_queries=queries,
                        on_progress=progress(f"{job.tag} confirming @ {qps:.1f}, {queries} queries at least"),
                        respond=respond, audit_config=audit_config)

    found, figures, tries = confirm(run_confirm, rate, max(CONFIRM_MIN_QUERIES, job.min_queries or 0))
    if not found:
        why = "the confirming runs were INVALID: " + "; ".join(
            f"{t['qps']:.3g}/s over {t['queries']} queries, {t['reasons'][0] if t['reasons'] else 'no reason given'}"
            for t in tries)
        more = more_queries_needed(figures)
        if more:
            why += (f"; LoadGen's early stopping asks for {more} more queries at this latency spread "
                    f"(--min-queries {figures['queries'] + more} or more)")
    return {**figures, "search": {"max_valid_qps": round(found, 3), "search_qps": rate, "steps": steps,
                                  "confirmed_at_qps": tries[-1]["qps"], "confirming_runs": tries, "why_zero": why}}


def main(argv: list[str]) -> int:
    request = json.loads(Path(argv[0]).read_text())
    jobs = [Job(**job) for job in request["jobs"]]
    out = Path(request["out_dir"])
    calls, runtime = load_calls(request, max(job.workers for job in jobs))
    images = read_images(Path(request["inputs"]))
    sizes = warm_sizes(jobs)
    warm_up(calls, images, sizes)
    runtime["warm_up"] = (f"each worker's forward called once at every batch size from 1 to {sizes[-1]} (all that "
                          "dynamic batching can form) before LoadGen started")
    started = time.perf_counter()

    def progress(label: str):
        def write(state: dict) -> None:
            write_atomic(out / PROGRESS_FILE, to_json({**state, "job": label,
                                                       "total_elapsed_s": time.perf_counter() - started}))
        return write

    form = request.get("responses")
    respond = encoder(ResponseFormat.from_dict(form)) if form and request.get("respond", True) else None
    runtime["responses"] = form["kind"] if respond else "none (samples completed without data)"
    runtime["library"] = request.get("library")
    accuracy = respond is not None and any(job.mode == "accuracy" for job in jobs)
    probe = request.get("probe")  # the rows' probe, on other images than the library's
    if accuracy or probe:
        answers, rate = library_pass(calls[0], images, respond if accuracy else None)
        if accuracy:
            write_atomic(out / DIRECT_ANSWERS, json.dumps([data.hex() for data in answers]))
            runtime["direct_answers"] = str(out / DIRECT_ANSWERS)
        if probe:
            factor = rate / probe["images_per_second"]
            jobs = [rescaled(job, factor, request.get("user_expected_qps", False)) for job in jobs]
            runtime["library"] = {**runtime["library"], "images_per_second": rate, "hints_scaled_by": factor}
    given = Path(request["audit_config"]) if request.get("audit_config") else None
    for job in jobs:
        figures = run_job(calls, images, job, out / job.tag, progress, respond, given)
        write_atomic(out / job.tag / RESULT_FILE, to_json({**figures, "job": dataclasses.asdict(job), **runtime}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
