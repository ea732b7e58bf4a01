"""The device's telemetry over a run's timed phases (training, inference), for the record's `telemetry` block."""

from __future__ import annotations

from contextlib import contextmanager

from l40sbench.core.telemetry import Sampler, phase_summary, throttle_reasons


class Phases:
    """Samples the machine's telemetry source (backends.telemetry) during each phase; without one, the record
    says energy is unavailable and why."""

    def __init__(self):
        from l40sbench.backends.telemetry import source

        self.source, self.why = source()
        self.summaries: dict[str, dict] = {}

    @contextmanager
    def phase(self, name: str):
        """Samples while the block runs; the block sets `done["images"]` to the images the phase processed."""
        done: dict = {"images": None}
        if self.source is None:
            yield done
            return
        sampler = Sampler(self.source)
        sampler.start()
        try:
            yield done
        finally:
            summary = phase_summary(sampler.stop(), done["images"])
            self.summaries[name] = {**summary, "reader_error": sampler.error} if sampler.error else summary

    def record(self) -> dict:
        if self.source is None:
            return {"energy": "unavailable", "reason": self.why}
        return {"source": self.source.name, "phases": dict(self.summaries)}

    def reasons(self) -> list[str]:
        """The stability guard's causes from the telemetry: each phase in which the device throttled."""
        return throttle_reasons(self.summaries)
