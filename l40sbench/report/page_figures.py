"""The page's interactive plots (plotly figures as JSON), each point tagged with its machine, task, model and
precision for the page's filters; published figures drawn apart from measured ones (open markers, dashed lines)
and beneath them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace

from l40sbench.report.inputs import Loaded, precision, replicas
from l40sbench.report.tables import wall_epoch_seconds

PUBLISHED = " (published)"


@dataclass(frozen=True)
class Tag:
    """What the page's filters match a point by ('' matches every choice)."""

    machine: str
    task: str = ""
    model: str = ""
    precision: str = ""
    link: str = ""  # the point's result file, relative to the page (a click opens it); '' for a reference


@dataclass(frozen=True)
class Point:
    """A bar: its x (the base), its value and error bars, the origin its hover names, its tag (its machine)."""

    x: object
    y: float
    errors: list[float] | None
    origin: str
    tag: Tag


def _tag(label: str, item: Loaded, links: dict[str, str], model: str | None = None) -> Tag:
    record = item.record
    return Tag(label, record.get("task") or "", model or record.get("base") or "", precision(record) or "",
               links.get(item.origin, ""))


def _figure(traces: list[tuple[dict, list[Tag]]], layout: dict) -> dict:
    return {"data": [t for t, _ in traces], "layout": layout, "tags": [[asdict(g) for g in tags] for _, tags in traces]}


def _ci(interval: dict | None, value: float | None) -> list[float] | None:
    """(plus, minus) error bar lengths from an interval's mean_ci95, where it has one."""
    ci = (interval or {}).get("mean_ci95")
    if not ci or value is None:
        return None
    return [max(ci[1] - value, 0.0), max(value - ci[0], 0.0)]


def _bars(points: list[Point], title: str, y: str) -> dict:
    """Grouped bars, one trace per machine."""
    traces = []
    for machine in dict.fromkeys(p.tag.machine for p in points):
        mine = [p for p in points if p.tag.machine == machine]
        trace = {"type": "bar", "name": machine, "meta": machine, "x": [p.x for p in mine], "y": [p.y for p in mine],
                 "customdata": [p.origin for p in mine],
                 "hovertemplate": "%{x}: %{y:.4g}<br>%{customdata}<extra>%{meta}</extra>"}
        if any(p.errors for p in mine):
            trace["error_y"] = {"type": "data", "symmetric": False,
                                "array": [p.errors[0] if p.errors else 0 for p in mine],
                                "arrayminus": [p.errors[1] if p.errors else 0 for p in mine]}
        traces.append((trace, [p.tag for p in mine]))
    return _figure(traces, {"title": {"text": title}, "barmode": "group", "yaxis": {"title": {"text": y}}})


def _cost(priced: Sequence[tuple[str, object]], images: int) -> dict:
    """Cost of N images per model and machine, one trace per offer (report.series.priced's rows)."""
    traces: dict[str, tuple[dict, list[Tag]]] = {}
    for label, row in priced:
        trace, tags = traces.setdefault(row.offer.name, ({"type": "bar", "orientation": "h", "name": row.offer.name,
                                                          "meta": "", "x": [], "y": [], "customdata": []}, []))
        trace["y"].append(f"{row.model} · {label}")
        trace["x"].append(row.cost)
        trace["customdata"].append(row.offer.currency)
        tags.append(Tag(label, model=row.model))
    for trace, _ in traces.values():
        trace["hovertemplate"] = "%{y}: %{x:.4g} %{customdata}<extra>%{fullData.name}</extra>"
    return _figure(list(traces.values()), {"title": {"text": f"cost of {images:,} images"}, "barmode": "group",
                                           "margin": {"l": 300}})


METRICS = {"classify": ("test_accuracy", "test accuracy"), "detect": ("map_50_95", "COCO mAP@[.5:.95]")}


def _accuracy_curve(record: dict) -> list[tuple[float, float]]:
    """(training wall seconds, test metric): after each epoch where the run scored every epoch, else its final
    accuracy at its whole training's wall time; [] for a record without both."""
    train = record.get("train") or {}
    scores, walls = train.get("test_metric_per_epoch") or (), train.get("wall_seconds_at_epoch") or ()
    if scores and len(scores) == len(walls):
        return [(w, s) for w, s in zip(walls, scores) if s is not None]
    final = (record.get("accuracy") or {}).get(METRICS[record["task"]][0])
    return [(train["wall_seconds"], final)] if final is not None and train.get("wall_seconds") else []


def cost_to_accuracy(task: str, runs: list[tuple[str, Loaded]], offers: Sequence, links: dict[str, str]
                     ) -> dict | None:
    """Test accuracy against what the training cost on each offer that rents that machine (its device count,
    its machine name); against training time where no offer prices a run."""
    from l40sbench import cost

    traces, priced_any = [], False
    for label, item in runs:
        curve = _accuracy_curve(item.record)
        if not curve:
            continue
        mine = [o for o in offers if o.rents(label, replicas(item.record))]
        priced_any |= bool(mine)
        for offer in mine or [None]:
            x = [cost.charge(s, offer)[1] for s, _ in curve] if offer else [s for s, _ in curve]
            unit = offer.currency if offer else "s"
            trace = {"type": "scatter", "mode": "lines+markers", "meta": label, "x": x, "y": [a for _, a in curve],
                     "name": f"{item.record['base']} · {label}" + (f" · {offer.name}" if offer else ""),
                     "customdata": [unit] * len(curve),
                     "hovertemplate": "%{x:.4g} %{customdata}: %{y:.4f}<extra>%{fullData.name}</extra>"}
            traces.append((trace, [_tag(label, item, links)] * len(curve)))
    if not traces:
        return None
    metric = METRICS[task][1]
    so_far = "cost so far, on each offer that rents its machine" if priced_any else "wall time so far"
    x_title = ("billed cost (its currency on hover)" if priced_any
               else "training wall time, s (no offer prices these machines: report --catalog)")
    return _figure(traces, {"title": {"text": f"{task}: {metric} after each epoch against the training's {so_far}"},
                            "xaxis": {"title": {"text": x_title}}, "yaxis": {"title": {"text": metric}}})


def _task_figures(task: str, runs: list[tuple[str, Loaded]], offers: Sequence, links: dict[str, str]
                  ) -> dict[str, dict]:
    out = {}
    epochs = []
    for label, item in runs:  # the steady epoch where measured; a published row's wall / epochs
        train = item.record.get("train") or {}
        steady = train.get("steady_epoch_seconds")
        value = steady if steady else wall_epoch_seconds(train) if train.get("epochs") else None
        if value:
            epochs.append(Point(item.record["base"], value,
                                _ci(train.get("steady_epoch_interval"), steady) if steady else None, item.origin,
                                _tag(label, item, links)))
    if epochs:
        out[f"plot-{task}-epoch"] = _bars(epochs, f"{task}: time per epoch, s (steady epochs with their 95 % "
                                                  "interval; published rows: wall / epochs)", "seconds")
    latency = [Point(item.record["base"], inf["mean_ms"], _ci(inf.get("interval_ms"), inf["mean_ms"]),
                     item.origin, _tag(label, item, links))
               for label, item in runs if (inf := item.record.get("inference") or {}).get("mean_ms")]
    if latency:
        out[f"plot-{task}-latency"] = _bars(latency, f"{task}: inference, ms/image (95 % interval)", "ms")
    accuracy = cost_to_accuracy(task, runs, offers, links)
    if accuracy:
        out[f"plot-{task}-cost-accuracy"] = accuracy
    return out


def _first_step(loaded: Sequence[Loaded], labels: Sequence[str], links: dict[str, str]) -> dict | None:
    first = [(f"{item.record.get('task')} {item.record.get('base')} · {label}", item.record["time_to_first_step"],
              _tag(label, item, links)) for item, label in zip(loaded, labels)
             if (item.record.get("time_to_first_step") or {}).get("parts_seconds")]
    if not first:
        return None
    parts = list(dict.fromkeys(name for _, t, _ in first for name in t["parts_seconds"]))
    return _figure([({"type": "bar", "name": part, "orientation": "h", "y": [run for run, _, _ in first],
                      "x": [t["parts_seconds"].get(part, 0.0) for _, t, _ in first], "meta": "",
                      "hovertemplate": "%{y}: %{x:.2f} s<extra>" + part + "</extra>"}, [tag for _, _, tag in first])
                    for part in parts],
                   {"title": {"text": "time to the first training step, s, by part"}, "barmode": "stack",
                    "margin": {"l": 260}, "xaxis": {"title": {"text": "seconds"}}})


def _sweep(loaded: Sequence[Loaded], labels: Sequence[str], links: dict[str, str]) -> dict | None:
    """The LeaderGPU grid: images/s against batch per model and device count, published lines dashed beneath."""
    grid = []
    for item, label in sorted(zip(loaded, labels), key=lambda pair: not pair[0].record.get("source")):
        if item.record.get("task") != "synthetic":
            continue
        published = bool(item.record.get("source"))
        series: dict[tuple, list] = {}
        for row in item.record.get("rows") or []:
            if row.get("status", "ok") == "ok" and row.get("images_per_second"):
                series.setdefault((row["model"], row.get("devices", 1), row.get("precision") or ""), []).append(
                    (row["per_device_batch"], row["images_per_second"]))
        for (model, devices, kind), points in sorted(series.items()):
            points.sort()
            trace = {"type": "scatter", "mode": "lines+markers", "meta": label,
                     "name": f"{model} x{devices} · {label}" + (PUBLISHED if published else ""),
                     "x": [p[0] for p in points], "y": [p[1] for p in points],
                     "customdata": [item.origin] * len(points),
                     "hovertemplate": "batch %{x}: %{y:.4g} images/s<br>%{customdata}<extra>%{fullData.name}</extra>"}
            if published:
                trace["line"], trace["marker"], trace["opacity"] = {"dash": "dash"}, {"symbol": "circle-open"}, 0.6
            grid.append((trace, [replace(_tag(label, item, links, model), precision=kind)] * len(points)))
    if not grid:
        return None
    return _figure(grid, {"title": {"text": "images/s against batch size, per model and device count (dashed, open: "
                                            "published)"},
                          "xaxis": {"title": {"text": "batch per device"}, "type": "log"},
                          "yaxis": {"title": {"text": "images/s"}, "type": "log"}})


def figures(loaded: Sequence[Loaded], labels: Sequence[str], priced: Sequence = (), images: int = 0,
            offers: Sequence = (), links: dict[str, str] | None = None) -> dict[str, dict]:
    """The page's plots, by the id of the element each is drawn in: {"data", "layout", "tags"} (a Tag per point
    of each trace, for the filters and the link to its record: `links`, by the records' origins)."""
    links = links or {}
    out = {"plot-cost": _cost(priced, images)} if priced else {}
    for task in ("classify", "detect"):
        runs = [(label, item) for item, label in zip(loaded, labels) if item.record.get("task") == task]
        out |= _task_figures(task, runs, offers, links)
    for name, figure in (("plot-first-step", _first_step(loaded, labels, links)),
                         ("plot-sweep", _sweep(loaded, labels, links))):
        if figure:
            out[name] = figure
    return out
