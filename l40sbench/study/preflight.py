"""What a study's plan says before it runs: the device and peak its estimates rest on, where each task's data
and weights come from, the output folder and the cost; and, for a budget too small, what would fit."""

from __future__ import annotations

import os
from pathlib import Path

from l40sbench.study import plan as plans


def preflight_lines(plan: plans.Plan, root: Path, rests_on: str, data_classify: str | None,
                    data_detect: str | None, price: tuple[float, str] | None, started: bool) -> list[str]:
    """The plan's preflight, below its steps; `price` is (per minute, as given) where a price is given, and
    `started` says the study will run (not --plan)."""
    tasks = {step.task for step in plan.steps}
    lines = [f"  device: {rests_on}"]
    for task, flag, given in (("classify", "--data-classify", data_classify), ("detect", "--data-detect", data_detect)):
        if task in tasks or (task == "detect" and "infer" in tasks):
            lines.append(f"  {task} data: " + (f"{given} ({flag})" if given else
                                                f"the generated stand-in (made on first use; {flag} DIR for yours)"))
    if "classify" in tasks:
        lines.append("  weights: " + ("none, random (--quick): nothing is downloaded" if plan.quick else
                                      weights_line(plan)))
    lines.append(f"  output: {root}" + (" (written after every step)" if started else ""))
    if price is not None:
        per_minute, given = price
        lines.append(f"  cost: about {per_minute * plan.total_s / 60:.2f} for the plan's "
                     f"{plans.duration(plan.total_s)} at {given}")
    return lines


def weights_line(plan: plans.Plan) -> str:
    """Which classifiers' ImageNet weights Keras has cached, and which a run would download first."""
    cache = Path(os.environ.get("KERAS_HOME") or Path.home() / ".keras") / "models"
    files = [f.name.replace("_", "") for f in cache.glob("*notop*.h5")]
    bases = [step.argv[step.argv.index("--base") + 1] for step in plan.steps if step.task == "classify"]
    cached = [b for b in bases if any(f.startswith(b) for f in files)]
    fetched = [b for b in bases if b not in cached]
    return (f"ImageNet, from Keras' cache ({cache}) for {', '.join(cached) or 'none'}; "
            + (f"downloaded on first use for {', '.join(fetched)} (random, with a warning, where that fails)"
               if fetched else "nothing to download"))


def what_fits(plan: plans.Plan, machine: plans.Machine, budget_s: float, *, quick: bool,
              data_classify: str | None, data_detect: str | None, with_detect: bool,
              models: tuple[str, ...] = ()) -> str:
    """What a budget too small for `plan` could hold: --quick, or the first steps at their least."""
    from l40sbench.study.budget import smallest

    if not quick:
        small = plans.build(plan.study, machine, quick=True, data_classify=data_classify, data_detect=data_detect,
                            with_detect=with_detect, models=models)
        if small.total_s <= budget_s:
            return f"--quick fits (about {plans.duration(small.total_s)})"
    names, used = [], 0.0
    for step in smallest(plan, machine).steps:
        if step.fits and used + step.estimate_s <= budget_s:
            names.append(step.name)
            used += step.estimate_s
    return (f"--only {','.join(names)} fits at its least (about {plans.duration(used)})" if names
            else "no step fits it")
