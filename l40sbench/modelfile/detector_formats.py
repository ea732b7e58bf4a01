"""Which detector format an ONNX file's outputs are, told by the file itself; --detector-format overrides the guess
(and names a YOLO head that carries no Ultralytics metadata).

- od-api: the Object Detection API's serving outputs (detection_boxes, detection_scores, detection_classes,
  num_detections), by name (modelfile.detector).
- yolo: an Ultralytics export's raw head, one output (1, 4 + classes, anchors) (runtimes.yolo.decode_raw).
- yolo-end2end: an Ultralytics end-to-end head, one output (1, K, 6), NMS inside (YOLO26, `nms=True` exports).
- torchvision: three outputs, boxes (N, 4), labels (N) and scores (N), as torch.onnx.export of a torchvision
  detector writes them.

An Ultralytics file says what it is in its metadata (`author: Ultralytics`, `task`, `names`, `imgsz`): a
segmentation, pose or oriented-box export is refused in one line, a classification export is left to the
classifier's path.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from l40sbench.errors import UserError

FORMATS = ("od-api", "yolo", "yolo-end2end", "torchvision")
YOLO_FORMATS = ("yolo", "yolo-end2end")  # Ultralytics' exports: MLPerf's `yolo` benchmark (Inference v6.0 on)
TRIPLE = ("boxes", "labels", "scores")
NOT_DETECT = {"segment": "segmentation", "pose": "pose", "obb": "oriented-box"}
TAKES = ("the suite takes detectors (the Object Detection API's outputs, Ultralytics' `task: detect` exports, "
         "torchvision's boxes, labels and scores) and classifiers")


@dataclass(frozen=True)
class Output:
    """One graph output: its name and dimensions (an int where fixed, else its symbol or None)."""

    name: str
    dims: tuple


@dataclass(frozen=True)
class Ultralytics:
    """What an Ultralytics export says of itself in its metadata."""

    task: str
    names: dict[int, str] | None
    imgsz: int | None
    end2end: bool | None


def _literal(metadata: dict, key: str, where: str):
    try:
        return ast.literal_eval(metadata[key])
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise UserError(f"{where}: its Ultralytics metadata `{key}` does not parse: {metadata[key][:80]!r}") from None


def ultralytics(metadata: dict[str, str], where: str) -> Ultralytics | None:
    """The Ultralytics facts of a file's metadata (ONNX metadata_props), or None where it is not Ultralytics'.

    Raises:
      UserError: `names` or `imgsz` that do not parse, or a non-square `imgsz`.
    """
    if not metadata.get("author", "").startswith("Ultralytics") and "task" not in metadata:
        return None
    names = None
    if "names" in metadata:
        parsed = _literal(metadata, "names", where)
        if isinstance(parsed, list | tuple):
            parsed = dict(enumerate(parsed))
        if not isinstance(parsed, dict) or not parsed or not all(
                isinstance(k, int) and isinstance(v, str) for k, v in parsed.items()):
            raise UserError(f"{where}: its Ultralytics metadata `names` is not {{id: 'name', ...}}: "
                            f"{metadata['names'][:80]!r}")
        names = dict(sorted(parsed.items()))
    imgsz = None
    if "imgsz" in metadata:
        parsed = _literal(metadata, "imgsz", where)
        sides = [parsed] * 2 if isinstance(parsed, int) else list(parsed) if isinstance(parsed, list | tuple) else []
        if len(sides) != 2 or not all(isinstance(s, int) and s > 0 for s in sides):
            raise UserError(f"{where}: its Ultralytics metadata `imgsz` is not a size: {metadata['imgsz'][:80]!r}")
        if sides[0] != sides[1]:
            raise UserError(f"{where}: exported at imgsz {sides[0]}x{sides[1]}; the suite letterboxes to a square "
                            "(export with one imgsz)")
        imgsz = sides[0]
    end2end = {"True": True, "False": False}.get(metadata.get("end2end", ""))
    if _exported_with_nms(metadata):  # Ultralytics' own rule: end2end, or an export with nms=True (its `args`)
        end2end = True
    return Ultralytics(metadata.get("task", "detect"), names, imgsz, end2end)


def _exported_with_nms(metadata: dict[str, str]) -> bool:
    """Whether the export's `args` say nms=True: NMS put inside the file, a (1, K, 6) head, though its model's
    `end2end` metadata says False (`yolo export nms=True` of a YOLO11). Unreadable `args`: not known, False."""
    try:
        args = ast.literal_eval(metadata.get("args", "{}"))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False
    return isinstance(args, dict) and args.get("nms") is True


def _shapes(outputs: list[Output]) -> str:
    return ", ".join(f"{o.name} {tuple(o.dims)}" for o in outputs)


def _fits(name: str, outputs: list[Output]) -> bool:
    if name == "od-api":
        from l40sbench.modelfile import detector

        return detector.is_detector(o.name for o in outputs)
    if name == "torchvision":
        if len(outputs) != 3:
            return False
        if {o.name for o in outputs} == set(TRIPLE):
            return True
        ranks = sorted((len(o.dims), o.dims[-1] if o.dims else None) for o in outputs)
        return ranks[0][0] == 1 and ranks[1][0] == 1 and ranks[2] == (2, 4)
    if len(outputs) != 1 or len(outputs[0].dims) != 3:
        return False
    dims = outputs[0].dims
    if name == "yolo-end2end":
        return dims[2] == 6
    return isinstance(dims[1], int) and dims[1] > 4  # yolo


def decide(outputs: list[Output], facts: Ultralytics | None, asked: str | None, where: str) -> str | None:
    """The file's detector format, or None: not a detector (a classifier's path).

    Raises:
      UserError: an Ultralytics export of another task; --detector-format the outputs do not fit; an
        Ultralytics detect export whose outputs fit no format; an end-to-end head of K = 0.
    """
    if facts is not None and facts.task in NOT_DETECT:
        raise UserError(f"{where}: an Ultralytics {NOT_DETECT[facts.task]} export (task: {facts.task}); {TAKES}")
    if asked is not None:
        if asked not in FORMATS:
            raise UserError(f"--detector-format {asked}: one of {', '.join(FORMATS)}")
        if not _fits(asked, outputs):
            raise UserError(f"--detector-format {asked}: {where}'s outputs are {_shapes(outputs)}; {_expected(asked)}")
        chosen = asked
    elif facts is not None and facts.task == "classify":
        return None
    else:
        fitting = [name for name in FORMATS if _fits(name, outputs)]
        if facts is None:  # a YOLO head is told by Ultralytics' metadata (else any rank-3 output would pass)
            fitting = [name for name in fitting if not name.startswith("yolo")]
        else:  # an Ultralytics detect export: its own heads only
            fitting = [name for name in fitting if name.startswith("yolo")]
            if len(fitting) == 2:  # (1, 4 + classes, 6 anchors) or (1, K, 6): the metadata tells them apart
                if facts.end2end is not None:
                    fitting = ["yolo-end2end" if facts.end2end else "yolo"]
                elif facts.names is not None:
                    fitting = ["yolo" if outputs[0].dims[1] == 4 + len(facts.names) else "yolo-end2end"]
                else:
                    fitting = ["yolo-end2end"]
            if not fitting:
                raise UserError(f"{where}: an Ultralytics detect export whose outputs are {_shapes(outputs)}; "
                                f"{_expected('yolo')}, or {_expected('yolo-end2end')}")
        if not fitting:
            return None
        chosen = fitting[0]
    if chosen == "yolo-end2end" and outputs[0].dims[1] == 0:
        raise UserError(f"{where}: an end-to-end head of no rows ({_shapes(outputs)}): it can answer no detection")
    if chosen == "yolo" and facts is not None and facts.names is not None and outputs[0].dims[1] - 4 != len(facts.names):
        raise UserError(f"{where}: its head holds {outputs[0].dims[1] - 4} class scores and its `names` "
                        f"{len(facts.names)} classes")
    return chosen


def _expected(name: str) -> str:
    from l40sbench.modelfile.detector import OUTPUTS

    return {"od-api": f"the Object Detection API's are named {', '.join(OUTPUTS)}",
            "yolo": "a YOLO raw head is one output (1, 4 + classes, anchors)",
            "yolo-end2end": "a YOLO end-to-end head is one output (1, K, 6)",
            "torchvision": "torchvision's are three outputs: boxes (N, 4), labels (N), scores (N)"}[name]
