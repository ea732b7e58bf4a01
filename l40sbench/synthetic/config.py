"""The settings of one synthetic sweep."""

from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass
from pathlib import Path

from l40sbench.settings import check_cluster_settings
from l40sbench.synthetic.job import Job, StepSettings

# The study's per-GPU batch sizes (its "Taille de lot" rows) and GPU counts.
STUDY_BATCH_SIZES = (32, 64, 128, 256, 512)
DEFAULT_DEVICES = (1,)
MAX_DEVICES = 4096  # more than any machine or cluster this runs on; far larger values overflow TensorFlow's ints
MAX_BATCH = 1 << 20


@dataclass(frozen=True)
class SweepConfig:
    """Every setting of a sweep. Sizes are per device; a run is models x batch_sizes x devices.

    Raises:
      ValueError: a value out of range, naming it ("Received: steps=0").
    """

    models: tuple[str, ...]
    batch_sizes: tuple[int, ...] = STUDY_BATCH_SIZES
    devices: tuple[int, ...] = DEFAULT_DEVICES
    settings: StepSettings = StepSettings()
    timeout_s: float | None = None
    find_max_batch: bool = False
    worker_hosts: tuple[str, ...] = ()
    task_index: int = 0
    output_dir: Path | None = None

    def __post_init__(self):
        from l40sbench.synthetic.models import MODELS

        for name in self.models:
            MODELS.get(name)  # UserError naming the choices
        if not self.models or not self.batch_sizes or not self.devices:
            raise ValueError("models, batch sizes and devices each need at least one value")
        for field_name, most in (("batch_sizes", MAX_BATCH), ("devices", MAX_DEVICES)):
            values = getattr(self, field_name)
            for value in values:
                if not 1 <= value <= most:
                    raise ValueError(f"{field_name} must all be between 1 and {most}. Received: {field_name}={value}")
        for field_name in ("models", "batch_sizes", "devices"):
            values = getattr(self, field_name)
            if len(set(values)) != len(values):  # sweep.json edited by hand; the CLI refuses repeats itself
                raise ValueError(f"{field_name} must not repeat a value. Received: {field_name}={list(values)}")
        if self.timeout_s is not None and not 0 < self.timeout_s < float("inf"):
            raise ValueError(f"timeout_s must be > 0 and finite. Received: timeout_s={self.timeout_s}")
        check_cluster_settings(self)
        backend = self.settings.backend
        if backend == "torch" and max(self.devices) > 1:
            raise ValueError("Keras on torch runs the sweep on one device (jax and tensorflow spread over several). "
                             f"Received: devices={list(self.devices)}")
        if backend != "tensorflow" and self.worker_hosts:
            raise ValueError(f"a sweep across hosts runs on the tensorflow backend (MultiWorkerMirroredStrategy), "
                             f"not {backend}. Received: worker_hosts={list(self.worker_hosts)}")

    @property
    def is_chief(self) -> bool:
        return self.task_index == 0

    def job(self, model: str, batch: int, devices: int, **overrides) -> Job:
        """One configuration; overrides replace step settings (a --find-max-batch probe takes fewer steps)."""
        return Job(model, batch, devices, dataclasses.replace(self.settings, **overrides))

    def plan(self) -> list[Job]:
        """Every configuration, device count by device count as the study's tables go."""
        return [self.job(m, b, d) for d in self.devices for m in self.models for b in self.batch_sizes]

    def to_dict(self) -> dict:
        return {k: (str(v) if isinstance(v, Path) else list(v) if isinstance(v, tuple) else v)
                for k, v in asdict(self).items()}  # asdict makes settings a dict

    @classmethod
    def from_dict(cls, values: dict) -> SweepConfig:
        values = {**values, "settings": StepSettings(**values.get("settings", {}))}
        for name in ("models", "batch_sizes", "devices", "worker_hosts"):
            values[name] = tuple(values.get(name) or ())
        if values.get("output_dir") is not None:
            values["output_dir"] = Path(values["output_dir"])
        return cls(**values)
