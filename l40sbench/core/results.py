"""The result records the suite writes, the contract reports read: a run of a task (RunResult) and a
synthetic sweep (SweepResult, with its rows).

Frozen dataclasses, at most two levels deep; every number carries its unit in
its name. `to_dict()` adds the schema version. core.schema derives its checks from these fields.

Longer than 300 lines because the schema is one contract: every block a record holds is declared here, side
by side, so core.schema and a reader of the records see all of it in one place.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from l40sbench.core.intervals import PERCENTILE_METHOD, describe
from l40sbench.core.records import SCHEMA
from l40sbench.core.stats import LatencyStats
from l40sbench.core.timing import EpochTimes


@dataclass(frozen=True)
class DatasetInfo:
    source: str
    train_images: int
    test_images: int
    classes: dict[str, dict[str, int]]
    skipped_files: tuple[str, ...] = ()


def rate_epoch_seconds(train: dict) -> float | None:
    """The epoch time a rate or a scaling is drawn from, of a record's `train` block: the steady epochs'
    mean (2..N), else the first epoch's, which holds tracing and compilation."""
    return train.get("steady_epoch_seconds") or train.get("first_epoch_seconds")


@dataclass(frozen=True)
class TrainResult:
    epochs: int
    batch_size: int
    epoch_seconds: tuple[float, ...]
    total_seconds: float
    first_epoch_seconds: float | None
    steady_epoch_seconds: float | None
    loss_per_epoch: tuple[float, ...] = ()
    # Scored on the test split after each epoch, outside the epoch clock (cost to accuracy reads it).
    test_metric: str = ""
    test_metric_per_epoch: tuple[float, ...] = ()
    # Wall time of the whole training, start to end: the epoch clocks plus what runs between
    # and around them (per-epoch scoring, callbacks, set-up). What a rented machine bills.
    wall_seconds: float | None = None
    # Wall time from the start of training to the end of each epoch, its scoring included
    # (cost to accuracy bills this up to the epoch that reached the target).
    wall_seconds_at_epoch: tuple[float, ...] = ()
    # n, mean, median, std and 95 % intervals of the steady epochs (2..N) (core.intervals)
    steady_epoch_interval: dict = field(default_factory=dict)
    # each epoch's test scoring, outside its clock, inside wall_seconds; not the studies' work (report.tables)
    scoring_seconds_per_epoch: tuple[float, ...] = ()
    # each step of the first epoch, where the task steps its own loop (detect): a one-epoch run's steady pace
    first_epoch_step_seconds: tuple[float, ...] = ()

    @property
    def rate_epoch_seconds(self) -> float | None:
        return rate_epoch_seconds(asdict(self))

    @classmethod
    def from_times(cls, times: EpochTimes, batch_size: int, losses=(), test_metric: str = "",
                   test_metric_per_epoch=(), wall_seconds: float | None = None,
                   wall_seconds_at_epoch=(), scoring_seconds_per_epoch=(),
                   first_epoch_step_seconds=()) -> TrainResult:
        return cls(
            epochs=len(times.epoch_seconds),
            batch_size=batch_size,
            epoch_seconds=times.epoch_seconds,
            total_seconds=times.total_seconds,
            first_epoch_seconds=times.first_epoch_seconds,
            steady_epoch_seconds=times.steady_epoch_seconds,
            loss_per_epoch=tuple(float(v) for v in losses),
            test_metric=test_metric,
            test_metric_per_epoch=tuple(float(v) for v in test_metric_per_epoch),
            wall_seconds=wall_seconds,
            wall_seconds_at_epoch=tuple(float(v) for v in wall_seconds_at_epoch),
            steady_epoch_interval=describe(times.epoch_seconds[1:]),
            scoring_seconds_per_epoch=tuple(float(v) for v in scoring_seconds_per_epoch),
            first_epoch_step_seconds=tuple(float(v) for v in first_epoch_step_seconds),
        )


@dataclass(frozen=True)
class InferenceResult:
    batch_size: int
    warmup_excluded: int
    images_timed: int
    mean_ms: float | None
    images_per_second: float | None
    p50_ms: float | None
    p90_ms: float | None
    p99_ms: float | None
    min_ms: float | None
    max_ms: float | None
    std_ms: float | None
    stages_mean_ms: dict = field(default_factory=dict)
    times_ms: tuple[float, ...] = ()  # every timed call, in order, warm-up excluded
    # n, mean, median, std and 95 % intervals of times_ms (core.intervals); how the percentiles are taken
    interval_ms: dict = field(default_factory=dict)
    percentiles: str = ""
    # One RuntimeResult per runtime timed (tf first, the figures above); empty when no other runtime was asked for.
    runtimes: tuple = ()
    # One ScenarioResult per (runtime, scenario, settings) that `infer --scenario` ran.
    scenarios: tuple = ()
    audits: tuple = ()  # MLPerf compliance tests (loadgen.audits): never results, never compared

    @classmethod
    def from_stats(
        cls, stats: LatencyStats, *, warmup: int, batch_size: int, stages_mean_ms: dict | None = None
    ) -> InferenceResult:
        return cls(
            batch_size=batch_size,
            warmup_excluded=warmup,
            images_timed=stats.count * batch_size,
            mean_ms=stats.mean_ms,
            images_per_second=stats.images_per_second,
            p50_ms=stats.p50_ms,
            p90_ms=stats.p90_ms,
            p99_ms=stats.p99_ms,
            min_ms=stats.min_ms,
            max_ms=stats.max_ms,
            std_ms=stats.std_ms,
            stages_mean_ms=dict(stages_mean_ms or {}),
            times_ms=stats.times_ms,
            interval_ms=describe(stats.times_ms),
            percentiles=PERCENTILE_METHOD,
        )


RUNTIME_STATUSES = ("ok", "accuracy-mismatch", "unsupported-precision", "not-installed", "export-failed", "failed")


@dataclass(frozen=True)
class RuntimeResult:
    """The fine-tuned model on one inference runtime: export, precision, latency, accuracy against tf.

    `status` is one of RUNTIME_STATUSES; `reason` is the first line of why it is not "ok". `precision` is what
    the runtime reported it computes in, which may differ from `precision_requested`; `device` where."""

    runtime: str
    status: str
    reason: str = ""
    version: str | None = None
    exporter: str = ""
    artifact: str = ""
    export_seconds: float | None = None
    size_mb: float | None = None
    precision_requested: str = ""
    precision: str = ""
    threads: int | None = None
    settings: dict = field(default_factory=dict)
    load_seconds: float | None = None
    inference: InferenceResult | None = None
    accuracy: dict = field(default_factory=dict)
    device: str = ""  # CPU or GPU ("" in records written before rows named it)


@dataclass(frozen=True)
class ScenarioResult:
    """The fine-tuned model on one runtime under one MLPerf LoadGen scenario, as LoadGen's summary states it.

    `result` is LoadGen's VALID or INVALID, `reasons` its constraints not met and recommendations; `mlperf`
    which of MLPerf's closed-division rules the test's settings meet (LoadGen's VALID is not MLPerf's).
    `settings` are the flags the test ran with (the defaults filled in); `sut` what the system under
    test did (calls by batch size, samples answered); `search` the --find-max-qps steps, when one ran.
    """

    runtime: str
    scenario: str
    result: str
    settings: dict
    reasons: tuple[str, ...] = ()
    precision_requested: str = ""
    precision: str = ""
    threads_per_worker: int | None = None
    samples_per_second: float | None = None
    scheduled_samples_per_second: float | None = None
    completed_samples_per_second: float | None = None
    headline: dict | None = None
    latency_ms: dict = field(default_factory=dict)
    early_stopping: dict = field(default_factory=dict)
    queries: int | None = None
    samples_per_query: int | None = None
    sut: dict = field(default_factory=dict)
    utilisation: dict = field(default_factory=dict)
    search: dict | None = None
    log_dir: str = ""
    loadgen_version: str | None = None
    wall_seconds: float | None = None
    mlperf: dict | None = None  # loadgen.rules.check: MLPerf's closed-division rules, each met or not
    mode: str = "performance"  # LoadGen's; accuracy: `accuracy` holds the log's score beside the probe's
    accuracy: dict | None = None
    mlperf_conf: dict | None = None  # loadgen.mlperf_conf.block: mlperf.conf's model, the suite's overrides, the seeds
    library: dict | None = None  # the query sample library: samples, (height, width), how made, its rate where not the rows'


@dataclass(frozen=True)
class RunResult:
    """One benchmark run. `complete` is False while running or after a stop."""

    task: str
    base: str
    complete: bool
    config: dict
    env: dict
    dataset: DatasetInfo
    train: TrainResult
    weights: str
    model: dict = field(default_factory=dict)
    inference: InferenceResult | None = None
    accuracy: dict = field(default_factory=dict)
    notes: dict = field(default_factory=dict)
    # achieved GFLOP/s over env.peak, training and inference (core.utilisation.run_utilisation)
    utilisation: dict = field(default_factory=dict)
    # where training ran: device count and kind, strategy, batch per device and global batch, replicas in sync
    devices: dict = field(default_factory=dict)
    # a --devices list: this count's epoch time against one device's (core.scaling)
    scaling: dict = field(default_factory=dict)
    # whether the machine held still while timed: verdict, reasons, the guard's bursts (core.stability)
    stability: dict = field(default_factory=dict)
    # what the device did in each timed phase: energy, power, clocks, throttling; or why energy is unavailable
    telemetry: dict = field(default_factory=dict)
    # from the command's start to the first training step, and its parts: billed on a rented machine too
    time_to_first_step: dict = field(default_factory=dict)
    # the run's peak memory so far, in core.memory's convention: peak_mb and what it counts
    memory: dict = field(default_factory=dict)
    # what bounds training: input alone, step alone and steady rates, the verdict, the sizing (core.bound)
    bound: dict = field(default_factory=dict)
    # the signal that stopped the run before its end (core.stops: SIGINT, SIGTERM, SIGHUP); None otherwise
    stopped_by: str | None = None

    def to_dict(self) -> dict:
        return {"schema": SCHEMA, **asdict(self)}


@dataclass(frozen=True)
class Row:
    """One configuration's result; every figure carries its unit in its name.

    `devices` is the total over all workers; `total_batch` = per_device_batch x
    devices (weak scaling: each device keeps its batch as devices are added);
    `scaling_efficiency` = images/s at N devices / (N x images/s at 1), filled
    in by the sweep when the 1-device row of the same model and batch exists.
    `utilisation` is achieved FLOP/s over the measured peak of the row's precision
    (env.peak; per device times the devices on a GPU, while the CPU's
    logical devices share one CPU); `utilisation_peak` names that peak.
    Figures are None unless status is "ok"; `error` is the first line of what
    stopped the configuration otherwise.
    """

    model: str
    mode: str
    precision: str
    xla: bool
    optimizer: str
    devices: int
    workers: int
    device_kind: str
    per_device_batch: int
    total_batch: int
    status: str
    warmup_steps: int = 0
    steps: int = 0
    images_per_second: float | None = None
    images_per_second_stderr: float | None = None
    step_ms_mean: float | None = None
    step_jitter_percent: float | None = None
    step_ms: tuple[float, ...] = ()  # every timed step, in order, warm-up excluded
    step_ms_interval: dict = field(default_factory=dict)  # their n, mean, median, std and 95 % intervals
    bursts: tuple[dict, ...] = ()  # the stability guard's matmul burst right after the steps (peak.burst)
    telemetry: dict = field(default_factory=dict)  # what the device did during the timed steps (core.telemetry)
    gflops_per_image: float | None = None
    achieved_tflops: float | None = None
    utilisation: float | None = None
    utilisation_peak: str | None = None
    peak_memory_mb: float | None = None
    scaling_efficiency: float | None = None
    seconds: float | None = None
    error: str | None = None
    extra: dict = field(default_factory=dict)
    backend: str = "tensorflow"  # rows written before backends were recorded ran on TensorFlow

    @property
    def key(self) -> tuple:
        """The Job.key this row answers (devices per worker, as the job counts them)."""
        return (self.model, self.per_device_batch, self.devices // max(self.workers, 1))

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> Row:
        return cls(**values)


@dataclass(frozen=True)
class SweepResult:
    """result.json of a sweep: the record family's fields plus `rows` (and `max_batch` with --find-max-batch)."""

    complete: bool
    config: dict
    env: dict
    rows: tuple[dict, ...]
    max_batch: tuple[dict, ...] = ()
    notes: dict = field(default_factory=dict)
    task: str = "synthetic"
    base: str = "sweep"
    stability: dict = field(default_factory=dict)  # every row's bursts and steps, throttled rows (core.stability)

    def to_dict(self) -> dict:
        return {"schema": SCHEMA, **asdict(self)}
