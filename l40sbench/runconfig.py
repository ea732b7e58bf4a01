"""The settings every task's run shares: one frozen base that classify's and detect's configs extend.

A task's config adds only its own fields and checks (`check`); the fields here, their checks and the
way a config is read back from a record (`from_record`) are the same for every task.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from l40sbench.core.validate import require_at_least
from l40sbench.settings import ARTICLE_BATCH_SIZE, ARTICLE_WARMUP, check_run_settings, check_runtime_settings

PATH_FIELDS = ("output_dir", "tfds_data_dir", "export", "model")


@dataclass(frozen=True)
class RunConfig:
    """The fields every run has. A task's config redeclares a field to change its default.

    Raises:
      ValueError: a value out of range, naming it ("Received: epochs=-3").
    """

    base: str = ""
    data: Path | str | None = None  # a folder, or "tfds:NAME[:VERSION]"
    tfds_data_dir: Path | None = None
    tfds_splits: tuple[str, str] | None = None
    epochs: int | None = None
    batch_size: int = ARTICLE_BATCH_SIZE
    image_size: int | None = None
    limit: int | None = None
    output_dir: Path | None = None
    seed: int = 0
    precision: str = "fp32"
    strict: bool = False
    warmup: int = ARTICLE_WARMUP
    runtimes: tuple[str, ...] = ("tf",)
    runtime_precision: str = "fp32"
    devices: int = 1  # training replicas on this host (batch_size is per device); inference uses one
    devices_available: int | None = None  # devices configured in the process (a --devices list's largest)
    input_threads: int | None = None  # the training input pipeline's threads (None: its own default)
    bound: bool = True  # time the input alone and the step alone after training (the record's `bound` block)

    # Not fields here (a task's config that has them declares them): one host, the tensorflow backend.
    worker_hosts = ()
    task_index = 0
    backend = "tensorflow"

    def __post_init__(self):
        require_at_least(self, ("epochs", "devices", "devices_available", "input_threads"), 1)
        self.check()
        if self.devices_available is not None and self.devices_available < self.devices:
            raise ValueError(f"devices_available must be at least devices ({self.devices}). "
                             f"Received: devices_available={self.devices_available}")
        check_run_settings(self)
        check_runtime_settings(self)

    def check(self) -> None:
        """The task's own checks, run before the shared ones.

        Raises:
          ValueError: naming the field and the value received.
        """

    def to_dict(self) -> dict:
        """The record's `config`: every field, folders as strings."""
        return {k: (str(v) if isinstance(v, Path) else v) for k, v in dataclasses.asdict(self).items()}

    @classmethod
    def from_record(cls, values: dict):
        """The config rebuilt from the `config` a record holds (lists back to tuples, folders back to paths).

        Raises:
          UserError: the record's settings are not valid for this config.
        """
        from l40sbench.errors import UserError

        fields = {field.name for field in dataclasses.fields(cls)}
        kept = {}
        for key, value in values.items():
            if key not in fields:
                continue
            if isinstance(value, list):
                value = tuple(value)
            if key in PATH_FIELDS and value is not None:
                value = Path(value)
            if key == "data" and value is not None and not str(value).startswith("tfds:"):
                value = Path(value)
            kept[key] = value
        try:
            return cls(**kept)
        except (TypeError, ValueError) as exc:
            raise UserError(f"the run's settings cannot be read back: {exc}") from None
