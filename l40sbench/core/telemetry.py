"""What the device did while a phase was timed: readings sampled on a thread, and a phase's summary
(energy, power, clocks, throttling). Pure arithmetic and a thread; the readers live in backends.telemetry.

Energy comes from the device's own counter where it has one (NVML's total energy, RAPL's energy_uj): the
sum of the differences between consecutive readings, each undone of a wrap where the counter has a range
(RAPL's max_energy_range_uj; CounterTotal keeps one total over several such counters), so a wrap between
two readings costs nothing. Without a counter it is the power readings integrated over time (trapezoids).
Nothing is estimated beyond what was read.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from l40sbench.core.timing import Clock

INTERVAL_SECONDS = 0.1  # NVML refreshes power about every 20-100 ms; RAPL's counter every ~1 ms
JOULES_PER_KWH = 3.6e6
# Where a heavy, sustained GPU job normally runs: information (its share of a phase), not a slowdown.
POWER_CAP = "power cap"


@dataclass(frozen=True)
class Reading:
    """One sample of the device, at `seconds` on the sampler's clock; a field the device does not report is None.

    energy_j: the cumulative energy counter in joules (never wrapping: see CounterTotal).
    clock_mhz: the SM clock of a GPU (the lowest over the run's GPUs), or the mean current frequency of the CPUs.
    throttle: the clock-event reasons active at this sample, by name (POWER_CAP among them).
    boards: on several GPUs' sources, each board's own fields (with its `uuid`) at this sample.
    """

    seconds: float
    power_w: float | None = None
    energy_j: float | None = None
    clock_mhz: float | None = None
    memory_clock_mhz: float | None = None
    temperature_c: float | None = None
    utilisation_percent: float | None = None
    throttle: tuple[str, ...] = ()
    boards: tuple[dict, ...] = ()


@dataclass(frozen=True)
class Source:
    """A way to read a device: `read()` gives one Reading's fields (seconds filled in by the sampler);
    `processes()`, where the device lists them (NVML), the processes on it now (pid, board, memory_mb)."""

    name: str
    read: Callable[[], dict]
    facts: dict | None = None  # what env records of it (driver, boards, power limit, application clocks)
    processes: Callable[[], list[dict]] | None = None


def counter_energy(values: Sequence[float], wrap: float | None = None) -> float:
    """Energy from consecutive readings of a cumulative counter, a wrap between two readings undone."""
    total = 0.0
    for before, after in zip(values, values[1:]):
        step = after - before
        if step < 0 and wrap:
            step += wrap
        total += max(step, 0.0)
    return total


class CounterTotal:
    """One total that never wraps over several counters that each wrap at their own range (RAPL's zones):
    update(readings) returns the energy since the first update."""

    def __init__(self, wraps: Sequence[float]):
        self._wraps = list(wraps)
        self._last: list[float] | None = None
        self.total = 0.0

    def update(self, values: Sequence[float]) -> float:
        if self._last is not None:
            self.total += sum(counter_energy([a, b], wrap) for a, b, wrap in zip(self._last, values, self._wraps))
        self._last = list(values)
        return self.total


def integrate_power(seconds: Sequence[float], power_w: Sequence[float]) -> float:
    """Joules under the power readings (trapezoids between consecutive samples)."""
    return sum((t1 - t0) * (p0 + p1) / 2 for t0, t1, p0, p1 in zip(seconds, seconds[1:], power_w, power_w[1:]))


def _range(values: list[float]) -> list[float] | None:
    return [min(values), max(values)] if values else None


def _shares(readings: Sequence[Reading]) -> dict[str, float]:
    """Each clock-event reason's share of the phase's samples."""
    names = sorted({reason for r in readings for reason in r.throttle})
    return {name: sum(name in r.throttle for r in readings) / len(readings) for name in names}


def phase_summary(readings: Sequence[Reading], images: int | None) -> dict:
    """A phase's telemetry: energy in J (and its basis), J/image, images/kWh, mean and max power, the clock
    (range and median), memory clock and temperature ranges, the mean utilisation, every clock-event reason
    seen with its share of the samples (`power_cap_share` apart: information, not a slowdown; `slowdowns`:
    the others), and on several boards each board's own summary by UUID."""
    if len(readings) < 2:
        return {"samples": len(readings), "energy": "unavailable",
                "reason": "fewer than two readings in the phase (shorter than the sampling interval)"}
    seconds = [r.seconds for r in readings]
    energies = [r.energy_j for r in readings]
    powers = [r.power_w for r in readings]
    if all(e is not None for e in energies):
        energy, basis = counter_energy(energies), "the device's energy counter"
    elif all(p is not None for p in powers):
        energy, basis = integrate_power(seconds, powers), "power readings integrated over time"
    else:
        energy, basis = None, None
    duration = seconds[-1] - seconds[0]
    known_power = [p for p in powers if p is not None]
    utilisation = [r.utilisation_percent for r in readings if r.utilisation_percent is not None]
    clocks = sorted(r.clock_mhz for r in readings if r.clock_mhz is not None)
    shares = _shares(readings)
    summary = {
        "samples": len(readings), "seconds": duration,
        "clock_mhz": _range(clocks), "clock_mhz_median": clocks[len(clocks) // 2] if clocks else None,
        "memory_clock_mhz": _range([r.memory_clock_mhz for r in readings if r.memory_clock_mhz is not None]),
        "temperature_c": _range([r.temperature_c for r in readings if r.temperature_c is not None]),
        "utilisation_percent_mean": sum(utilisation) / len(utilisation) if utilisation else None,
        "power_w_mean": sum(known_power) / len(known_power) if known_power else (
            energy / duration if energy is not None and duration > 0 else None),
        "power_w_max": max(known_power) if known_power else None,
        "throttle": sorted(shares), "power_cap_share": shares.get(POWER_CAP, 0.0),
        "slowdowns": {name: share for name, share in shares.items() if name != POWER_CAP},
    }
    uuids = [b.get("uuid") for b in readings[0].boards]
    if uuids and all(len(r.boards) == len(uuids) for r in readings):
        summary["boards"] = {uuid: phase_summary([Reading(r.seconds, **{k: v for k, v in r.boards[i].items()
                                                                        if k != "uuid"}) for r in readings], None)
                             for i, uuid in enumerate(uuids)}
    if energy is None:
        return {**summary, "energy": "unavailable", "reason": "the device reports neither energy nor power"}
    return {**summary, "energy_j": energy, "energy_basis": basis,
            "j_per_image": energy / images if images else None,
            "images_per_kwh": images * JOULES_PER_KWH / energy if images and energy > 0 else None}


def _at(readings: Sequence[Reading], t: float) -> Reading:
    """The reading at instant `t` between two samples: the counter and the power interpolated linearly (the
    counter is a running total), the other fields those of the nearer sample."""
    after = next((i for i, r in enumerate(readings) if r.seconds >= t), len(readings) - 1)
    before = max(after - 1, 0)
    a, b = readings[before], readings[after]
    share = (t - a.seconds) / (b.seconds - a.seconds) if b.seconds > a.seconds else 0.0
    share = min(max(share, 0.0), 1.0)

    def mix(x, y):
        return None if x is None or y is None else x + share * (y - x)

    near = a if share < 0.5 else b
    return dataclasses.replace(near, seconds=t, energy_j=mix(a.energy_j, b.energy_j),
                               power_w=mix(a.power_w, b.power_w))


def window_summary(readings: Sequence[Reading], windows: Sequence[tuple[float, float]], images: int | None) -> dict:
    """A phase's summary over the instants inside `windows` alone ((start, stop) pairs on the sampler's clock,
    as the clocks that time the work record them): each window cut from the readings with its edges
    interpolated, the energy summed over the windows (never the gaps between them), the other figures over
    the samples inside."""
    inside = [w for w in windows if w[1] > w[0] and readings and w[0] >= readings[0].seconds - 1e-9
              and w[1] <= readings[-1].seconds + 1e-9]
    if len(readings) < 2 or not inside:
        return {"samples": 0, "energy": "unavailable",
                "reason": "no timed window inside the sampled span" if readings else "no readings"}
    pieces = [[_at(readings, a)] + [r for r in readings if a < r.seconds < b] + [_at(readings, b)]
              for a, b in inside]
    parts = [phase_summary(piece, None) for piece in pieces]
    merged = phase_summary([r for piece in pieces for r in piece], images)
    merged.update(samples=sum(len(p) - 2 for p in pieces), seconds=sum(b - a for a, b in inside),
                  windows=len(inside))
    if "energy_j" not in merged or any("energy_j" not in p for p in parts):
        return merged
    energy = sum(p["energy_j"] for p in parts)
    return {**merged, "energy_j": energy, "power_w_mean": energy / merged["seconds"],
            "j_per_image": energy / images if images else None,
            "images_per_kwh": images * JOULES_PER_KWH / energy if images and energy > 0 else None}


def gaps(windows: Sequence[tuple[float, float]], start: float, stop: float) -> list[tuple[float, float]]:
    """The parts of [start, stop] outside `windows` (sorted, not overlapping)."""
    found, at = [], start
    for a, b in sorted(windows):
        if a > at:
            found.append((at, a))
        at = max(at, b)
    return found + ([(at, stop)] if stop > at else [])


class Sampler:
    """Reads `source` every `interval` seconds on a daemon thread between start() and stop(); one reading is
    taken at each end, so even a short phase has two."""

    def __init__(self, source: Source, interval: float = INTERVAL_SECONDS, clock: Clock = time.monotonic):
        self._source, self._interval, self._clock = source, interval, clock
        self._readings: list[Reading] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: str | None = None

    def _take(self) -> None:
        try:
            self._readings.append(Reading(seconds=self._clock(), **self._source.read()))
        except Exception as exc:  # a reader that fails mid-run must not stop the run; the record says why
            self.error = f"{type(exc).__name__}: {exc}"
            self._stop.set()

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            self._take()

    def start(self) -> None:
        self._take()
        self._thread = threading.Thread(target=self._loop, name="l40sbench-telemetry", daemon=True)
        self._thread.start()

    def stop(self) -> list[Reading]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.error is None:
            self._take()
        return list(self._readings)


def slowdowns(summary: dict) -> list[str]:
    """The clock-event reasons other than the power cap seen in a phase (a record without `slowdowns`, written
    before the power cap was told apart, has its `throttle` list)."""
    if "slowdowns" in summary:
        return sorted(summary["slowdowns"])
    return [name for name in summary.get("throttle") or () if name != POWER_CAP]


def throttle_reasons(phases: dict) -> list[str]:
    """One stability reason per phase in which the device slowed down against its will (hardware slowdown,
    thermal, power brake), naming the reasons and their share of the phase; the power cap alone is none."""
    reasons = []
    for phase, summary in phases.items():
        found = slowdowns(summary)
        if found:
            shares = summary.get("slowdowns") or {}
            named = ", ".join(f"{n} ({100 * shares[n]:.0f} % of samples)" if n in shares else n for n in found)
            reasons.append(f"the device slowed down during {phase}: {named}")
    return reasons


def clock_reasons(phases: dict, reference_mhz: float | None, drop: float | None) -> list[str]:
    """One stability reason per phase whose median clock fell more than `drop` (a share) below
    `reference_mhz`, the clock the peak was measured at; none where either is unknown."""
    if not reference_mhz or drop is None:
        return []
    return [f"the device's clock during {phase} (median {s['clock_mhz_median']:.0f} MHz) fell "
            f"{100 * (1 - s['clock_mhz_median'] / reference_mhz):.0f} % below the {reference_mhz:.0f} MHz the peak "
            f"was measured at (limit {100 * drop:.0f} %)"
            for phase, s in phases.items()
            if s.get("clock_mhz_median") and s["clock_mhz_median"] < (1 - drop) * reference_mhz]


def line(telemetry: dict | None) -> str:
    """The run's closing line on energy and what the device did in each phase."""
    if not telemetry:
        return "energy: not recorded (a record written before telemetry)"
    if telemetry.get("energy") == "unavailable":
        return f"energy: unavailable ({telemetry.get('reason')})"
    parts = []
    for phase, s in (telemetry.get("phases") or {}).items():
        if s.get("energy") == "unavailable":
            parts.append(f"{phase} unavailable ({s.get('reason')})")
            continue
        per_image = f", {s['j_per_image']:.3g} J/image" if s.get("j_per_image") else ""
        power = f", mean {s['power_w_mean']:.0f} W" if s.get("power_w_mean") else ""
        clocks = f", clock {s['clock_mhz'][0]:.0f}-{s['clock_mhz'][1]:.0f} MHz" if s.get("clock_mhz") else ""
        capped = f", at the power cap {100 * s['power_cap_share']:.0f} %" if s.get("power_cap_share") else ""
        throttled = f", SLOWED: {', '.join(slowdowns(s))}" if slowdowns(s) else ""
        parts.append(f"{phase} {s['energy_j']:.4g} J{per_image}{power}{clocks}{capped}{throttled}")
    return f"energy ({telemetry['source']}): " + "; ".join(parts)


def neighbour_reasons(neighbours: dict) -> list[str]:
    return [f"a neighbour during {phase}: {reason}" for phase, block in neighbours.items()
            for reason in block.get("reasons") or ()]
