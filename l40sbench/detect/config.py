"""The effective settings of one detection run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from l40sbench.runconfig import RunConfig

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

    def check(self) -> None:
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
