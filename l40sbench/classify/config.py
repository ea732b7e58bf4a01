"""The effective settings of one classification run."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from l40sbench.core.validate import require_at_least
from l40sbench.settings import (ARTICLE_BATCH_SIZE, ARTICLE_WARMUP, check_backend_settings, check_cluster_settings,
                                check_run_settings, check_runtime_settings)


@dataclass(frozen=True)
class ClassifyConfig:
    """Every setting of a run; `image_size` None means the base's own size.

    Raises:
      ValueError: a value out of range, naming it ("Received: epochs=-3").
    """

    base: str = "xception"
    data: Path | str | None = None  # a folder, or "tfds:NAME[:VERSION]"
    tfds_data_dir: Path | None = None
    tfds_splits: tuple[str, str] | None = None
    epochs: int = 10
    batch_size: int = ARTICLE_BATCH_SIZE
    image_size: int | None = None
    weights: str = "imagenet"
    fine_tune: str = "head"
    limit: int | None = None
    output_dir: Path | None = None
    seed: int = 0
    precision: str = "fp32"
    xla: bool = False
    strict: bool = False
    warmup: int = ARTICLE_WARMUP
    runtimes: tuple[str, ...] = ("tf",)
    runtime_precision: str = "fp32"
    devices: int = 1  # training replicas on this host (batch_size is per device); inference uses one
    devices_available: int | None = None  # devices configured in the process (a --devices list's largest)
    worker_hosts: tuple[str, ...] = ()  # MultiWorkerMirroredStrategy across these hosts; index 0 writes
    task_index: int = 0
    backend: str = "tensorflow"  # the Keras backend (l40sbench.backends); only tensorflow spreads over devices

    def __post_init__(self):
        require_at_least(self, ("epochs", "image_size", "devices", "devices_available"), 1)
        check_backend_settings(self)
        check_cluster_settings(self)
        if self.devices_available is not None and self.devices_available < self.devices:
            raise ValueError(f"devices_available must be at least devices ({self.devices}). "
                             f"Received: devices_available={self.devices_available}")
        check_run_settings(self)
        check_runtime_settings(self)
        if self.fine_tune not in ("head", "all") and not (self.fine_tune.isdigit()):
            raise ValueError(
                f"fine_tune must be 'head', 'all' or a number of top layers. Received: fine_tune={self.fine_tune!r}"
            )

    @property
    def trainable_top_layers(self) -> int | None:
        """None: base frozen; -1: whole base trainable; N: the top N layers."""
        if self.fine_tune == "head":
            return None
        if self.fine_tune == "all":
            return -1
        return int(self.fine_tune) or None

    def to_dict(self) -> dict:
        return {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(self).items()}
