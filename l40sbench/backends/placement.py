"""Where a run trains: the devices it uses (core.devices records, from its backend) and, on TensorFlow with
several devices, the tf.distribute strategy over them. Every backend's run holds one; TensorFlow's
(backends.tf_device.place) may carry a strategy, jax's and torch's train on their first device.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from l40sbench.core.devices import GPU, Device, kind_of


@dataclass(frozen=True)
class Placement:
    """Where training runs: a tf.distribute strategy over `count` local devices (x `workers` hosts), or None."""

    strategy: object | None
    used: tuple[Device, ...]
    workers: int = 1
    facts: dict = field(default_factory=dict)

    @property
    def count(self) -> int:
        return len(self.used)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.used)

    @property
    def kind(self) -> str:
        if kind_of(self.used) == GPU or self.count == 1:
            return kind_of(self.used)
        return "CPU (logical devices of one CPU: they share its cores)"

    @property
    def replicas(self) -> int:
        return self.count * self.workers

    def record(self, batch_per_device: int) -> dict:
        """The result's `devices` block: where training ran, and its global batch."""
        return {"count": self.count, "workers": self.workers, "replicas": self.replicas, "kind": self.kind,
                "names": list(self.names), "used": [d.to_dict() for d in self.used], **self.facts,
                "batch_per_device": batch_per_device,
                "global_batch": batch_per_device * self.replicas,
                "inference": f"one device ({self.names[0]}): the latency probe serves one image at a time"}

    def after_training(self, weights, before: list) -> dict:
        """What training did to the weights: the largest change from `before` (0.0: nothing learned) and,
        with a strategy, the largest difference between the replicas' copies (0.0: in sync)."""
        import numpy as np

        after = [np.asarray(w, np.float64) for w in weights]
        facts = {"trained_weight_max_change": max(
            (float(np.max(np.abs(a - b))) for a, b in zip(after, before) if b.size), default=0.0),
            # the same on every host of a multi-worker run, whose replicas each see only their own copy
            "trained_weight_checksum": float(sum(np.sum(a) for a in after))}
        if self.strategy is not None:
            facts["replica_weight_max_difference"] = replica_spread(weights)
        return facts

    def scope(self):
        import contextlib

        return self.strategy.scope() if self.strategy is not None else contextlib.nullcontext()


def replica_spread(variables) -> float:
    """The largest difference between the replicas' copies of any variable (0.0: in sync; one copy: 0.0)."""
    import numpy as np

    worst = 0.0
    for variable in variables:
        inner = getattr(variable, "value", None)  # Keras 3 wraps a tf.Variable; tf_keras weights are one (value())
        inner = variable if inner is None or callable(inner) else inner
        copies = getattr(inner, "values", None) or ()
        arrays = [np.asarray(copy) for copy in copies]
        for other in arrays[1:]:
            worst = max(worst, float(np.max(np.abs(other - arrays[0]))) if other.size else 0.0)
    return worst
