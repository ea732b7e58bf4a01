"""One LoadGen test: the query sample library, the SUT, LoadGen's settings, its logs and their figures.

The library holds every image decoded and resized already; LoadGen's load callback picks the samples
it will use and its unload callback drops them, so no decode is ever inside a latency. LoadGen's
summary and detail logs are kept in the test's folder (its trace is switched off: tens of MB on a
long run, and nothing the record reads).
"""

from __future__ import annotations

import array
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from l40sbench.loadgen import mlperf_conf
from l40sbench.loadgen.config import LOADGEN_MIN_QUERIES, SCENARIOS, SERVER_PERCENTILE, Job
from l40sbench.loadgen.summary import read_logs
from l40sbench.loadgen.sut import BatchingSUT, Call, with_sut_verdict
from l40sbench.runtimes.responses import Respond

Progress = Callable[[dict], None]
PROGRESS_EVERY_S = 1.0


def loadgen_settings(job: Job, library_size: int, target_qps: float | None = None, duration_s: float | None = None,
                     min_queries: int | None = None) -> tuple:
    """LoadGen's TestSettings for `job`: LoadGen's mlperf.conf for the job's MLPerf model, the suite's settings over
    it (a search step passes its own rate, duration and query floor); and the record's word on them."""
    import mlperf_loadgen as lg

    scenario = SCENARIOS[job.scenario]
    mlperf = mlperf_conf.official(scenario, job.mlperf_model)
    settings = mlperf_conf.official(scenario, job.mlperf_model)
    settings.mode = lg.TestMode.AccuracyOnly if job.mode == "accuracy" else lg.TestMode.PerformanceOnly
    duration_s = duration_s or job.duration_s
    settings.min_duration_ms = int(duration_s * 1000)
    settings.min_query_count = int(min_queries or job.min_queries or LOADGEN_MIN_QUERIES)
    settings.performance_sample_count_override = library_size  # the library: every test image, all in memory
    settings.test05 = job.audit == "TEST05"  # LoadGen reads test05 from mlperf.conf alone, never an audit.config
    cap = job.query_cap(duration_s, min_queries or job.min_queries)
    if cap:
        settings.max_query_count = cap
    if job.scenario == "single-stream":
        settings.single_stream_expected_latency_ns = max(1, int(job.expected_latency_ms * 1e6))
    elif job.scenario == "multi-stream":
        settings.multi_stream_samples_per_query = job.samples_per_query
        settings.multi_stream_expected_latency_ns = max(1, int(job.expected_latency_ms * 1e6))
    elif job.scenario == "offline":
        settings.offline_expected_qps = float(job.expected_qps)
    else:
        settings.server_target_qps = float(target_qps or job.target_qps)
        settings.server_target_latency_ns = int(job.latency_bound_ms * 1e6)
        settings.server_target_latency_percentile = SERVER_PERCENTILE
    return settings, mlperf_conf.block(mlperf, settings, scenario, job.mlperf_model)


def run_test(calls: Sequence[Call], images: Sequence[np.ndarray], job: Job, folder: Path, *,
             target_qps: float | None = None, duration_s: float | None = None, min_queries: int | None = None,
             on_progress: Progress | None = None, respond: Respond | None = None,
             audit_config: Path | None = None) -> dict:
    """Runs one LoadGen test over `images` with one worker per call; LoadGen's figures and the SUT's.

    Args:
      images: the query sample library, each uint8 [1, H, W, 3].
      on_progress: called about every second with elapsed_s, samples answered and the current rate.
      respond: each sample's response bytes (runtimes.responses.encoder), in every mode, as MLPerf requires;
        None completes samples without data (only to measure what responding costs).
      audit_config: the audit.config LoadGen reads (the suite's own for an audit, the working directory's where a
        user put one); None: a path that does not exist, so no stray file changes a test.
    """
    import mlperf_loadgen as lg

    folder.mkdir(parents=True, exist_ok=True)
    library: dict[int, np.ndarray] = {}

    def load(indices) -> None:
        for index in indices:
            library[index] = images[index]

    def unload(indices) -> None:
        for index in indices:
            library.pop(index, None)

    def complete(ids: list[int], responses: list[bytes] | None) -> None:
        if responses is None:
            lg.QuerySamplesComplete([lg.QuerySampleResponse(sample_id, 0, 0) for sample_id in ids])
            return
        buffers = [array.array("B", data) for data in responses]  # alive until LoadGen has logged them
        lg.QuerySamplesComplete([lg.QuerySampleResponse(sample_id, buffer.buffer_info()[0], len(buffer))
                                 for sample_id, buffer in zip(ids, buffers)])

    sut = BatchingSUT(calls, library, job.batch, job.batch_timeout_ms, complete, respond=respond)
    handle = lg.ConstructSUT(sut.issue, sut.flush)
    qsl = lg.ConstructQSL(len(images), len(images), load, unload)
    log_settings = lg.LogSettings()
    log_settings.log_output.outdir = str(folder)
    log_settings.log_output.copy_summary_to_stdout = False
    log_settings.enable_trace = False
    done = threading.Event()
    watcher = threading.Thread(target=_watch, args=(sut, done, on_progress), daemon=True)
    watcher.start()
    started = time.perf_counter()
    settings, conf = loadgen_settings(job, len(images), target_qps, duration_s, min_queries)
    try:
        lg.StartTestWithLogSettings(handle, qsl, settings, log_settings,
                                    str(audit_config or folder / "no-audit.config"))
    finally:
        done.set()
        watcher.join()
        sut.stop()
        lg.DestroyQSL(qsl)
        lg.DestroySUT(handle)
    trace = folder / "mlperf_log_trace.json"
    if trace.is_file() and not trace.stat().st_size:  # LoadGen leaves it empty with the trace off
        trace.unlink()
    stats = sut.stats()
    figures = with_sut_verdict(read_logs(folder), stats)
    return {**figures, "wall_seconds": time.perf_counter() - started, "sut": stats, "log_dir": str(folder),
            "mlperf_conf": conf}


def _watch(sut: BatchingSUT, done: threading.Event, on_progress: Progress | None) -> None:
    if on_progress is None:
        return
    started = last_time = time.perf_counter()
    last_count = 0
    while not done.wait(PROGRESS_EVERY_S):
        now, count = time.perf_counter(), sut.samples_answered
        on_progress({"elapsed_s": now - started, "samples_answered": count,
                     "rate": (count - last_count) / (now - last_time)})
        last_time, last_count = now, count
