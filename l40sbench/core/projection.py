"""How long a protocol's N epochs would take at a run's pace, from fewer epochs: the first epoch once (tracing
and compilation land in it; on a GPU it can be tens of times a steady epoch) plus N - 1 steady epochs. Pure
arithmetic on a record's `train` block; the study's verdict and cost and the detector's note read it."""

from __future__ import annotations


def projection(train: dict, epochs: int) -> tuple[float, tuple[float, float] | None, str] | None:
    """(seconds, its 95 % interval or None, how) that `epochs` epochs would take at this run's pace: the first
    epoch (tracing and compilation) plus epochs - 1 steady epochs, the steady epoch from epochs 2..N, else
    from the first epoch's steady steps (its steps 2..n, as many as it had), else the first epoch alone."""
    from l40sbench.core.intervals import interval

    first = train.get("first_epoch_seconds")
    if not first:
        return None
    rest = epochs - 1
    steady_block = train.get("steady_epoch_interval") or {}
    if train.get("steady_epoch_seconds"):
        steady, ci = train["steady_epoch_seconds"], steady_block.get("mean_ci95")
        steady_n = train["epochs"] - 1
        how = f"first epoch + {rest} x the mean of {steady_n} steady epoch{'s' if steady_n != 1 else ''}"
    elif len(train.get("first_epoch_step_seconds") or ()) >= 2:
        steps = train["first_epoch_step_seconds"]
        pace = interval(steps[1:])
        steady = pace.mean * len(steps)
        ci = tuple(v * len(steps) for v in pace.mean_ci95) if pace.mean_ci95 else None
        how = f"first epoch + {rest} x an epoch of the first epoch's steady steps ({len(steps) - 1} of {len(steps)})"
    else:
        return first * epochs, None, f"the first epoch x {epochs} (no steady epoch or step to project from)"
    return first + rest * steady, (first + rest * ci[0], first + rest * ci[1]) if ci else None, how
