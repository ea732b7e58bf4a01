"""Whether two compared rows ran on the same machine, on another machine of the same kind, or on devices no
peak makes comparable: the evidence compare prints, and the factor that may explain a slower figure.

The raw figures are compare's verdicts; a machine is only ever an explanation, and one needs evidence beyond
a shared host's noise. Another machine is established only when

- the two records carry separately measured peaks (measured at different times, not one peak file read
  twice) of the row's precision that differ beyond the tolerance, and
- the runs' own stability-guard bursts (float32 matmuls, measured while each run ran) agree with them:
  where the float32 peaks differ too, the bursts' ratio interval lies wholly beyond the device kind's
  stability limit (core.stability) in the same direction; where the float32 peaks agree (a bfloat16 peak
  measured again), the bursts do not differ beyond that limit.

Bursts that differ beyond the tolerance while the peaks do not establish a machine mean the host was busier
during one of the runs: that is said, with the advice to run again, and the raw verdicts stand.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median

from l40sbench.report.comparable import Line

DEVICES_DIFFER = "devices differ"


@dataclass(frozen=True)
class Machines:
    """compare's reading of one pair's machines. `factor`: the baseline's speed over the new one's where another
    machine is established (2.0: the new machine is half as fast), 1.0 where none is, None where the rows ran
    on different kinds of device or GPU models (not comparable). `text`: the evidence or the note, "" if none."""

    factor: float | None = 1.0
    text: str = ""

    @property
    def comparable(self) -> bool:
        return self.factor is not None


def _when(peak: dict) -> str:
    return peak.get("measured_utc") or "time not recorded"


def _float32(line: Line) -> float | None:
    return ((line.peak or {}).get("matmul") or {}).get("float32", {}).get("gflops")


def bursts_slower(b: Line, n: Line) -> tuple[float, tuple[float, float]] | None:
    """(the baseline's burst median over the new one's, its 95 % interval): above 1, the new run's bursts were
    slower. None where a side has too few burst samples."""
    from l40sbench.core.ratios import ratio_test

    found = ratio_test(b.burst_samples, n.burst_samples, "median") if b.burst_samples and n.burst_samples else None
    if found is None:
        return None
    low, high = found.low, found.high  # new / baseline, in rates
    return median(b.burst_samples) / median(n.burst_samples), (1 / high, 1 / low)


def _bursts_text(b: Line, n: Line, bursts) -> str:
    point, (low, high) = bursts
    return (f"the runs' own float32 matmul bursts, median {median(b.burst_samples):.0f} -> "
            f"{median(n.burst_samples):.0f} GFLOP/s, baseline/new {point:.2f} (95 % interval {low:.2f}-{high:.2f})")


def read(b: Line, n: Line, tolerance: float) -> Machines:
    """What the two rows' records say of their machines (see the module's rule)."""
    from l40sbench.core.stability import limits_for
    from l40sbench.core.utilisation import FALLBACK

    if b.device and n.device and b.device != n.device and "GPU" in (b.device[:3], n.device[:3]):
        return Machines(None, f"not comparable: the {DEVICES_DIFFER} ({b.device} -> {n.device}); the rows that "
                              "ran on them are shown as measured, not judged (a peak does not make different "
                              "devices comparable)")
    bound = 1 + tolerance / 100
    bursts = bursts_slower(b, n)
    busier = ""
    if bursts and not 1 / bound <= bursts[0] <= bound:
        side = "the new run" if bursts[0] > 1 else "the baseline run"
        busier = (f"the host was slower during {side} ({_bursts_text(b, n, bursts)}): its figures carry that; "
                  "run both again on a quiet host")
    (name, base), (new_name, new) = b.peak_gflops, n.peak_gflops
    if base and new and name != new_name:  # a fallback on one side: float32's peak set against bfloat16's
        lacking = "the baseline" if name.startswith(FALLBACK) else "the new record"
        wanted = (new_name if name.startswith(FALLBACK) else name)
        return Machines(1.0, f"no machine explanation for {b.label()}: {lacking} measured no {wanted} peak, and "
                             "a precision's peak is set only against the same precision's; raw verdicts"
                             + (f"; {busier}" if busier else ""))
    if not (base and new) or 1 / bound <= base / new <= bound:
        return Machines(1.0, busier)
    ratio = base / new
    peaks = f"{name} matmul peak {base:.0f} GFLOP/s (measured {_when(b.peak)}) -> {new:.0f} (measured {_when(n.peak)})"
    if not (b.peak.get("measured_utc") and n.peak.get("measured_utc")) or \
            b.peak["measured_utc"] == n.peak["measured_utc"]:
        return Machines(1.0, f"not attributed to another machine: the {peaks} are not two separate measurements"
                             + (f"; {busier}" if busier else ""))
    limit = limits_for("GPU" if b.device.startswith("GPU") else "CPU").speed_change
    float32 = (_float32(b) or 0) / (_float32(n) or 1)
    if bursts is None:
        agrees, how = False, "the runs keep no guard bursts to confirm it"
    elif not 1 / bound <= float32 <= bound:
        low, high = bursts[1]
        agrees = low > limit if float32 > 1 else high < 1 / limit
        how = (f"{_bursts_text(b, n, bursts)}, {'wholly' if agrees else 'not wholly'} beyond the stability limit "
               f"{limit:g}x in the peaks' direction")
    else:
        agrees = 1 / limit <= bursts[0] <= limit
        how = (f"the float32 peaks agree, and {_bursts_text(b, n, bursts)} "
               f"{'within' if agrees else 'beyond'} the stability limit {limit:g}x")
    if not agrees:
        return Machines(1.0, f"not attributed to another machine: the {peaks}, but {how}; raw verdicts kept")
    return Machines(ratio, f"new machine {ratio:.2f}x {'slower' if ratio > 1 else 'faster'}: the {peaks}; {how}")
