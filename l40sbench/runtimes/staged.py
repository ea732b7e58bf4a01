"""A detector file's call with the host stages its format needs around the runtime's: preprocess (Ultralytics'
letterbox), the model, postprocess (decode, NMS, boxes back to the image): one timed call, as an Ultralytics user
serves it, each stage's own time kept beside it (Ultralytics prints preprocess / inference / postprocess).

The call takes an original decoded image, uint8 [1, H, W, 3], and answers the Object Detection API's serving
outputs (runtimes.yolo.serving_outputs), so every scorer and LoadGen response of the suite reads it unchanged.
Made in whichever process times the file (the reference probe, a runtime's child, LoadGen's SUT), from a
`Decoding` sent as a dict.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from l40sbench.runtimes import yolo
from l40sbench.runtimes.forward import LoadedModel

STAGES = ("preprocess", "inference", "postprocess")


@dataclass(frozen=True)
class Decoding:
    """How a detector file's input is made and its outputs read.

    Attributes:
      format: yolo, yolo-end2end or torchvision (modelfile.detector_formats).
      imgsz: the square the image is letterboxed to (the yolo formats); None: fed at its own size.
      conf, iou, max_det: the decode's thresholds (Ultralytics' validation defaults).
    """

    format: str
    imgsz: int | None = None
    conf: float = yolo.CONF
    iou: float = yolo.IOU
    max_det: int = yolo.MAX_DET

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Decoding:
        return cls(**data)


@dataclass
class StageClock:
    """Each call's stage times in seconds, in call order."""

    seconds: list[dict] = field(default_factory=list)

    def means_ms(self, skip: int = 0) -> dict[str, float]:
        """Each stage's mean over the calls after the first `skip` (the warm-up)."""
        kept = self.seconds[skip:] or self.seconds
        return {stage: 1000 * float(np.mean([call[stage] for call in kept])) for stage in STAGES} if kept else {}


def _read(decoding: Decoding, outputs: dict) -> yolo.Detections:
    values = list(outputs.values())
    if decoding.format == "yolo":
        return yolo.decode_raw(values[0], decoding.conf, decoding.iou, decoding.max_det)
    if decoding.format == "yolo-end2end":
        return yolo.decode_end2end(values[0], decoding.conf, decoding.max_det)
    by_name = {name: outputs[name] for name in ("boxes", "labels", "scores") if name in outputs}
    if len(by_name) < 3:  # named otherwise: told apart by shape and type
        by_name["boxes"] = next(v for v in values if np.ndim(v) == 2)
        singles = [v for v in values if np.ndim(v) == 1]
        by_name["labels"] = next(v for v in singles if np.issubdtype(np.asarray(v).dtype, np.integer))
        by_name["scores"] = next(v for v in singles if np.issubdtype(np.asarray(v).dtype, np.floating))
    return yolo.decode_triple(by_name["boxes"], by_name["labels"], by_name["scores"], decoding.conf,
                              decoding.max_det)


def staged(loaded: LoadedModel, decoding: Decoding, clock: StageClock | None = None) -> LoadedModel:
    """`loaded` with its format's preprocess before the call and postprocess after, each stage's time appended to
    `clock`; its settings name the stages."""
    clock = clock if clock is not None else StageClock()

    def call(image: np.ndarray) -> dict:
        started = time.perf_counter()
        original = np.asarray(image)[0]
        if decoding.imgsz is not None:
            fed, where = yolo.letterbox(original, decoding.imgsz)
            fed = fed[None]
        else:
            fed, where = image, None
        prepared = time.perf_counter()
        outputs = loaded.call(fed)
        inferred = time.perf_counter()
        found = _read(decoding, outputs)
        if where is not None:
            found = replace(found, boxes=where.to_original(found.boxes).astype(np.float32))
        answer = yolo.serving_outputs([found], [original.shape[:2]], decoding.max_det)
        clock.seconds.append({"preprocess": prepared - started, "inference": inferred - prepared,
                              "postprocess": time.perf_counter() - inferred})
        return answer

    preprocess = (f"letterbox to {decoding.imgsz} (pad {yolo.PAD_VALUE}), RGB 0-1" if decoding.imgsz is not None
                  else "the image at its own size, RGB 0-1 (the model resizes it)")
    postprocess = {"yolo": f"decode, class-aware NMS (conf {decoding.conf}, IoU {decoding.iou}, max_det "
                           f"{decoding.max_det}), boxes back to the image",
                   "yolo-end2end": f"rows above conf {decoding.conf} (NMS inside the model), boxes back to the image",
                   "torchvision": f"detections above conf {decoding.conf}, best {decoding.max_det}"}[decoding.format]
    settings = {**loaded.settings, "detector_format": decoding.format, "preprocess": preprocess,
                "postprocess": postprocess}
    return replace(loaded, call=call, settings=settings)
