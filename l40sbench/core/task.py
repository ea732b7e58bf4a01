"""What the harness asks of a task (`Task`), and the shapes a task hands back to it.

A task module (classify/task.py, detect/task.py) defines `TASK`, an object with the methods of `Task`;
harness.tasks registers it by name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from l40sbench.core.results import DatasetInfo, InferenceResult, RuntimeResult
from l40sbench.core.text import Log

Save = Callable[[dict], None]


@dataclass(frozen=True)
class Data:
    """A task's loaded data: the record's `dataset` block, and what the task trains and probes on."""

    info: DatasetInfo
    splits: Any
    feed: Any = None  # what the run's input path reads besides the splits (classify's train files), or None


@dataclass(frozen=True)
class Built:
    """A task's model, ready to train, with what the record says of it.

    `devices` is the record's devices block the harness made (a task adds its own facts to it);
    `notes` is the record's notes, which a task may add to while it runs.
    """

    base: str
    model: Any  # its trainable_weights are compared before and after training
    config: Any  # the effective config (the base's size, the epochs a default chose), as the record holds it
    weights: str
    model_info: dict
    devices: dict
    epochs: int
    train_images_per_epoch: int
    training_line: str  # the progress line that opens training
    notes: dict = field(default_factory=dict)
    test_metric: str = ""  # the metric scored after each epoch, outside the epoch clock ("" for none)
    state: Any = None  # what the task's train, probe and export need besides the model


@dataclass(frozen=True)
class Probe:
    """The latency probe's figures and the accuracy of the same predictions; `outputs` is what the
    runtimes tail needs of them (None: nothing was predicted)."""

    inference: InferenceResult
    accuracy: dict
    outputs: Any = None


@dataclass(frozen=True)
class Flops:
    """The FLOP count utilisation divides by the peak: one forward, and training per image, either counted
    from the traced training step (`train_gflops`) or as a multiple of the forward."""

    forward_gflops: float | None  # None: the counter gave no usable count (`counter` says why)
    train_flops_per_forward: int
    train_convention: str
    counter: str | None = None  # the counter's name, where the record names it
    train_gflops: float | None = None  # GFLOP per trained image, counted; None: the multiple of the forward

    @property
    def train_gflops_per_image(self) -> float | None:
        if self.train_gflops is not None or not self.forward_gflops:
            return self.train_gflops
        return self.forward_gflops * self.train_flops_per_forward


@dataclass(frozen=True)
class BoundParts:
    """What the harness needs to time a run's input and its training step apart (harness.bound): a fresh pass
    of the run's own input pipeline, and its own compiled step on a batch already made."""

    input_path: str  # the input path the run trained through, as the record names it
    # the pipeline at N threads (None: the run's), made once as the run made it: its epochs one after another,
    # each an iterator of (images, batch)
    batches: Callable[[int | None], Iterator[Iterator[tuple[int, Any]]]]
    place: Callable[[Any], Any] | None  # a batch as the step takes it, on the device, before any clock starts
    step: Callable[[Any], Any] | None  # one training step (the run's own compiled step) on a placed batch
    batches_per_epoch: int
    threads: int | None  # the pipeline's threads in the run; None: not the suite's to set (then no per-core rate)
    restore: Callable[[], None]  # the trained weights (and optimizer state) back, after the steps alone
    step_why: str = ""  # with step None: why the step is not timed alone (its rate is then inferred)


class Task(Protocol):
    """One kind of benchmark. The harness calls these in order; none of them reads a clock."""

    name: str
    keras3: bool  # builds with Keras 3 (`import keras`), so the run's --backend is selected first
    # which of core.timing.probe_interleaved's calls the record's inference figure is (None: a plain probe)
    inference_call: str | None

    def check(self, config) -> Any:
        """The config with its defaults resolved, once flags and files are checked (UserError), before any work."""

    def load(self, config, log: Log) -> Data:
        """Both splits, --limit applied."""

    def build(self, config, data: Data, placement, devices: dict, log: Log) -> Built:
        """The model under the placement's scope, compiled, weights loaded."""

    def train(self, built: Built, data: Data, loop) -> None:
        """Trains built.epochs epochs, marking each epoch's start and end on `loop` (harness.epochs.EpochLoop)."""

    def after_training(self, built: Built, train: dict, log: Log) -> None:
        """Notes the finished training gives (a projection), outside every clock."""

    def probe(self, built: Built, data: Data, sync, log: Log) -> Probe:
        """The test images one at a time through the model, warm-up excluded, and their accuracy."""

    def flops(self, built: Built, probe: Probe) -> Flops:
        """The FLOP count utilisation uses."""

    def export(self, built: Built, data: Data, probe: Probe, log: Log) -> tuple[RuntimeResult, Any] | None:
        """Saves the trained model; (tf's reference row, the runtimes' workload), or None where no runtime runs."""

    def model_path(self, run_dir: Path, record: dict) -> Path:
        """Where a finished run keeps its model (UserError: it keeps none)."""

    def reload(self, record: dict, model: Path, log: Log) -> tuple[RuntimeResult, Any]:
        """(tf's reference row, the workload) for `infer`: the saved model reloaded and probed again on tf."""

    def bound_parts(self, built: Built, data: Data) -> BoundParts:
        """The parts harness.bound times: the run's input pipeline afresh and its compiled step."""

    def check_scenarios(self, load, record: dict) -> None:
        """Raises UserError where `infer --scenario` cannot run these LoadGen settings on this task's model."""
