"""What `infer --scenario` runs: the flags checked once, then one Job per (scenario, batch, rate).

MLPerf's defaults where it has them: a 15 ms server bound for classification and 100 ms for
detection (the ResNet-50 and RetinaNet bounds), 8 samples per multi-stream query, the 99th
percentile for the server and multi-stream, the 90th for single-stream. Where a LoadGen setting
only tells it how many queries to generate ahead (expected latency, expected offline rate), the
default comes from the runtime's own probe, measured just before.
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass

from l40sbench.errors import UserError

MODES = ("performance", "accuracy")  # LoadGen's PerformanceOnly and AccuracyOnly
AUDITS = ("TEST01", "TEST04", "TEST05")  # MLPerf's compliance tests (loadgen.audits)
AUDIT_ROUNDS = 3  # the baseline and each audit in turns, A B A B A B: the host's drift falls inside the pairs, and
# the median of three survives one pair the host spoiled (of two it is their mean: one spoiled pair fails it)
MAX_AUDIT_ROUNDS = 50
AUDIT_SCENARIOS = ("single-stream", "offline")  # what --audit audits without --scenario
# The MLPerf benchmark whose mlperf.conf settings (LoadGen's own) each task takes: the nearest image benchmarks;
# an Ultralytics YOLO export takes MLPerf's own `yolo` (mlperf_model).
MLPERF_MODEL = {"classify": "resnet50", "detect": "retinanet"}
# Our names -> LoadGen's TestScenario names.
SCENARIOS = {"single-stream": "SingleStream", "multi-stream": "MultiStream", "server": "Server",
             "offline": "Offline"}
LATENCY_BOUND_MS = {"classify": 15.0, "detect": 100.0}
SAMPLES_PER_QUERY = 8
SERVER_PERCENTILE = 0.99
DURATION_S = 60.0
SEARCH_STEPS = 10  # short server runs the --find-max-qps search may make before its confirming run
SEARCH_MIN_QUERIES = 200  # a short run's p99 rests on at least this many queries
CONFIRM_MIN_QUERIES = 500  # LoadGen's 99th-percentile early stopping needs about 460 queries to call a run VALID
SEARCH_RUN_FRACTION = 0.2  # a search run lasts this share of --duration (at least MIN_SEARCH_RUN_S)
MIN_SEARCH_RUN_S = 1.0
# A server test's query cap: what the SUT could serve in OVERLOAD_SPAN x the duration at an upper bound of its rate
# (the probe's images/s x batch x workers: a batch costs at least one image's time), and at least twice the
# queries LoadGen must see. Above its capacity LoadGen would issue rate x duration queries and wait for every one
# (300,000 at 100,000/s for 3 s, served at 35/s: hours); with the cap it stops issuing and the test ends INVALID.
OVERLOAD_SPAN = 2.0
LOADGEN_MIN_QUERIES = 100  # LoadGen's own min_query_count when none is given
# Values past these are mistakes, not tests: refused before any work.
MAX_DURATION_S = 3600.0  # a search's runs and confirmations take about 6 durations: inside the child's 6 h timeout
MAX_QUERIES = 10_000_000  # MLPerf's largest query floor (server, 270,336) with room to spare
MAX_SAMPLES_PER_QUERY = 1024  # MLPerf's multi-stream uses 8


@dataclass(frozen=True)
class LoadConfig:
    """The --scenario flags as given (None: the default, worked out per runtime in `jobs`)."""

    scenarios: tuple[str, ...]
    batches: tuple[int, ...] = (1,)
    batch_timeout_ms: float = 0.0
    workers: int = 1
    duration_s: float = DURATION_S
    min_queries: int | None = None
    latency_bound_ms: float | None = None
    target_qps: tuple[float, ...] = ()
    samples_per_query: int = SAMPLES_PER_QUERY
    expected_qps: float | None = None
    find_max_qps: bool = False
    modes: tuple[str, ...] = ("performance",)  # LoadGen's test modes: performance, accuracy, or both
    audits: tuple[str, ...] = ()  # MLPerf compliance tests run beside each performance test
    audit_rounds: int = AUDIT_ROUNDS  # turns of the baseline and each audit

    def check(self) -> None:
        """Raises UserError on the first value no scenario can run with."""
        unknown = [name for name in self.scenarios if name not in SCENARIOS]
        if unknown or not self.scenarios:
            raise UserError(f"unknown scenario {', '.join(unknown) or '(none)'}: choose from {', '.join(SCENARIOS)}, "
                            "or all")
        positive = {"--max-batch-size": min(self.batches), "--workers": self.workers, "--duration": self.duration_s,
                    "--samples-per-query": self.samples_per_query}
        for flag, value in positive.items():
            if not value > 0:
                raise UserError(f"{flag} must be above 0, got {value:g}")
        cores = os.cpu_count() or 1
        if self.workers > cores:
            raise UserError(f"--workers {self.workers} is more than this machine's {cores} cores: each worker is a "
                            "thread calling the model")
        ceilings = {"--duration": (self.duration_s, MAX_DURATION_S), "--min-queries": (self.min_queries, MAX_QUERIES),
                    "--samples-per-query": (self.samples_per_query, MAX_SAMPLES_PER_QUERY)}
        for flag, (value, ceiling) in ceilings.items():
            if value is not None and value > ceiling:
                raise UserError(f"{flag} must be at most {ceiling:g}, got {value:g}")
        optional = {"--latency-bound-ms": self.latency_bound_ms, "--expected-qps": self.expected_qps,
                    "--target-qps": min(self.target_qps) if self.target_qps else None,
                    "--min-queries": self.min_queries}
        for flag, value in optional.items():
            if value is not None and not (value > 0 and math.isfinite(value)):
                raise UserError(f"{flag} must be above 0, got {value:g}")
        if self.batch_timeout_ms < 0:
            raise UserError(f"--batch-timeout-ms must be 0 or above, got {self.batch_timeout_ms:g}")
        if self.find_max_qps and "server" not in self.scenarios:
            raise UserError("--find-max-qps searches the server scenario: add --scenario server")
        if not self.modes or set(self.modes) - set(MODES):
            raise UserError(f"--mode must be one of {', '.join(MODES)} or both, got {','.join(self.modes) or '(none)'}")
        if self.find_max_qps and self.target_qps:
            raise UserError("--find-max-qps finds the rate itself: leave out --target-qps")
        unknown = [name for name in self.audits if name not in AUDITS]
        if unknown:
            raise UserError(f"unknown audit {', '.join(unknown)}: choose from {', '.join(AUDITS)}, or all")
        if self.audits and self.modes != ("performance",):
            raise UserError("--audit runs its own accuracy and performance tests (the baseline and the audit in "
                            "turns): leave out --mode")
        if not 1 <= self.audit_rounds <= MAX_AUDIT_ROUNDS:
            raise UserError(f"--audit-rounds must be 1 to {MAX_AUDIT_ROUNDS}, got {self.audit_rounds}")
        if self.audits and self.find_max_qps:
            raise UserError("--audit checks tests at a fixed rate: leave out --find-max-qps (give --target-qps)")


@dataclass(frozen=True)
class Probe:
    """What the runtime's own one-image probe measured, which LoadGen's generation hints start from."""

    p50_ms: float
    min_ms: float
    images_per_second: float


@dataclass(frozen=True)
class Job:
    """One LoadGen test (or one --find-max-qps search) on one runtime; `settings` goes in the record."""

    scenario: str
    batch: int
    batch_timeout_ms: float
    workers: int
    duration_s: float
    min_queries: int | None
    latency_bound_ms: float | None = None
    target_qps: float | None = None
    samples_per_query: int | None = None
    expected_qps: float | None = None
    expected_latency_ms: float | None = None
    find_max_qps: bool = False
    start_qps: float | None = None  # the search's first rate: the probe's images/s
    probe_p50_ms: float | None = None  # no rate can be VALID when this is above the bound
    capacity_qps: float | None = None  # server: an upper bound of the SUT's rate, behind its query cap
    mode: str = "performance"  # or accuracy: every sample once, the responses in LoadGen's accuracy log
    mlperf_model: str = "resnet50"  # whose settings LoadGen's mlperf.conf gives (MLPERF_MODEL)
    audit: str = ""  # an audit's part: "baseline", "accuracy" or a test of AUDITS; "" an ordinary test
    turn: int = 0  # an audit's round (1, 2, ...)

    def query_cap(self, duration_s: float, min_queries: int | None) -> int | None:
        """A server test's most queries (LoadGen's max_query_count); None where LoadGen needs none."""
        if self.scenario != "server" or not self.capacity_qps or self.mode == "accuracy":
            return None  # an accuracy run issues each sample once: bounded already
        floor = 2 * (min_queries or LOADGEN_MIN_QUERIES)
        return max(floor, math.ceil(OVERLOAD_SPAN * duration_s * self.capacity_qps))

    @property
    def tag(self) -> str:
        """The job's folder name: scenario and the settings that tell its runs apart."""
        parts = [self.scenario, f"b{self.batch}"]
        if self.workers > 1:
            parts.append(f"w{self.workers}")
        if self.scenario == "server":
            parts.append("maxqps" if self.find_max_qps else f"qps{self.target_qps:g}")
        if self.scenario == "multi-stream":
            parts.append(f"spq{self.samples_per_query}")
        if self.mode == "accuracy" and not self.audit:
            parts.append("accuracy")
        tag = "-".join(parts)
        if not self.audit:
            return tag
        # MLCommons' layout: results/accuracy, results/performance/run_N, and a folder per test (run_verification.py)
        where = {"accuracy": "results/accuracy", "baseline": f"results/performance/run_{self.turn}"}
        return f"{tag}-audit/{where.get(self.audit, f'{self.audit}/run_{self.turn}')}"

    @property
    def audit_folder(self) -> str:
        """An audit's folder, holding MLCommons' layout (results/, TEST01/, ...); '' for an ordinary test."""
        return self.tag.split("/", 1)[0] if self.audit else ""


def mlperf_model(task: str, detector_format: str | None = None) -> str:
    """The MLPerf benchmark whose mlperf.conf settings and audit.config a run takes: for an Ultralytics YOLO export
    MLPerf's own `yolo` (Inference v6.0 on: mlperf.conf's yolo keys, compliance/TEST01/yolo), else the task's
    nearest (MLPERF_MODEL: a torchvision or Object Detection API detector stays RetinaNet's)."""
    from l40sbench.modelfile.detector_formats import YOLO_FORMATS

    return "yolo" if detector_format in YOLO_FORMATS else MLPERF_MODEL[task]


def jobs(config: LoadConfig, task: str, probe: Probe, detector_format: str | None = None) -> list[Job]:
    """Every test one runtime runs, in the order given, with each default filled in from `probe`; with audits, each
    performance test's audit after it: TEST01's accuracy run, then the baseline and each test in turns."""
    tests = _tests(config, task, probe, mlperf_model(task, detector_format))
    if not config.audits:
        return tests
    out = []
    for job in tests:
        out.append(job)
        if "TEST01" in config.audits:
            out.append(dataclasses.replace(job, mode="accuracy", audit="accuracy"))
        for turn in range(1, config.audit_rounds + 1):
            out += [dataclasses.replace(job, audit=part, turn=turn) for part in ("baseline", *config.audits)]
    return out


def _tests(config: LoadConfig, task: str, probe: Probe, model: str) -> list[Job]:
    out = []
    for scenario in config.scenarios:
        for batch in (1,) if scenario == "single-stream" else config.batches:  # one sample per query
            common = dict(scenario=scenario, batch=batch, batch_timeout_ms=config.batch_timeout_ms,
                          workers=config.workers, duration_s=config.duration_s, min_queries=config.min_queries,
                          mlperf_model=model)
            if scenario == "single-stream":
                out.append(Job(**common, expected_latency_ms=probe.min_ms / 2))
            elif scenario == "multi-stream":
                out.append(Job(**common, samples_per_query=config.samples_per_query,
                               expected_latency_ms=probe.min_ms / 4))
            elif scenario == "offline":
                # Samples for a little more than the duration: LoadGen calls a query that ends early INVALID.
                speedup = 2.0 if batch > 1 or config.workers > 1 else 1.5
                out.append(Job(**common, expected_qps=config.expected_qps or probe.images_per_second * speedup))
            else:
                bound = config.latency_bound_ms or LATENCY_BOUND_MS[task]
                capacity = probe.images_per_second * batch * config.workers
                if config.find_max_qps:
                    out.append(Job(**common, latency_bound_ms=bound, find_max_qps=True, capacity_qps=capacity,
                                   start_qps=probe.images_per_second, probe_p50_ms=probe.p50_ms))
                    continue
                for rate in config.target_qps or (round(probe.images_per_second / 2, 1),):
                    out.append(Job(**common, latency_bound_ms=bound, target_qps=rate, capacity_qps=capacity))
    if "accuracy" not in config.modes:
        return out
    # One accuracy run per scenario and batch (the rate does not change the answers); a search's at the probe's rate.
    accuracy = {(job.scenario, job.batch): dataclasses.replace(
        job, mode="accuracy", find_max_qps=False, target_qps=job.target_qps or job.start_qps, start_qps=None)
        for job in out}
    return (out if "performance" in config.modes else []) + list(accuracy.values())
