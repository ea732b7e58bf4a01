"""The effective settings of one detection run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from l40sbench.errors import UserError
from l40sbench.runconfig import RunConfig
from l40sbench.settings import check_cluster_settings

ARTICLE_EPOCHS = 200
MAX_IMAGE_SIZE = 2048  # a 2048 px detector already takes tens of GB to train; larger is a typo


@dataclass(frozen=True)
class DetectConfig(RunConfig):
    """Every setting of a detection run; `epochs` None means the article's 200
    with a GPU and 1 (with a projection) without.

    Raises:
      ValueError: a value out of range, naming it ("Received: epochs=-3").
    """

    base: str = "ssd_resnet50_fpn"
    image_size: int = 640
    init_checkpoint: str | None = None
    classes: tuple[str, ...] | None = None
    score_threshold: float = 0.05
    export: Path | None = None
    xla: bool = False  # the training step compiled with XLA (jit_compile); inference stays the serving signature
    worker_hosts: tuple[str, ...] = ()  # MultiWorkerMirroredStrategy across these hosts; index 0 writes
    task_index: int = 0

    def check(self) -> None:
        check_cluster_settings(self)
        if self.xla and (self.devices > 1 or (self.devices_available or 1) > 1 or self.worker_hosts):
            raise ValueError("xla compiles the training step on one device: the optimizer Model Garden builds "
                             "(TF-Keras' legacy SGD) sums the replicas' gradients in a way XLA does not compile. "
                             f"Received: xla=True with devices={max(self.devices, self.devices_available or 1)}"
                             + (f" on {len(self.worker_hosts)} hosts" if self.worker_hosts else ""))
        if not 64 <= self.image_size <= MAX_IMAGE_SIZE or self.image_size % 32:
            raise ValueError(f"image_size must be a multiple of 32 from 64 to {MAX_IMAGE_SIZE}. "
                             f"Received: image_size={self.image_size}")
        if not 0.0 <= self.score_threshold < 1.0:
            raise ValueError(f"score_threshold must be in [0, 1). Received: score_threshold={self.score_threshold}")
        if self.classes is not None and (len(self.classes) == 0 or len(set(self.classes)) != len(self.classes)):
            raise ValueError(f"classes must be distinct names. Received: classes={list(self.classes)}")

    def to_dict(self) -> dict:
        out = super().to_dict()
        out["classes"] = list(self.classes) if self.classes is not None else None
        return out


def check_paths(config: DetectConfig) -> None:
    """The run's own paths, before anything is loaded: the checkpoint exists, the export folder can be made."""
    _check_checkpoint(config.init_checkpoint)
    _check_export_dir(config.export)


def _check_checkpoint(path: str | None) -> None:
    if path is None:
        return
    # A TF checkpoint is a directory, a file, or a prefix whose .index file exists.
    if not (Path(path).exists() or Path(f"{path}.index").exists()):
        raise UserError(f"init checkpoint not found: {path}")


def _check_export_dir(path: Path | None) -> None:
    """An export goes to a new or empty directory that can be made now, before any training."""
    if path is None:
        return
    if path.exists() and not (path.is_dir() and not any(path.iterdir())):
        raise UserError(f"export directory must be new or empty: {path}")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot create export directory {path}: {exc.strerror}") from None
