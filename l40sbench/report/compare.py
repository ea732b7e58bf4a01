"""Two sets of results side by side, and whether the new one got worse: pure, no I/O.

Rows are matched on (task, model, batch, devices, precision, image size, Keras backend, the training's
input path: a cached run's epochs are not set against a files run's), and
a run's inference runtimes each make a row of their own ("classify on
onnxruntime", at the precision the runtime was asked for), and so does
each LoadGen test (its scenario, workers, bound and rate in the task name;
VALID counts as ok, so a VALID that became INVALID regresses); a
field a record leaves unknown (None, as the studies' records do for image
size) matches any value. A row with no exact partner is matched, second, with one that differs only in
image size, and the row's label says so (the same model on more pixels is more work, not another model).

Each timing, rate and accuracy figure of a matched pair gets its ratio new / baseline and a verdict (RULE):
- a figure with samples behind it on both sides (epoch clocks, per-image times, sweep steps) gets the 95 %
  interval of the ratio (core.ratios.ratio_test: each side at its effective sample size, since these
  samples are serial); it regresses only when the whole interval lies beyond the tolerance ("WORSE") and
  Holm's method over every figure judged on samples keeps it; a ratio beyond the tolerance whose interval
  reaches back into it is "within noise", as is one whose interval holds 1; a tail percentile with too few
  samples beyond it (core.ratios.too_few) is shown, not judged;
- a figure of one measurement (the first epoch, the wall time) is shown and not judged;
- a figure with no samples on a side (the studies' references, LoadGen's summary, older records) is judged
  on its two values alone: a time regresses when new > baseline x (1 + tolerance), a rate when
  new < baseline / (1 + tolerance);
- an accuracy regresses when it fell by more than the accuracy tolerance (in points: 2 means 0.02);
- a configuration that ran in the baseline and failed in the new (out of memory, error, timeout) regresses.
Every figure is judged as measured. Each row carries the evidence of the device it ran on (report.comparable:
a runtime on the host's CPU, the CPU's). Another machine (report.machines: separately measured peaks of the
row's precision that differ, confirmed by the runs' own matmul bursts) may explain a WORSE figure whose work
the peak governs (GOVERNS): it becomes "explained by the machine" only if its interval (or value) divided by
the machine's factor falls back within the tolerance; otherwise it stays WORSE (a machine 2x slower does not
explain a latency 4.8x). With `raw` no figure is explained. Rows on different kinds of device or GPU models
are not comparable: their figures and statuses are shown as measured, not judged (rows of the same records
that ran on the same kind of device on both sides, a GPU host's CPU runtimes, are judged there). A row from a record the
stability guard called unstable says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from l40sbench.report import machines as machine_evidence
from l40sbench.report.comparable import ACCURACY, KEY_FIELDS, LOWER, Figure, Line, lines

IMAGE_SIZE = KEY_FIELDS.index("image size")
RULE = ("a time or rate regresses when the 95 % interval of new / baseline (serial samples at their effective "
        "size) lies wholly beyond the "
        "tolerance and, over all the figures judged on samples, Holm's method keeps it (the chance of any false "
        "regression among them held to 2.5 %); figures without samples are judged on their two values")
FAMILY_ALPHA = 0.025  # one-sided: a WORSE is the interval's lower end beyond the bound, 2.5 % per figure alone
JUDGED, EXPLAINED, SHOWN = "judged", "explained by the machine", "shown"
# A machine's peak explains a figure only where the figure's work ran at this share of the peak or more
# (docs/trust.md, "What a peak can explain"): there, most of its time is in the kernels the peak times.
GOVERNS = 0.25


def _matches(a: tuple, b: tuple, ignore: tuple[int, ...] = ()) -> bool:
    return all(i in ignore or x is None or y is None or x == y for i, (x, y) in enumerate(zip(a, b)))


@dataclass(frozen=True)
class FigureRow:
    line: str
    figure: str
    kind: str
    baseline: float | None
    new: float | None
    ratio: float | None  # new / baseline, as measured
    verdict: str
    regressed: bool
    interval: tuple[float, float] | None = None  # 95 % interval of the ratio, where samples gave one
    basis: str = JUDGED  # JUDGED as measured, EXPLAINED (a WORSE the machine accounts for), or SHOWN only
    why_shown: str = ""  # for SHOWN: why the figure was not judged
    unstable: str = ""  # which side's record the stability guard called unstable


@dataclass(frozen=True)
class Comparison:
    rows: tuple[FigureRow, ...]
    only_baseline: tuple[str, ...]
    only_new: tuple[str, ...]
    machines: tuple[str, ...] = ()  # the machines' evidence and notes (report.machines), each once

    @property
    def regressions(self) -> tuple[FigureRow, ...]:
        return tuple(r for r in self.rows if r.regressed)

    @property
    def not_comparable(self) -> bool:
        """Whether some pair ran on different kinds of device or GPU models."""
        return any(r.why_shown == machine_evidence.DEVICES_DIFFER for r in self.rows)

    def counts(self) -> dict[str, int]:
        """How many figures were judged as measured, explained by the machine, and shown only (by why)."""
        out = {JUDGED: 0, EXPLAINED: 0}
        for row in self.rows:
            key = row.basis if row.basis != SHOWN else f"shown ({row.why_shown})"
            out[key] = out.get(key, 0) + 1
        return out


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
    """(ratio, interval, verdict, regressed, p, why_shown) of one figure; `factor` scales the new side's times
    (1: as measured); p, for a figure judged on samples, is ratio_test's one-sided p-value of "worse beyond the
    tolerance", else None; why_shown is "" for a judged figure."""
    from l40sbench.core.intervals import MIN_SAMPLES
    from l40sbench.core.ratios import ratio_test, too_few

    if b.kind == ACCURACY:
        verdict, regressed = _point_verdict(ACCURACY, b.value, n.value, tolerance, accuracy_tolerance)
        return (n.value / b.value if b.value else None), None, verdict, regressed, None, ""
    new_value = n.value * factor if b.kind == LOWER else n.value / factor
    ratio = new_value / b.value if b.value else None
    if not (b.value > 0 and new_value > 0):
        return ratio, None, "-", False, None, "no value"
    worse = new_value / b.value if b.kind == LOWER else b.value / new_value
    if b.samples is None or n.samples is None:
        return (ratio, None, *_point_verdict(b.kind, b.value, new_value, tolerance, accuracy_tolerance), None, "")
    short = too_few(b.samples, b.statistic) or too_few(n.samples, b.statistic)
    if short:
        why = f"fewer than {MIN_SAMPLES} samples" if short.startswith(("one", "n ")) else short
        return ratio, None, f"{short}: shown, not judged", False, None, why
    found = ratio_test(b.samples, [v * factor for v in n.samples], b.statistic)  # new / baseline, in time
    if found is None:
        return ratio, None, "-", False, None, "no interval"
    times = (found.low, found.high)
    interval = times if b.kind == LOWER else (1 / times[1], 1 / times[0])
    verdict, regressed = _sampled_verdict(b.kind, worse, times, interval, tolerance)
    return ratio, interval, verdict, regressed, found.p_within(1 + tolerance / 100), ""


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


def compare(baseline: Sequence[dict], new: Sequence[dict], tolerance: float = 10.0,
            accuracy_tolerance: float = 2.0, raw: bool = False) -> Comparison:
    """Matches the rows of two sets of result records and judges every shared figure as measured (see RULE);
    a WORSE that another machine explains (report.machines) is marked so, unless `raw`."""
    if not (tolerance >= 0 and accuracy_tolerance >= 0):
        raise ValueError(f"tolerances must be >= 0. Received: {tolerance!r}, {accuracy_tolerance!r}")
    pairs, alone, unused = _pair([line for r in baseline for line in lines(r)],
                                 [line for r in new for line in lines(r)])
    rows, notes, sampled, explain = [], [], [], []
    for b, partner, note in pairs:
        label = b.label() + note
        unstable = ", ".join(side for side, line in (("baseline", b), ("new", partner)) if line.stability == "unstable")
        machine = machine_evidence.read(b, partner, tolerance)
        if machine.text and machine.text not in notes:
            notes.append(machine.text)
        if b.status != partner.status and not machine.comparable:
            rows.append(FigureRow(label, "status", "status", None, None, None, f"{b.status} -> {partner.status}: "
                                  "shown, not judged (the devices differ)", False, basis=SHOWN,
                                  why_shown=machine_evidence.DEVICES_DIFFER, unstable=unstable))
        elif b.status == "ok" and partner.status != "ok":
            rows.append(FigureRow(label, "status", "status", None, None, None, f"WORSE: ok -> {partner.status}", True,
                                  unstable=unstable))
        elif b.status != partner.status:
            rows.append(FigureRow(label, "status", "status", None, None, None, f"{b.status} -> {partner.status}",
                                  False, unstable=unstable))
        for name, figure in b.figures.items():
            other = partner.figures.get(name)
            if figure.value is None or other is None or other.value is None:
                continue
            if not machine.comparable:
                ratio = other.value / figure.value if figure.value else None
                rows.append(FigureRow(label, name, figure.kind, figure.value, other.value, ratio,
                                      "shown as measured, not judged (the devices differ)", False, basis=SHOWN,
                                      why_shown=machine_evidence.DEVICES_DIFFER, unstable=unstable))
                continue
            ratio, interval, verdict, regressed, p, why = _judge(figure, other, 1.0, tolerance, accuracy_tolerance)
            if p is not None:
                sampled.append((len(rows), p))
            if machine.factor != 1.0 and not raw and figure.kind != ACCURACY:
                explain.append((len(rows), figure, other, machine.factor, governs(figure, other)))
            rows.append(FigureRow(label, name, figure.kind, figure.value, other.value, ratio,
                                  verdict + (f" [unstable: {unstable}]" if unstable else ""), regressed, interval,
                                  SHOWN if why else JUDGED, why, unstable))
    rows = _explained(_holm(rows, sampled), explain, tolerance, accuracy_tolerance)
    return Comparison(tuple(rows), tuple(b.label() for b in alone), tuple(n.label() for n in unused), tuple(notes))


def governs(b: Figure, n: Figure) -> str:
    """"" where a machine's peak governs the figure on both sides (its work ran at GOVERNS of the peak or more),
    else why it does not (the rule, docs/trust.md)."""
    shares = [f.governed for f in (b, n)]
    if None in shares:
        return "no utilisation shows the peak governs it (the peak explains only work that runs at " \
               f"{100 * GOVERNS:.0f} % of it or more)"
    if min(shares) < GOVERNS:
        return (f"its work ran at {100 * min(shares):.0f} % of the peak, below the {100 * GOVERNS:.0f} % from which "
                "the peak governs a figure (launches, memory and the host bound it, which a matmul peak does not "
                "measure)")
    return ""


def _explained(rows: list[FigureRow], explain: list, tolerance: float, accuracy_tolerance: float) -> list[FigureRow]:
    """A WORSE on another machine is explained by it where, divided by the machine's factor, it is no longer
    WORSE (its interval's conservative end back within the tolerance); otherwise it stands."""
    from dataclasses import replace

    out = list(rows)
    for index, figure, other, factor, why_not in explain:
        if not out[index].regressed:
            continue
        if why_not:
            out[index] = replace(out[index], verdict=out[index].verdict + f"; the machine ({factor:.2f}x) does not "
                                 f"explain it: {why_not}")
            continue
        ratio, interval, verdict, regressed, _, _ = _judge(figure, other, 1 / factor, tolerance, accuracy_tolerance)
        if regressed:
            out[index] = replace(out[index], verdict=out[index].verdict + f"; the machine ({factor:.2f}x) does not "
                                 f"explain it: divided by it, {verdict.removeprefix('WORSE: ')}")
            continue
        shown = f" (interval {interval[0]:.3f}-{interval[1]:.3f})" if interval else ""
        out[index] = replace(out[index], regressed=False, basis=EXPLAINED, verdict=(
            f"explained by the machine ({factor:.2f}x): divided by it, new/baseline {ratio:.3f}{shown}; as "
            f"measured {out[index].verdict.removeprefix('WORSE: ')}"))
    return out


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
