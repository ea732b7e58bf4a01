"""Scaling of a fine-tune over device counts: the arithmetic, with no framework import.

A `--devices 1,2,4` run trains the same epoch (the same images) at each count with the batch per
device held fixed, so the global batch grows with N and the epoch has fewer steps: strong scaling of
the epoch. Efficiency = t(n0) / ((N / n0) x t(N)), n0 the smallest count run (usually 1): 1.0 is the
ideal, where N devices take 1/N of one device's epoch.
"""

from __future__ import annotations

from collections.abc import Sequence

from l40sbench.core.results import rate_epoch_seconds

HELD_FIXED = "strong scaling: the epoch's images and the batch per device held fixed (global batch = batch x N)"
SHARED_CPU = ("logical devices of one CPU share its cores: the ideal there is no speed-up (efficiency 1/N), "
              "and the figure shows what the multi-device path costs, not what more devices give")


def epoch_seconds(record: dict) -> float | None:
    """The epoch time scaling compares (core.results.rate_epoch_seconds)."""
    return rate_epoch_seconds(record.get("train") or {})


def scaling(records: Sequence[dict]) -> list[dict]:
    """Each record's `scaling` block, against the record of the fewest replicas.

    >>> [s["efficiency"] for s in scaling([{"devices": {"replicas": 1}, "train": {"steady_epoch_seconds": 10.0}},
    ...                                    {"devices": {"replicas": 2}, "train": {"steady_epoch_seconds": 6.25}}])]
    [1.0, 0.8]
    """
    if not records:
        return []
    basis = min(records, key=lambda r: r["devices"]["replicas"])
    n0, t0 = basis["devices"]["replicas"], epoch_seconds(basis)
    clocks = {_clock(record) for record in records}
    out = []
    for record in records:
        n, t = record["devices"]["replicas"], epoch_seconds(record)
        block = {"kind": "strong", "held_fixed": HELD_FIXED, "basis_devices": n0, "devices": n,
                 "epoch_seconds": t, "basis_epoch_seconds": t0, "epoch_seconds_from": _clock(record),
                 "speedup": None, "efficiency": None}
        if len(clocks) > 1:
            block["not_computed"] = MIXED_CLOCKS
        elif t and t0:
            block["speedup"] = t0 / t
            block["efficiency"] = t0 / (n / n0 * t)
        if "CPU" in str(record["devices"].get("kind", "")):
            block["note"] = SHARED_CPU
        out.append(block)
    return out


STEADY, FIRST = "steady epochs (2..N)", "first epoch (tracing included)"
MIXED_CLOCKS = ("the counts' epoch times are of different clocks (steady epochs at some, the first epoch with its "
                "tracing at others): no speed-up is drawn between them; train 2 epochs or more at every count")


def _clock(record: dict) -> str:
    return STEADY if (record.get("train") or {}).get("steady_epoch_seconds") else FIRST
