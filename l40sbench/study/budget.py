"""A study's plan cut to fit a budget (--budget), and the least a plan can do. Pure, as study.plan is: the cuts
rebuild steps with plan's own builders at fewer epochs, steps or batch sizes."""

from __future__ import annotations

import math
from dataclasses import replace

from l40sbench.errors import UserError
from l40sbench.study.plan import (
    ARTICLE_EPOCHS,
    QUICK_SWEEP,
    SWEEP_FLOOR_STEPS,
    Machine,
    Plan,
    Step,
    classify_step,
    detect_step,
    duration,
    planned_total,
    sweep_step,
)


def smallest(plan: Plan, machine: Machine) -> Plan:
    """Every training step at one epoch, the sweep at its first batch size and SWEEP_FLOOR_STEPS, a model step as
    it is: the least a plan can do and still time an epoch, the images and a table."""
    steps = tuple(_rebuilt(step, 1, machine) if step.task in ("classify", "detect") else
                  _sweep_cut(step, machine, 0) if step.task == "synthetic" else step for step in plan.steps)
    return replace(plan, steps=steps)


def _sweep_cut(step: Step, machine: Machine, batches: int) -> Step:
    """The sweep at SWEEP_FLOOR_STEPS steps and its first `batches` batch sizes (0: the first only)."""
    argv = list(step.argv)
    sizes = tuple(int(b) for b in argv[argv.index("--batch-sizes") + 1].split(","))
    quick = argv[argv.index("--models") + 1] == ",".join(QUICK_SWEEP["models"])
    steps = min(int(argv[argv.index("--steps") + 1]), SWEEP_FLOOR_STEPS)
    return sweep_step(quick, machine, steps, sizes[:max(batches, 1)])


def _rebuilt(step: Step, epochs: int, machine: Machine) -> Step:
    argv = list(step.argv)
    base = argv[argv.index("--base") + 1]
    quick = "--limit" in argv
    data = argv[argv.index("--data") + 1] if "--data" in argv else None
    make = classify_step if step.task == "classify" else detect_step
    rebuilt = make(base, quick, data, machine, epochs)
    if step.task == "classify" and epochs < ARTICLE_EPOCHS["classify"]:
        rebuilt = replace(rebuilt, cut=f"{epochs} of the study's {ARTICLE_EPOCHS['classify']} epochs: the time per "
                                         "epoch is the study's figure; the total is projected")
    return rebuilt


def fit(plan: Plan, budget_s: float, machine: Machine) -> Plan:
    """The plan cut to fit `budget_s`, in this order: the detectors' epochs (down to 1); the sweep's steps (down
    to SWEEP_FLOOR_STEPS), then its largest batch sizes; the classifiers' epochs (down to 2, so a steady epoch
    is timed, then 1). Raises UserError when even the smallest plan (smallest) does not fit."""
    if plan.total_s <= budget_s:
        return plan
    if smallest(plan, machine).total_s > budget_s:
        raise UserError(f"the smallest {plan.study} plan (one epoch a model, the sweep at its first batch size) needs about "
                        f"{duration(smallest(plan, machine).total_s)}, over the budget of {duration(budget_s)}")
    steps, cuts = list(plan.steps), []
    for task, floor in (("detect", 1), ("synthetic", 0), ("classify", 2), ("classify", 1)):
        if task == "synthetic":
            _cut_sweep(steps, budget_s, machine, cuts)
            continue
        for i, step in enumerate(steps):
            if step.task != task or (step.epochs or 0) <= floor or not step.fits:
                continue
            over = planned_total(steps) - budget_s
            if over <= 0:
                break
            per_epoch = (step.estimate_s - _rebuilt(step, 1, machine).estimate_s) / max(step.epochs - 1, 1)
            epochs = max(floor, step.epochs - math.ceil(over / per_epoch)) if per_epoch > 0 else floor
            steps[i] = _rebuilt(step, epochs, machine)
            cuts.append(f"{step.name}: {step.epochs} -> {epochs} epochs")
    return replace(plan, steps=tuple(steps), cuts=tuple(cuts))


def _cut_sweep(steps: list[Step], budget_s: float, machine: Machine, cuts: list[str]) -> None:
    for i, step in enumerate(steps):
        if step.task != "synthetic":
            continue
        sizes = step.argv[step.argv.index("--batch-sizes") + 1].split(",")
        for keep in range(len(sizes), 0, -1):
            if planned_total(steps) <= budget_s:
                return
            steps[i] = _sweep_cut(step, machine, keep)
            cuts.append(f"{step.name}: {steps[i].cut}")
