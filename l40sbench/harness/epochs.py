"""The epoch boundaries a task reports while it trains, turned into the harness's clocks, progress and saves."""

from __future__ import annotations

from collections.abc import Callable

from l40sbench.core.text import Log
from l40sbench.core.timing import EpochClock, Stopwatch, eta_seconds


class EpochLoop:
    """A task calls begin() and end() around each epoch (from a framework callback or its own loop);
    the epoch clock, the wall time at each epoch's end, the losses, the per-epoch test metric, the
    progress line and a save of the record after each epoch all happen here.
    """

    def __init__(self, epochs: int, clock: EpochClock, wall: Stopwatch, log: Log, on_epoch: Callable[[], None]):
        self.epochs = epochs
        self._clock = clock
        self._wall = wall
        self._log = log
        self._on_epoch = on_epoch
        self._step_clock = Stopwatch()
        self.losses: list[float] = []
        self.test_metric: list[float] = []
        self.scoring_seconds: list[float] = []  # each epoch's test scoring, on a clock of its own
        self.first_epoch_steps: list[float] = []  # each step of the first epoch (steps() alone knows them)
        self.wall_at_epoch: list[float] = []

    def begin(self) -> None:
        self._clock.start()

    def end(self, loss: float, metrics: dict[str, float], score: tuple[str, Callable[[], float]] | None = None) -> None:
        """Stops the epoch clock, then (outside it) runs `score` = (name, scorer) on the test split,
        logs the epoch with `metrics` in their order and the ETA, and saves the record."""
        seconds = self._clock.stop()
        self.losses.append(loss)
        if score is not None:
            name, scorer = score
            self._step_clock.start()
            value = scorer()
            self.scoring_seconds.append(self._step_clock.elapsed())
            self.test_metric.append(value)
            metrics = {**metrics, name: value}
        self.wall_at_epoch.append(self._wall.elapsed())
        done = len(self._clock.epoch_seconds)
        eta = eta_seconds(self._clock.epoch_seconds, self.epochs - done)
        shown = "  ".join(f"{name} {value:.4f}" for name, value in metrics.items())
        self._log(f"epoch {done}/{self.epochs}: {seconds:.3f} s  {shown}  ETA {eta:.0f} s")
        self._on_epoch()

    def steps(self, step: Callable[[], float], count: int) -> list[float]:
        """Runs `count` training steps and returns their losses. In the first epoch each step gets a progress
        line with its time and the epoch's ETA (the step times are for that line; the epoch clock measures)."""
        first = not self._clock.epoch_seconds
        losses: list[float] = []
        seconds: list[float] = []
        for done in range(1, count + 1):
            self._step_clock.start()
            losses.append(step())
            seconds.append(self._step_clock.elapsed())
            if first:
                self.first_epoch_steps.append(seconds[-1])
                left = eta_seconds(seconds, count - done)
                self._log(f"  epoch 1 step {done}/{count}: loss {losses[-1]:.4f}  {seconds[-1]:.1f} s  "
                          f"epoch ETA {left:.0f} s")
        return losses
