"""detect's parts for harness.bound: Model Garden's training pipeline afresh at N threads, and the run's own
compiled train step on one parsed batch."""

from __future__ import annotations

import itertools

import numpy as np

from l40sbench.core.env import host_threads
from l40sbench.core.task import BoundParts, Built
from l40sbench.settings import DETECT_INPUT


def variables(thing) -> list:
    """A tf_keras model's or optimizer's variables (a property on one, a method on some optimizers)."""
    found = thing.variables
    return list(found() if callable(found) else found)


def bound_parts(built: Built, train_inputs) -> BoundParts:
    import tensorflow as tf

    trainer = built.state
    several = (f"{trainer.placement.replicas} replicas step together under Model Garden's Trainer"
               if trainer.on_batch is None else "")
    # only a step run alone changes the weights: replicas stepping together run none, so keep no copy for them
    saved = [] if several else [(v, np.array(v)) for v in [*variables(built.model), *variables(trainer.optimizer)]]

    def restore() -> None:
        for variable, value in saved:
            variable.assign(value)

    def epochs(threads: int | None):
        batches = iter(train_inputs(trainer.task, trainer.experiment, threads))  # repeated: an epoch is its steps
        while True:
            yield ((int(tf.shape(b[0])[0]), b) for b in itertools.islice(batches, trainer.steps_per_epoch))

    return BoundParts(input_path=DETECT_INPUT, batches=epochs,
                      place=None if several else (lambda b: tf.nest.map_structure(tf.identity, b)),
                      step=trainer.on_batch, batches_per_epoch=trainer.steps_per_epoch,
                      threads=built.config.input_threads or host_threads(), restore=restore, step_why=several)
