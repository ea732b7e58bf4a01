"""The effective settings of one detection run."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from l40sbench.core.validate import require_at_least
from l40sbench.settings import ARTICLE_BATCH_SIZE, ARTICLE_WARMUP, check_run_settings, check_runtime_settings

ARTICLE_EPOCHS = 200
MAX_IMAGE_SIZE = 2048  # a 2048 px detector already takes tens of GB to train; larger is a typo


@dataclass(frozen=True)
class DetectConfig:
    """Every setting of a detection run; `epochs` None means the article's 200
    with a GPU and 1 (with a projection) without.

    Raises:
      ValueError: a value out of range, naming it ("Received: epochs=-3").
    """

    base: str = "ssd_resnet50_fpn"
    data: Path | str | None = None  # a folder, or "tfds:NAME[:VERSION]"
    tfds_data_dir: Path | None = None
    tfds_splits: tuple[str, str] | None = None
    epochs: int | None = None
    batch_size: int = ARTICLE_BATCH_SIZE
    image_size: int = 640
    init_checkpoint: str | None = None
    classes: tuple[str, ...] | None = None
    limit: int | None = None
    output_dir: Path | None = None
    seed: int = 0
    score_threshold: float = 0.05
    precision: str = "fp32"
    warmup: int = ARTICLE_WARMUP
    export: Path | None = None
    strict: bool = False
    runtimes: tuple[str, ...] = ("tf",)
    runtime_precision: str = "fp32"
    devices: int = 1  # training replicas (batch_size is per device); inference uses one
    devices_available: int | None = None  # devices configured in the process (a --devices list's largest)

    def __post_init__(self):
        require_at_least(self, ("epochs", "devices", "devices_available"), 1)
        check_run_settings(self)
        check_runtime_settings(self)
        if not 64 <= self.image_size <= MAX_IMAGE_SIZE or self.image_size % 32:
            raise ValueError(f"image_size must be a multiple of 32 from 64 to {MAX_IMAGE_SIZE}. "
                             f"Received: image_size={self.image_size}")
        if not 0.0 <= self.score_threshold < 1.0:
            raise ValueError(f"score_threshold must be in [0, 1). Received: score_threshold={self.score_threshold}")
        if self.classes is not None and (len(self.classes) == 0 or len(set(self.classes)) != len(self.classes)):
            raise ValueError(f"classes must be distinct names. Received: classes={list(self.classes)}")

    def to_dict(self) -> dict:
        out = {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(self).items()}
        out["classes"] = list(self.classes) if self.classes is not None else None
        return out
