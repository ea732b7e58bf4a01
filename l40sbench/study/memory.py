"""How much memory a study's training step will hold at its peak, estimated before it runs, and whether that
fits the device it will run on. Pure: no model is built, no framework imported.

    peak = base(task) + state(model) + copies(task) x data + batch x (size / study size)^2 x activations(model)

- base: what the process holds before the model: the framework, its pools, the interpreter (on a CPU the
  whole resident set counts; on a GPU the allocator counts only tensors, so it is left out);
- state: the weights, 4 bytes a parameter, and for each trainable one its gradient and the optimizer's slots
  (classify: Adam, two; detect: SGD with momentum, one);
- data: the task's images at its size as uint8, times the copies its pipeline holds: classify's loader stacks
  both splits once (1, fixed); detect streams TFRecords, yet a whole epoch holds more than its first steps do
  (its input pipeline's buffers), fitted as copies;
- activations: what one image at the study's size keeps at the step's peak, scaled by its pixels.

base, detect's copies and activations are fitted by least squares to measured peaks of the study's own commands over a
whole epoch at two batch sizes each (benchmarks/calibration/memory_peaks.py writes memory_fit.json beside this module);
its check runs, at batch sizes the fit did not see, are in docs/study.md. The fit is a CPU's (the process's resident set); on a GPU
the same state and activations are assumed, which no GPU run has checked yet.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

FIT_FILE = Path(__file__).with_name("memory_fit.json")
SLOTS = {"classify": 3, "detect": 2}  # per trainable parameter: the gradient and the optimizer's slots
COPIES = {"classify": 1.0}  # the uint8 copies a task's loader holds, where known; fitted for the others
MARGIN = 1.25  # the estimates' error bound: a step starts only where its estimate x MARGIN fits
MB = 2**20


@lru_cache(maxsize=1)
def committed() -> dict:
    """The fitted constants (memory_fit.json): per task its base and data copies, per model its parameters and
    activations."""
    return json.loads(FIT_FILE.read_text())


def state_mb(task: str, parameters: int, trainable: int) -> float:
    return 4 * (parameters + SLOTS[task] * trainable) / MB


def data_mb(images: int, size: int) -> float:
    """A task's images as uint8 at `size`, once."""
    return images * size * size * 3 / MB


def estimate_mb(model: str, batch: int, size: int, gpu: bool, *, images: int, constants: dict | None = None) -> float:
    """The step's estimated peak, MiB (gpu: the device's, without the host process's base and data)."""
    fitted = constants or committed()
    one = fitted["models"][model]
    task = one["task"]
    host = 0.0 if gpu else fitted["base_mb"][task] + fitted["copies"][task] * data_mb(images, size)
    return (host + state_mb(task, one["parameters"], one["trainable_parameters"])
            + batch * (size / one["size"]) ** 2 * one["activations_mb"])


def _trainable(row: dict) -> int:
    """A run's trainable parameters; a detector's record counts none apart: Model Garden trains every variable."""
    return row["parameters"] if row.get("trainable_parameters") is None else row["trainable_parameters"]


def fit(rows: list[dict]) -> dict:
    """Constants from measured runs (rows: model, task, batch, size, images, peak_mb, parameters,
    trainable_parameters): per task one least-squares fit of peak - state over a base, the data's copies (where
    COPIES does not fix them) and one activation slope per model."""
    import numpy as np

    rows = [{**row, "trainable_parameters": _trainable(row)} for row in rows]
    models: dict[str, dict] = {}
    for row in rows:  # a model's first row is at its study size
        models.setdefault(row["model"], {"task": row["task"], "size": row["size"], "parameters": row["parameters"],
                                         "trainable_parameters": row["trainable_parameters"]})
    base, copies = {}, {}
    for task in dict.fromkeys(row["task"] for row in rows):
        own = [row for row in rows if row["task"] == task]
        names = list(dict.fromkeys(row["model"] for row in own))
        data = [data_mb(row["images"], row["size"]) for row in own]
        fixed = COPIES.get(task)
        columns = [[1.0] * len(own)] + ([] if fixed is not None else [data])
        columns += [[row["batch"] * (row["size"] / models[name]["size"]) ** 2 if row["model"] == name else 0.0
                     for row in own] for name in names]
        target = [row["peak_mb"] - state_mb(task, row["parameters"], row["trainable_parameters"])
                  - (fixed or 0.0) * held for row, held in zip(own, data)]
        solved = np.linalg.lstsq(np.array(columns).T, np.array(target), rcond=None)[0].tolist()
        base[task] = round(solved.pop(0), 1)
        copies[task] = fixed if fixed is not None else round(solved.pop(0), 2)
        for name, slope in zip(names, solved):
            models[name]["activations_mb"] = round(slope, 2)
    return {"base_mb": base, "copies": copies, "models": models, "fitted_to": len(rows)}


@dataclass(frozen=True)
class Room:
    """The memory a step may use where it will run: MiB and what that figure is (a GPU's, the host's RAM)."""

    mb: float
    of: str


def judge(model: str, batch: int, size: int, images: int, gpu: bool, room: Room) -> tuple[float, str, bool]:
    """The step's estimated peak, its line for the plan, and whether it fits `room` with the estimates' error
    (MARGIN). One that does not gets the largest batch that does: past the room it will not fit; within MARGIN
    of it, it may not (a step killed for memory costs its minutes and measures nothing, so neither starts)."""
    def peak_at(b: int) -> float:
        return estimate_mb(model, b, size, gpu, images=images)

    peak = peak_at(batch)
    if peak * MARGIN <= room.mb:
        return peak, "", True
    smaller = [b for b in range(batch - 1, 0, -1) if peak_at(b) * MARGIN <= room.mb]
    advice = (f"--batch-size {smaller[0]} would (about {peak_at(smaller[0]) / 1024:.1f} GiB)"
              if smaller else f"no batch size fits at {size} px; a smaller --image-size would need less")
    verdict = "will not fit" if peak > room.mb else f"may not fit (the estimates hold within {round(100 * (MARGIN - 1))} %)"
    return peak, f"peak about {peak / 1024:.1f} GiB of {room.of}: {verdict}; {advice}", False
