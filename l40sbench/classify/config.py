"""The effective settings of one classification run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from l40sbench.core.validate import require_at_least
from l40sbench.runconfig import RunConfig
from l40sbench.settings import INPUTS, check_backend_settings, check_cluster_settings


@dataclass(frozen=True)
class ClassifyConfig(RunConfig):
    """Every setting of a classification run; `image_size` None means the base's own size.

    Raises:
      ValueError: a value out of range, naming it ("Received: epochs=-3").
    """

    base: str = "xception"
    model: Path | None = None  # a user's own .keras file as the base (base is then the file's name)
    preprocess: str | None = None  # with model: its input scaling (modelfile.scaling's modes); None: decided
    epochs: int = 10
    weights: str = "imagenet"
    fine_tune: str = "head"
    xla: bool = False
    worker_hosts: tuple[str, ...] = ()  # MultiWorkerMirroredStrategy across these hosts; index 0 writes
    task_index: int = 0
    backend: str = "tensorflow"  # the Keras backend (l40sbench.backends); only tensorflow spreads over devices
    epoch_scoring: bool = True  # score the test split after each epoch (outside the studies' time per epoch)
    input: str = "cached"  # how training reads its images (classify.inputs.INPUTS)

    def check(self) -> None:
        require_at_least(self, ("image_size",), 1)
        check_backend_settings(self)
        check_cluster_settings(self)
        self._check_input()
        if self.fine_tune not in ("head", "all") and not (self.fine_tune.isdigit()):
            raise ValueError(
                f"fine_tune must be 'head', 'all' or a number of top layers. Received: fine_tune={self.fine_tune!r}"
            )

    @property
    def trainable_top_layers(self) -> int | None:
        """None: base frozen; -1: whole base trainable; N: the top N layers."""
        if self.fine_tune == "head":
            return None
        if self.fine_tune == "all":
            return -1
        return int(self.fine_tune) or None

    def _check_input(self) -> None:
        if self.input not in INPUTS:
            raise ValueError(f"input must be one of {', '.join(INPUTS)}. Received: input={self.input!r}")
        if self.input == "cached":
            if self.input_threads is not None:
                raise ValueError("--input-threads sets the threads of a pipeline the suite builds (--input files or "
                                 "generator); --input cached is batched by Keras from memory")
            return
        if str(self.data or "").startswith("tfds:"):
            raise ValueError(f"--input {self.input} reads image files: a TFDS set has none (use --input cached)")
        if self.worker_hosts:
            raise ValueError(f"--input {self.input} with --worker-hosts: training across hosts takes --input cached")
        if self.input == "generator" and self.devices > 1:
            raise ValueError(f"--input generator feeds one device (a Python PyDataset, as fit_generator did); "
                             f"{self.devices} devices take --input files or cached")
