"""Two sets of results side by side, and whether the new one got worse: pure, no I/O.

Rows are matched on (task, model, batch, devices, precision, image size, Keras backend), and
a run's inference runtimes each make a row of their own ("classify on
onnxruntime", at the precision the runtime was asked for), and so does
each LoadGen test (its scenario, workers, bound and rate in the task name;
VALID counts as ok, so a VALID that became INVALID regresses); a
field a record leaves unknown (None, as the studies' records do for image
size) matches any value. Each timing, rate and accuracy figure of a matched
pair gets its ratio new / baseline and a verdict:
- a time (lower is better) regresses when new > baseline x (1 + tolerance);
- a rate (images/s) regresses when new < baseline / (1 + tolerance);
- an accuracy regresses when it fell by more than the accuracy tolerance
  (in points: 2 means 0.02 of accuracy or mAP);
- a configuration that ran in the baseline and failed in the new (out of
  memory, error, timeout) regresses.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from l40sbench.core.env import gpu_models
from l40sbench.report.inputs import backend, replicas
from l40sbench.report.tables import clock_epoch_seconds, wall_epoch_seconds

KEY_FIELDS = ("task", "model", "batch", "devices", "precision", "image size", "backend")
LOWER, HIGHER, ACCURACY = "time", "rate", "accuracy"


@dataclass(frozen=True)
class Line:
    """One comparable row of a result: its key, its status and its figures (name -> (value, kind))."""

    key: tuple
    status: str = "ok"
    figures: dict = field(default_factory=dict)

    def label(self) -> str:
        task, model, *rest = self.key
        return " ".join([str(task), str(model), *(f"{n} {v}" for n, v in zip(KEY_FIELDS[2:], rest) if v is not None)])


def _gpus(record: dict) -> int:
    return len(gpu_models(record.get("env") or {})) or 1


def _devices(record: dict) -> int:
    """The replicas a run trained on (its devices block); an older record's GPU count."""
    return replicas(record) if record.get("devices") else _gpus(record)


def lines(record: dict) -> list[Line]:
    """The comparable rows of one result record (a run, or each configuration of a sweep)."""
    if record.get("task") == "synthetic":
        out = []
        for r in record.get("rows", ()):
            figures = {}
            if r.get("images_per_second"):
                figures = {"images/s": (r["images_per_second"], HIGHER), "step ms": (r.get("step_ms_mean"), LOWER)}
            out.append(Line((f"synthetic-{r['mode']}", r["model"], r["per_device_batch"], r["devices"],
                             r.get("precision"), None, r.get("backend") or backend(record)), r["status"], figures))
        return out
    config, train, inference = record.get("config") or {}, record.get("train") or {}, record.get("inference") or {}
    figures = {
        "epoch s (wall / epochs)": (wall_epoch_seconds(train), LOWER),
        "epoch s (clock mean)": (clock_epoch_seconds(train), LOWER),
        "first epoch s": (train.get("first_epoch_seconds"), LOWER),
        "steady epoch s": (train.get("steady_epoch_seconds"), LOWER),
        "inference ms/image": (inference.get("mean_ms"), LOWER),
        "p50 ms": (inference.get("p50_ms"), LOWER),
        "p99 ms": (inference.get("p99_ms"), LOWER),
        "images/s": (inference.get("images_per_second"), HIGHER),
    }
    for name, value in (record.get("accuracy") or {}).items():
        if isinstance(value, (int, float)):
            figures[name] = (value, ACCURACY)
    key = (record.get("task"), record.get("base"), config.get("batch_size"), _devices(record), config.get("precision"),
           config.get("image_size"), backend(record))
    return [Line(key, "ok" if record.get("complete", True) else "incomplete", figures), *_runtime_lines(record),
            *_scenario_lines(record)]


def _runtime_lines(record: dict) -> list[Line]:
    """One line per inference runtime other than tf (tf's figures are the record's own inference line)."""
    config, out = record.get("config") or {}, []
    for row in (record.get("inference") or {}).get("runtimes") or ():
        if row["runtime"] == "tf":
            continue
        inference = row.get("inference") or {}
        figures = {
            "inference ms/image": (inference.get("mean_ms"), LOWER),
            "p50 ms": (inference.get("p50_ms"), LOWER),
            "p99 ms": (inference.get("p99_ms"), LOWER),
            "images/s": (inference.get("images_per_second"), HIGHER),
        }
        for name in ("test_accuracy", "agreement_with_tf", "map_50_95", "map_50"):
            value = (row.get("accuracy") or {}).get(name)
            if isinstance(value, (int, float)):
                figures[name] = (value, ACCURACY)
        key = (f"{record.get('task')} on {row['runtime']}", record.get("base"), 1, _gpus(record),
               row.get("precision_requested"), config.get("image_size"), backend(record))
        out.append(Line(key, "ok" if row["status"] == "ok" else row["status"], figures))
    return out


def _scenario_lines(record: dict) -> list[Line]:
    """One line per LoadGen test, matched on runtime, scenario and settings; VALID is its "ok"."""
    config, out = record.get("config") or {}, []
    for entry in (record.get("inference") or {}).get("scenarios") or ():
        settings, latency = entry["settings"], entry.get("latency_ms") or {}
        chosen = [f"workers {settings.get('workers', 1)}"]
        if entry["scenario"] == "server":
            chosen.append(f"bound {settings.get('latency_bound_ms'):g} ms")
            chosen.append("max rate" if settings.get("find_max_qps") else f"{settings.get('target_qps'):g} qps")
        if entry["scenario"] == "multi-stream":
            chosen.append(f"{settings.get('samples_per_query')} per query")
        figures = {"samples/s": (entry.get("samples_per_second"), HIGHER), "p50 ms": (latency.get("p50"), LOWER),
                   "p99 ms": (latency.get("p99"), LOWER)}
        if entry.get("search"):
            figures["max VALID qps"] = (entry["search"]["max_valid_qps"], HIGHER)
        key = (f"{record.get('task')} {entry['scenario']} ({', '.join(chosen)}) on {entry['runtime']}",
               record.get("base"), settings.get("batch", 1), _gpus(record), entry.get("precision_requested"),
               config.get("image_size"), backend(record))
        out.append(Line(key, "ok" if entry["result"] == "VALID" else entry["result"], figures))
    return out


def _matches(a: tuple, b: tuple) -> bool:
    return all(x is None or y is None or x == y for x, y in zip(a, b))


@dataclass(frozen=True)
class FigureRow:
    line: str
    figure: str
    kind: str
    baseline: float | None
    new: float | None
    ratio: float | None
    verdict: str
    regressed: bool


@dataclass(frozen=True)
class Comparison:
    rows: tuple[FigureRow, ...]
    only_baseline: tuple[str, ...]
    only_new: tuple[str, ...]

    @property
    def regressions(self) -> tuple[FigureRow, ...]:
        return tuple(r for r in self.rows if r.regressed)


def _verdict(kind: str, base: float, new: float, tolerance: float, accuracy_tolerance: float) -> tuple[str, bool]:
    if kind == ACCURACY:
        drop = base - new
        if drop > accuracy_tolerance / 100 + 1e-12:
            return f"WORSE: fell {100 * drop:.1f} points (tolerance {accuracy_tolerance:g})", True
        return ("better" if new > base else "same" if new == base else "within tolerance"), False
    worse = new / base if kind == LOWER else base / new  # > 1 means worse
    if worse > 1 + tolerance / 100 + 1e-12:
        return f"WORSE: {100 * (worse - 1):.1f} % {'slower' if kind == LOWER else 'fewer images/s'} (tolerance {tolerance:g} %)", True
    return ("better" if worse < 1 else "same" if worse == 1 else "within tolerance"), False


def compare(baseline: Sequence[dict], new: Sequence[dict], tolerance: float = 10.0,
            accuracy_tolerance: float = 2.0) -> Comparison:
    """Matches the rows of two sets of result records and judges every shared figure."""
    if not (tolerance >= 0 and accuracy_tolerance >= 0):
        raise ValueError(f"tolerances must be >= 0. Received: {tolerance!r}, {accuracy_tolerance!r}")
    base_lines = [line for r in baseline for line in lines(r)]
    new_lines = [line for r in new for line in lines(r)]
    unused = list(new_lines)
    rows, only_baseline = [], []
    for b in base_lines:
        partner = next((n for n in unused if _matches(b.key, n.key)), None)
        if partner is None:
            only_baseline.append(b.label())
            continue
        unused.remove(partner)
        label = b.label()
        if b.status == "ok" and partner.status != "ok":
            rows.append(FigureRow(label, "status", "status", None, None, None, f"WORSE: ok -> {partner.status}", True))
        elif b.status != partner.status:
            rows.append(FigureRow(label, "status", "status", None, None, None, f"{b.status} -> {partner.status}", False))
        for name, (value, kind) in b.figures.items():
            other = partner.figures.get(name, (None, kind))[0]
            if value is None or other is None:
                continue
            ratio = other / value if value else None
            judged = kind == ACCURACY or (value > 0 and other > 0)
            verdict, regressed = _verdict(kind, value, other, tolerance, accuracy_tolerance) if judged else ("-", False)
            rows.append(FigureRow(label, name, kind, value, other, ratio, verdict, regressed))
    return Comparison(tuple(rows), tuple(only_baseline), tuple(n.label() for n in unused))
