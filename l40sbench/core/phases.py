"""A run's timed phases as telemetry sees them: a sampler over each phase, its neighbours at its start and end,
and the phase cut to the instants the clocks timed (core.telemetry's arithmetic, core.neighbours' watch)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import contextmanager

from l40sbench.core.telemetry import (
    Reading,
    Sampler,
    Source,
    clock_reasons,
    neighbour_reasons,
    phase_summary,
    throttle_reasons,
    window_summary,
)
from l40sbench.core.timing import Clock


class Phases:
    """Samples a telemetry source (backends.telemetry.source()'s pair: the source, or None and why) during each
    timed phase, and watches for neighbours (core.neighbours) at each phase's start and end whatever the
    source; without a source, the record says energy is unavailable and why."""

    def __init__(self, found: tuple[Source | None, str], clock: Clock = time.perf_counter, watch=None):
        from l40sbench.core.neighbours import Watch

        self.source, self.why = found
        self.summaries: dict[str, dict] = {}
        self.readings: dict[str, list[Reading]] = {}
        self.neighbours: dict[str, dict] = {}
        self._watch = watch or Watch(self.source.processes if self.source is not None else None)
        self._clock = clock

    @contextmanager
    def phase(self, name: str):
        """Samples while the block runs; the block sets `done["images"]` to the images the phase processed."""
        done: dict = {"images": None}
        first = self._watch.snapshot(self._clock())
        sampler = Sampler(self.source, clock=self._clock) if self.source is not None else None
        if sampler is not None:
            sampler.start()
        try:
            yield done
        finally:
            if sampler is not None:
                self.readings[name] = sampler.stop()
                summary = phase_summary(self.readings[name], done["images"])
                self.summaries[name] = {**summary, "reader_error": sampler.error} if sampler.error else summary
            self.neighbours[name] = self._watch.between(first, self._watch.snapshot(self._clock()))

    def split(self, name: str, parts: dict[str, tuple[Sequence[tuple[float, float]], int | None]]) -> None:
        """Replaces phase `name`'s summary with one per part, each over its windows ((start, stop) on this
        object's clock, as the clocks that timed the work recorded them) and its images: the energy of the
        timed work alone, the rest named apart. Nothing without a source."""
        readings = self.readings.get(name)
        if readings is None:
            return
        del self.summaries[name]
        for part, (windows, images) in parts.items():
            self.summaries[part] = window_summary(readings, windows, images)

    def span(self, name: str) -> tuple[float, float] | None:
        """The first and last instants phase `name` was sampled at."""
        readings = self.readings.get(name)
        return (readings[0].seconds, readings[-1].seconds) if readings else None

    def record(self) -> dict:
        found = {"energy": "unavailable", "reason": self.why} if self.source is None else {
            "source": self.source.name, "phases": dict(self.summaries)}
        return {**found, "neighbours": dict(self.neighbours)}

    def reasons(self, reference_mhz: float | None = None, clock_drop: float | None = None) -> list[str]:
        """The stability guard's causes from the telemetry: each phase in which the device slowed down against
        its will or its clock fell more than `clock_drop` below `reference_mhz`, and each neighbour that
        mattered."""
        return (throttle_reasons(self.summaries) + clock_reasons(self.summaries, reference_mhz, clock_drop)
                + neighbour_reasons(self.neighbours))
