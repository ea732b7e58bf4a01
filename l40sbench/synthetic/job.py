"""One configuration of a sweep, as the parent hands it to a child process and the row it gets back.

Pure data: no framework import, so the parent, the tables and the tests read
it without TensorFlow.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from l40sbench.core.results import Row

MODES = ("train", "inference")
OPTIMIZERS = ("sgd", "momentum", "adam")
STATUSES = ("ok", "oom", "error", "timeout")
# Training a step costs about three forward passes (forward, then the gradients with
# respect to activations and to weights), the convention MLPerf and model-FLOPs
# utilisation figures use.
TRAIN_FLOPS_PER_FORWARD = 3


@dataclass(frozen=True)
class StepSettings:
    """How every configuration of a sweep steps: the same for all its models, batches and device counts.

    Raises:
      ValueError: a value out of range, naming it ("Received: steps=0").
    """

    mode: str = "train"
    precision: str = "fp32"
    xla: bool = False
    optimizer: str = "sgd"
    warmup_steps: int = 10
    steps: int = 100
    memory_limit_gb: float | None = None
    backend: str = "tensorflow"  # the Keras backend the child computes on (l40sbench.backends)

    def __post_init__(self):
        from l40sbench.backends import NAMES
        from l40sbench.core.validate import require_at_least, require_one_of
        from l40sbench.settings import PRECISIONS

        # At least one warm-up step: the first step traces and compiles, and must not be timed.
        require_at_least(self, ("steps", "warmup_steps"), 1)
        require_one_of(self, "mode", MODES)
        require_one_of(self, "precision", PRECISIONS)
        require_one_of(self, "optimizer", OPTIMIZERS)
        require_one_of(self, "backend", NAMES)
        if self.backend != "tensorflow" and self.precision == "mixed_float16":
            raise ValueError("mixed_float16 needs loss scaling, which the sweep does on the tensorflow backend only; "
                             f"use mixed_bfloat16 on {self.backend}. Received: precision=mixed_float16")
        if self.memory_limit_gb is not None and not 0 < self.memory_limit_gb < float("inf"):
            raise ValueError(f"memory_limit_gb must be > 0 and finite. Received: memory_limit_gb={self.memory_limit_gb}")


@dataclass(frozen=True)
class Job:
    """What one child process measures."""

    model: str
    per_device_batch: int
    devices: int
    settings: StepSettings = StepSettings()
    gflops_per_image: float | None = None  # forward; counted by the child when None

    @property
    def key(self) -> tuple:
        """What makes two rows the same configuration (a resumed sweep skips rows with a known key)."""
        return (self.model, self.per_device_batch, self.devices)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> Job:
        return cls(**{**values, "settings": StepSettings(**values.get("settings", {}))})


def failed_row(job: Job, status: str, error: str, *, device_kind: str, workers: int = 1,
               seconds: float | None = None) -> Row:
    """The row of a configuration that did not finish (oom, error, timeout)."""
    settings = job.settings
    return Row(
        model=job.model, mode=settings.mode, precision=settings.precision, xla=settings.xla,
        optimizer=settings.optimizer, devices=job.devices * workers, workers=workers, device_kind=device_kind,
        per_device_batch=job.per_device_batch, total_batch=job.per_device_batch * job.devices * workers,
        status=status, warmup_steps=settings.warmup_steps, steps=settings.steps,
        gflops_per_image=job.gflops_per_image, seconds=seconds, error=error, backend=settings.backend,
    )


def flops_per_image(gflops_forward: float, mode: str) -> float:
    """GFLOP one image costs in this mode (3 forward passes when training)."""
    return gflops_forward * (TRAIN_FLOPS_PER_FORWARD if mode == "train" else 1)


# tf_cnn_benchmarks reports over windows of steps (display_every 10): a sync after every step would keep the
# host's dispatch of the next step from overlapping the device's work on this one, understating a
# configuration whose step takes 1-3 ms on a GPU. Up to 10 steps a window, and 5 windows where steps allow.
WINDOW_STEPS = 10


def window_steps(steps: int) -> int:
    """Steps per timed window for `steps` timed steps: up to WINDOW_STEPS, keeping five windows or more."""
    return max(1, min(WINDOW_STEPS, steps // 5))
