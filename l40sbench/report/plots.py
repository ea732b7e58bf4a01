"""The report's figures, drawn with matplotlib's Agg backend into PNG files.

Each plot reads without the Markdown around it: a title, axis labels with
units, and the machine of every series in the legend. matplotlib is imported
only when a plot is drawn.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from l40sbench.core.records import written_whole

DPI = 110


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    with written_whole(path) as partial:
        fig.savefig(partial, dpi=DPI)
    _pyplot().close(fig)
    return path


def _wide_range(values: Sequence[float]) -> bool:
    positive = [v for v in values if v and v > 0]
    return bool(positive) and max(positive) / min(positive) > 30


def epoch_bars(bars: Sequence[tuple[str, str, float | None, float | None, float | None]], path: Path,
               title: str) -> Path:
    """Time per epoch per base and machine: first epoch (hatched) beside the steady epochs.

    bars: (base, machine, first epoch s, steady epoch s, wall s / epochs). A record that
    published only a total (the studies) draws its wall time per epoch as one plain bar.
    """
    plt = _pyplot()
    bases = list(dict.fromkeys(b[0] for b in bars))
    machines = list(dict.fromkeys(b[1] for b in bars))
    colours = {m: f"C{i % 10}" for i, m in enumerate(machines)}
    width = 0.8 / (2 * len(machines))
    fig, ax = plt.subplots(figsize=(max(6.0, 1.8 * len(bases) * len(machines)), 4.5))
    heights = []
    for base, machine, first, steady, mean in bars:
        x0 = bases.index(base) + (machines.index(machine) * 2 - len(machines)) * width + width / 2
        if first is None and steady is None:
            ax.bar(x0 + width / 2, mean or 0, 2 * width, color=colours[machine])
            heights.append(mean)
            continue
        ax.bar(x0, first or 0, width, color=colours[machine], hatch="//", edgecolor="white")
        ax.bar(x0 + width, steady if steady is not None else first, width, color=colours[machine])
        heights += [first, steady]
    from matplotlib.patches import Patch

    handles = [Patch(color=colours[m], label=m) for m in machines]
    handles += [Patch(facecolor="grey", hatch="//", edgecolor="white", label="first epoch (tracing, warm-up)"),
                Patch(facecolor="grey", label="steady epoch clock (mean of 2..N), or wall / epochs if that is all published")]
    ax.set_xticks(range(len(bases)), bases)
    ax.set_ylabel("seconds per epoch")
    if _wide_range(heights):
        ax.set_yscale("log")
        ax.set_ylabel("seconds per epoch (log scale)")
    ax.set_title(title)
    ax.legend(handles=handles, fontsize="small")
    return _save(fig, path)


def latency_cdf(series: Sequence[tuple[str, Sequence[float]]], means: Sequence[tuple[str, float]], path: Path,
                title: str) -> Path:
    """Per-image latency as a cumulative distribution, p50/p90/p99 marked on each curve.

    series: (label naming machine and model, every timed image's ms). means: (label, mean ms)
    for records that published only a mean (the studies), drawn as dashed vertical lines.
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    every = []
    for index, (label, times) in enumerate(series):
        ms = np.sort(np.asarray(times, dtype=float))
        fraction = np.arange(1, ms.size + 1) / ms.size
        colour = f"C{index % 10}"
        ax.step(ms, fraction, where="post", color=colour, label=f"{label} (n={ms.size})")
        for q in (50, 90, 99):
            value = float(np.percentile(ms, q))
            ax.plot([value], [q / 100], marker="o", color=colour)
            ax.annotate(f"p{q} {value:.3g}", (value, q / 100), textcoords="offset points", xytext=(4, -10),
                        fontsize="x-small", color=colour)
        every += ms.tolist()
    for index, (label, mean) in enumerate(means, start=len(series)):
        ax.axvline(mean, linestyle="--", color=f"C{index % 10}", label=f"{label}: mean {mean:.3g} ms (no per-image times)")
        every.append(mean)
    ax.set_xlabel("latency per image (ms)")
    if _wide_range(every):
        ax.set_xscale("log")
        ax.set_xlabel("latency per image (ms, log scale)")
    ax.set_ylabel("fraction of images at or below")
    ax.set_ylim(0, 1.02)
    ax.set_title(title)
    ax.legend(fontsize="x-small", loc="lower right")
    return _save(fig, path)


def _model_grid(plt, models: Sequence[str]):
    cols = min(3, len(models))
    rows = math.ceil(len(models) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.4 * rows), squeeze=False)
    for ax in axes.flat[len(models):]:
        ax.set_visible(False)
    return fig, list(axes.flat)


def throughput_vs(curves: dict[str, dict[str, list[tuple[int, float]]]], path: Path, *, x_label: str, title: str,
                  ideal: bool = False) -> Path:
    """Images/s against batch size or device count, one panel per model, one line per machine.

    curves: model -> machine -> [(x, images/s)]. With `ideal`, each line's linear scaling from
    its smallest x is drawn dashed (perfect weak scaling).
    """
    plt = _pyplot()
    models = list(curves)
    fig, axes = _model_grid(plt, models)
    machines = list(dict.fromkeys(m for per in curves.values() for m in per))
    for ax, model in zip(axes, models):
        for machine, points in curves[model].items():
            colour = f"C{machines.index(machine) % 10}"
            xs, ys = zip(*sorted(points))
            ax.plot(xs, ys, marker="o", color=colour, label=machine)
            if ideal and len(xs) > 1:
                ax.plot(xs, [ys[0] * x / xs[0] for x in xs], linestyle="--", color=colour, alpha=0.6,
                        label="dashed: ideal, linear from each line's first point")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(model)
        ax.set_xlabel(x_label)
        ax.set_ylabel("images/s (log scale)")
    handles, labels = [], []
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            if label not in labels:
                handles.append(handle)
                labels.append(label)
    fig.suptitle(title)
    fig.legend(handles, labels, loc="lower center", fontsize="x-small", ncol=min(3, len(labels)),
               bbox_to_anchor=(0.5, 0.0))
    height = fig.get_size_inches()[1]
    fig.tight_layout(rect=(0, (0.3 + 0.2 * math.ceil(len(labels) / 3)) / height, 1, 1 - 0.4 / height))
    with written_whole(path) as partial:
        fig.savefig(partial, dpi=DPI)
    plt.close(fig)
    return path


def epoch_vs_devices(series: dict[str, list[tuple[int, float | None]]], path: Path, title: str) -> Path:
    """Epoch seconds against device count, one line per base and machine, each with its ideal (dashed):
    the fewest devices' time divided by the device ratio."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for i, (name, points) in enumerate(series.items()):
        xs, ys = zip(*sorted((x, y) for x, y in points if y))
        colour = f"C{i % 10}"
        ax.plot(xs, ys, marker="o", color=colour, label=name)
        ax.plot(xs, [ys[0] * xs[0] / x for x in xs], linestyle="--", color=colour, alpha=0.6,
                label=f"{name}: ideal (1/N)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("devices (log2)")
    ax.set_ylabel("seconds per epoch")
    ax.set_title(title)
    ax.legend(fontsize=8)
    return _save(fig, path)


def cost_bars(bars: Sequence[tuple[str, str, float, str]], images: int, path: Path) -> Path:
    """Cost of N images per (model, offer) as horizontal bars; bars: (model, offer, cost, currency sign)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8.0, 1.0 + 0.35 * len(bars)))
    offers = list(dict.fromkeys(b[1] for b in bars))
    labels = [f"{model} | {offer}" for model, offer, _, _ in bars]
    ax.barh(range(len(bars)), [b[2] for b in bars], color=[f"C{offers.index(b[1]) % 10}" for b in bars])
    for i, (_, _, cost, sign) in enumerate(bars):
        ax.annotate(f"{sign}{cost:.2f}", (cost, i), textcoords="offset points", xytext=(3, -3), fontsize="x-small")
    ax.set_yticks(range(len(bars)), labels, fontsize="small")
    ax.invert_yaxis()
    signs = sorted({b[3].strip() for b in bars})
    ax.set_xlabel(f"cost of {images:,} images ({', '.join(signs)})")
    ax.set_title(f"Cost per {images:,} images, by model and offer")
    return _save(fig, path)


def runtime_bars(bars: Sequence[tuple[str, float, float, float, str]], path: Path, title: str) -> Path:
    """Mean latency per runtime, fastest first, with a whisker from p50 to p99.

    bars: (runtime, mean ms, p50 ms, p99 ms, effective precision).
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(max(6.0, 1.4 * len(bars)), 4.5))
    for index, (runtime, mean, p50, p99, precision) in enumerate(bars):
        ax.bar(index, mean, 0.6, color=f"C{index % 10}", label=f"{runtime}: {mean:.3g} ms ({precision})")
        ax.plot([index, index], [p50, p99], color="black", linewidth=1.2)
    ax.set_xticks(range(len(bars)), [b[0] for b in bars])
    ax.set_ylabel("ms per image (bar: mean; line: p50 to p99)")
    ax.set_title(title)
    ax.legend(fontsize="x-small")
    return _save(fig, path)


def latency_vs_load(series: dict[str, list[tuple[float, float, float]]], bound_ms: float | None, path: Path,
                    title: str) -> Path:
    """Server runs: p99 (line) and p50 (dashed) latency against the offered rate, one colour per runtime.

    series: runtime -> [(offered samples/s, p50 ms, p99 ms)], the search's short runs included.
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.0, 4.5))
    for index, (name, points) in enumerate(sorted(series.items())):
        points = sorted(points)
        rates = [p[0] for p in points]
        ax.plot(rates, [p[2] for p in points], marker="o", color=f"C{index % 10}", label=f"{name}: p99")
        ax.plot(rates, [p[1] for p in points], marker=".", linestyle="--", color=f"C{index % 10}",
                label=f"{name}: p50")
    if bound_ms:
        ax.axhline(bound_ms, color="black", linewidth=0.8, linestyle=":", label=f"bound {bound_ms:g} ms")
    ax.set_xlabel("offered load (queries/s, Poisson; one sample each)")
    ax.set_ylabel("latency (ms)")
    if _wide_range([p[2] for points in series.values() for p in points]):
        ax.set_yscale("log")
    ax.set_title(title)
    ax.legend(fontsize="x-small")
    return _save(fig, path)


def rate_vs_batch(series: dict[str, list[tuple[int, float]]], path: Path, title: str) -> Path:
    """Offline runs: samples/s against the largest batch a call took, one line per runtime (and workers)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.0, 4.5))
    for index, (name, points) in enumerate(sorted(series.items())):
        points = sorted(points)
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", color=f"C{index % 10}", label=name)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("batch (most samples per call)")
    ax.set_ylabel("samples/s")
    ax.set_ylim(bottom=0)
    ax.set_title(title)
    ax.legend(fontsize="x-small")
    return _save(fig, path)


def backend_bars(groups: dict[str, dict[str, float]], path: Path, *, y_label: str, title: str) -> Path:
    """One group of bars per configuration, one bar per Keras backend.

    groups: configuration label -> {backend: value}.
    """
    plt = _pyplot()
    backends = sorted({name for values in groups.values() for name in values})
    width = 0.8 / max(len(backends), 1)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(groups)), 4.5))
    for index, name in enumerate(backends):
        xs = [i + (index - (len(backends) - 1) / 2) * width for i in range(len(groups))]
        ax.bar(xs, [values.get(name, 0.0) for values in groups.values()], width, color=f"C{index % 10}", label=name)
    ax.set_xticks(range(len(groups)), list(groups), fontsize="small")
    ax.set_ylabel(y_label)
    ax.set_title(title)
    ax.legend(title="Keras backend", fontsize="small")
    return _save(fig, path)
