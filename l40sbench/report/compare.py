"""Two sets of results side by side, and whether the new one got worse: pure, no I/O.

Rows are matched on (task, model, batch, devices, precision, image size, Keras backend), and
a run's inference runtimes each make a row of their own ("classify on
onnxruntime", at the precision the runtime was asked for), and so does
each LoadGen test (its scenario, workers, bound and rate in the task name;
VALID counts as ok, so a VALID that became INVALID regresses); a
field a record leaves unknown (None, as the studies' records do for image
size) matches any value. A row with no exact partner is matched, second, with one that differs only in
image size, and the row's label says so (the same model on more pixels is more work, not another model).

Each timing, rate and accuracy figure of a matched pair gets its ratio new / baseline and a verdict (RULE):
- a figure with samples behind it on both sides (epoch clocks, per-image times, sweep steps) gets the 95 %
  interval of the ratio (core.intervals.ratio_interval: each side bootstrapped on its own); it regresses
  only when the whole interval lies beyond the tolerance ("WORSE"); a ratio beyond the tolerance whose
  interval reaches back into it is "within noise", as is one whose interval holds 1;
- a figure of one measurement (the first epoch, the wall time) is shown and not judged;
- a figure with no samples on a side (the studies' references, LoadGen's summary, older records) is judged
  on its two values alone: a time regresses when new > baseline x (1 + tolerance), a rate when
  new < baseline / (1 + tolerance);
- an accuracy regresses when it fell by more than the accuracy tolerance (in points: 2 means 0.02);
- a configuration that ran in the baseline and failed in the new (out of memory, error, timeout) regresses.
Two machines (machine_factor): where the rows ran on different kinds of device or different GPU models,
nothing is normalised or judged: every ratio is shown as measured, and the devices are named. Where they
ran on the same kind (two CPUs, or two boards of one GPU model) whose measured peaks of the row's precision
(bfloat16's for a mixed_bfloat16 run, TF32's for float32 on a GPU that runs it) differ by more than the
tolerance, or whose peaks agree but whose stability guards' bursts, measured during each run, differ by more
than the tolerance, the throughput figures of batched work (epochs, a sweep's steps) are judged normalised
by that speed (new x new peak / baseline peak, and its samples alike), and the figures a peak does not
bound (batch-1 latencies, LoadGen's) are shown as measured and not judged; unless `raw`, which judges
everything as measured. A row from a record the stability guard called unstable says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from l40sbench.report.comparable import ACCURACY, KEY_FIELDS, LOWER, Figure, Line, lines

IMAGE_SIZE = KEY_FIELDS.index("image size")
RULE = ("a time or rate regresses when the 95 % bootstrap interval of new / baseline lies wholly beyond the "
        "tolerance and, over all the figures judged on samples, Holm's method keeps it (the chance of any false "
        "regression among them held to 2.5 %); figures without samples are judged on their two values")
FAMILY_ALPHA = 0.025  # one-sided: a WORSE is the interval's lower end beyond the bound, 2.5 % per figure alone


def _matches(a: tuple, b: tuple, ignore: tuple[int, ...] = ()) -> bool:
    return all(i in ignore or x is None or y is None or x == y for i, (x, y) in enumerate(zip(a, b)))


@dataclass(frozen=True)
class FigureRow:
    line: str
    figure: str
    kind: str
    baseline: float | None
    new: float | None
    ratio: float | None  # new / baseline, normalised by the machines' peaks where `normalised`
    verdict: str
    regressed: bool
    interval: tuple[float, float] | None = None  # 95 % interval of the ratio, where samples gave one
    normalised: bool = False
    unstable: str = ""  # which side's record the stability guard called unstable


@dataclass(frozen=True)
class Comparison:
    rows: tuple[FigureRow, ...]
    only_baseline: tuple[str, ...]
    only_new: tuple[str, ...]
    machines: tuple[str, ...] = ()  # one line per pair of machines whose peaks differ beyond the tolerance

    @property
    def regressions(self) -> tuple[FigureRow, ...]:
        return tuple(r for r in self.rows if r.regressed)


def _worse_text(kind: str, worse: float) -> str:
    return f"{100 * abs(worse - 1):.1f} % {'slower' if kind == LOWER else 'fewer images/s'}" if worse >= 1 else \
        f"{100 * abs(1 - worse):.1f} % {'faster' if kind == LOWER else 'more images/s'}"


def _point_verdict(kind: str, base: float, new: float, tolerance: float, accuracy_tolerance: float) -> tuple[str, bool]:
    if kind == ACCURACY:
        drop = base - new
        if drop > accuracy_tolerance / 100 + 1e-12:
            return f"WORSE: fell {100 * drop:.1f} points (tolerance {accuracy_tolerance:g})", True
        return ("better" if new > base else "same" if new == base else "within tolerance"), False
    worse = new / base if kind == LOWER else base / new  # > 1 means worse
    if worse > 1 + tolerance / 100 + 1e-12:
        return f"WORSE: {_worse_text(kind, worse)} (tolerance {tolerance:g} %; no samples)", True
    return ("better" if worse < 1 else "same" if worse == 1 else "within tolerance"), False


def _sampled_verdict(kind: str, worse: float, interval: tuple[float, float], shown: tuple[float, float],
                     tolerance: float) -> tuple[str, bool]:
    """`worse` > 1 is worse and `interval` its 95 % interval; `shown` the interval of the figure's own ratio."""
    low, high = interval
    bound = 1 + tolerance / 100
    shown = f"95 % interval of new/baseline {shown[0]:.3f}-{shown[1]:.3f}"
    if low > bound + 1e-12:
        return f"WORSE: {_worse_text(kind, worse)}, significantly beyond the tolerance {tolerance:g} % ({shown})", True
    if worse == 1 and low == high == 1:
        return "same", False
    if low > 1:
        return f"slower, within the tolerance ({shown})" if worse <= bound else \
            f"within noise: {_worse_text(kind, worse)}, not significantly beyond {tolerance:g} % ({shown})", False
    if high < 1:
        return f"better ({shown})", False
    return f"within noise ({shown})", False


def _judge(b: Figure, n: Figure, factor: float, tolerance: float, accuracy_tolerance: float):
    """(ratio, interval, verdict, regressed, p) of one figure; `factor` scales the new side's times
    (normalising); p, for a figure judged on samples, is the bootstrap's share of ratios within the tolerance
    (a one-sided p-value of "worse beyond the tolerance"), else None."""
    from l40sbench.core.intervals import MIN_SAMPLES, SMALL_P99, ratio_bootstrap

    if b.kind == ACCURACY:
        verdict, regressed = _point_verdict(ACCURACY, b.value, n.value, tolerance, accuracy_tolerance)
        return (n.value / b.value if b.value else None), None, verdict, regressed, None
    new_value = n.value * factor if b.kind == LOWER else n.value / factor
    ratio = new_value / b.value if b.value else None
    if not (b.value > 0 and new_value > 0):
        return ratio, None, "-", False, None
    worse = new_value / b.value if b.kind == LOWER else b.value / new_value
    if b.samples is None or n.samples is None:
        return (ratio, None, *_point_verdict(b.kind, b.value, new_value, tolerance, accuracy_tolerance), None)
    counts = (len(b.samples), len(n.samples))
    if min(counts) < MIN_SAMPLES:
        what = "one measurement" if max(counts) == 1 else f"n {min(counts)}"
        return ratio, None, f"{what}: shown, not judged", False, None
    if b.statistic == "p99" and min(counts) < SMALL_P99:
        return ratio, None, f"p99 of fewer than {SMALL_P99} samples: shown, not judged", False, None
    found = ratio_bootstrap(b.samples, [v * factor for v in n.samples], b.statistic)  # new / baseline, in time
    if found is None:
        return ratio, None, "-", False, None
    times, distribution = found
    interval = times if b.kind == LOWER else (1 / times[1], 1 / times[0])
    verdict, regressed = _sampled_verdict(b.kind, worse, times, interval, tolerance)
    p = float((distribution <= 1 + tolerance / 100).mean())
    return ratio, interval, verdict, regressed, p


def _pair(base_lines: list[Line], new_lines: list[Line]) -> tuple[list[tuple[Line, Line, str]], list[Line], list[Line]]:
    """(matched pairs with a note, baseline lines without a partner, new lines without one)."""
    unused, pairs, alone = list(new_lines), [], []
    second = []
    for b in base_lines:
        partner = next((n for n in unused if _matches(b.key, n.key)), None)
        if partner is None:
            second.append(b)
            continue
        unused.remove(partner)
        pairs.append((b, partner, ""))
    for b in second:
        partner = next((n for n in unused if _matches(b.key, n.key, ignore=(IMAGE_SIZE,))), None)
        if partner is None:
            alone.append(b)
            continue
        unused.remove(partner)
        pairs.append((b, partner, f" (image size {b.key[IMAGE_SIZE]} -> {partner.key[IMAGE_SIZE]})"))
    return pairs, alone, unused


DEVICES_DIFFER = "devices differ"


def machine_factor(b: Line, n: Line, tolerance: float, raw: bool) -> tuple[float | None, str]:
    """(how much slower the new machine is: baseline speed / new speed, what measured it), where that is
    beyond the tolerance and not `raw`; (1, "") otherwise; (None, why) where the two ran on different kinds
    of device or GPU models, which no peak makes comparable. The speed is the records' matmul peaks of the
    row's precision; where those agree (one peak file kept for a series of runs, say) but the runs' own guard
    bursts, measured while each ran, differ beyond the tolerance, it is the bursts'."""
    if raw:
        return 1.0, ""
    if b.device and n.device and b.device != n.device and "GPU" in (b.device[:3], n.device[:3]):
        return None, f"{DEVICES_DIFFER} ({b.device} -> {n.device})"
    (base_name, base_peak), (_, new_peak) = b.peak_gflops, n.peak_gflops
    for measured, base, new in ((f"its {base_name} matmul peak", base_peak, new_peak),
                                ("its runs' own matmul bursts (the peaks agree)", b.burst_gflops, n.burst_gflops)):
        if base and new and abs(base / new - 1) > tolerance / 100:
            return base / new, f"{measured} ({base:.0f} -> {new:.0f} GFLOP/s)"
    return 1.0, ""


def compare(baseline: Sequence[dict], new: Sequence[dict], tolerance: float = 10.0,
            accuracy_tolerance: float = 2.0, raw: bool = False) -> Comparison:
    """Matches the rows of two sets of result records and judges every shared figure (see RULE)."""
    if not (tolerance >= 0 and accuracy_tolerance >= 0):
        raise ValueError(f"tolerances must be >= 0. Received: {tolerance!r}, {accuracy_tolerance!r}")
    pairs, alone, unused = _pair([line for r in baseline for line in lines(r)],
                                 [line for r in new for line in lines(r)])
    rows, machines, sampled = [], [], []
    for b, partner, note in pairs:
        label = b.label() + note
        unstable = ", ".join(side for side, line in (("baseline", b), ("new", partner)) if line.stability == "unstable")
        if b.status == "ok" and partner.status != "ok":
            rows.append(FigureRow(label, "status", "status", None, None, None, f"WORSE: ok -> {partner.status}", True,
                                  unstable=unstable))
        elif b.status != partner.status:
            rows.append(FigureRow(label, "status", "status", None, None, None, f"{b.status} -> {partner.status}",
                                  False, unstable=unstable))
        slower, measured = machine_factor(b, partner, tolerance, raw)
        if slower is None:
            text = (f"the {measured}: every figure shown as measured, none normalised or judged (a peak does not "
                    "make different devices comparable)")
        else:
            text = (f"new machine {slower:.2f}x {'slower' if slower > 1 else 'faster'} by {measured}: times and "
                    "rates of batched work (epochs, sweep steps) judged normalised by it, batch-1 latencies and "
                    "LoadGen's figures shown as measured, not judged (--raw: everything as measured)"
                    ) if slower != 1.0 else ""
        if text and text not in machines:
            machines.append(text)
        for name, figure in b.figures.items():
            other = partner.figures.get(name)
            if figure.value is None or other is None or other.value is None:
                continue
            if slower is None or (slower != 1.0 and not figure.batched and figure.kind != ACCURACY):
                ratio = other.value / figure.value if figure.value else None
                why = "the devices differ" if slower is None else "another machine; a peak does not bound it"
                rows.append(FigureRow(label, name, figure.kind, figure.value, other.value, ratio,
                                      f"shown as measured, not judged ({why})", False, unstable=unstable))
                continue
            factor = 1 / slower  # new times x factor: what they would be on the baseline's machine
            ratio, interval, verdict, regressed, p = _judge(figure, other, factor, tolerance, accuracy_tolerance)
            normalised = factor != 1.0 and figure.kind != ACCURACY
            if p is not None:
                sampled.append((len(rows), p))
            rows.append(FigureRow(label, name, figure.kind, figure.value, other.value, ratio,
                                  verdict + (f" [unstable: {unstable}]" if unstable else ""), regressed, interval,
                                  normalised, unstable))
    rows = _holm(rows, sampled)
    return Comparison(tuple(rows), tuple(b.label() for b in alone), tuple(n.label() for n in unused), tuple(machines))


def _holm(rows: list[FigureRow], sampled: list[tuple[int, float]]) -> list[FigureRow]:
    """A WORSE judged on samples stands only where Holm's method over every figure judged on samples keeps
    it (family-wise FAMILY_ALPHA): many figures of one pair each at 2.5 % would call some regression by chance."""
    from dataclasses import replace

    from l40sbench.core.intervals import holm

    kept = holm([p for _, p in sampled], FAMILY_ALPHA)
    out = list(rows)
    for (index, p), keep in zip(sampled, kept):
        if out[index].regressed and not keep:
            out[index] = replace(out[index], regressed=False, verdict=(
                f"within noise after Holm's correction over {len(sampled)} figures (p {p:.4f}): "
                + out[index].verdict.removeprefix("WORSE: ")))
    return out
