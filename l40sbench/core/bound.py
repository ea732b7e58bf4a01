"""What bounds a run's training: the host's input or the device's compute, judged from three rates, and how
many host cores would feed the device. Pure arithmetic on numbers (the harness measures them).

The three rates, each in images/s: the input pipeline alone (the run's own pipeline iterated for an epoch's
batches without the model), the step alone (the run's compiled training step on one batch already made, each
step synchronised), and the run's steady rate (images per steady epoch over its median time).

The rule (docs/trust.md, "What bounds a run"):
- on an accelerator the input runs on the host while the device steps, so the two overlap and the run can go
  no faster than the slower of them: expected = min(input, step);
- on a CPU the input and the step share the same cores, so they take turns: expected = 1 / (1/input + 1/step),
  and the stage with the larger share of an image's time bounds the run;
- the verdict is that stage (`input` or `compute`) when the steady rate is within TOLERANCE of expected;
  below that, `neither`, with the share lost (on an accelerator, the overlap the run lost).
"""

from __future__ import annotations

import math

TOLERANCE = 0.20
RULE = ("input alone, step alone and steady rates; expected = min(input, step) on an accelerator (the two "
        "overlap), 1 / (1/input + 1/step) on a CPU (they share its cores); the slower stage bounds the run when "
        f"the steady rate is within {100 * TOLERANCE:.0f} % of expected, else neither (docs/trust.md)")


def expected_rate(input_rate: float, step_rate: float, shared_cores: bool) -> float:
    """The steady rate the two stages allow: overlapped on an accelerator, in turns on shared cores.

    >>> expected_rate(100.0, 300.0, False), expected_rate(100.0, 300.0, True)
    (100.0, 75.0)
    """
    if shared_cores:
        return 1.0 / (1.0 / input_rate + 1.0 / step_rate)
    return min(input_rate, step_rate)


def verdict(input_rate: float, step_rate: float, steady_rate: float, shared_cores: bool) -> dict:
    """The verdict block's figures: expected rate, the input's share of an image's time, what bounds the run.

    >>> verdict(50.0, 400.0, 49.0, False)["verdict"]
    'input'
    >>> verdict(900.0, 400.0, 250.0, False)["verdict"]
    'neither: overlap lost 38 %'
    """
    if min(input_rate, step_rate, steady_rate) <= 0:
        raise ValueError(f"rates must be positive. Received: input={input_rate}, step={step_rate}, "
                         f"steady={steady_rate}")
    expected = expected_rate(input_rate, step_rate, shared_cores)
    share = (1.0 / input_rate) / (1.0 / input_rate + 1.0 / step_rate)
    lost = 1.0 - steady_rate / expected
    slower = "input" if input_rate < step_rate else "compute"
    if lost <= TOLERANCE:
        said = slower
    elif shared_cores:
        said = f"neither: {100 * lost:.0f} % of the steady time is in neither stage"
    else:
        said = f"neither: overlap lost {100 * lost:.0f} %"
    return {"expected_images_per_second": expected, "input_share_percent": 100.0 * share,
            "steady_over_expected": steady_rate / expected, "slower_stage": slower, "verdict": said,
            "shared_cores": shared_cores}


def inferred_step(input_rate: float, steady_rate: float, shared_cores: bool) -> float | None:
    """The step's rate that the input alone and the steady rate imply, where the step could not be timed alone
    (several replicas step together): on shared cores the times add, 1/step = 1/steady - 1/input (None where the
    run was not slower than its input alone); on an accelerator the run goes at its slower stage, so the step's
    rate is the steady rate where the run is clearly slower than its input (None where it went at its input's
    rate: the step is at least that fast).

    >>> inferred_step(400.0, 100.0, True), inferred_step(400.0, 100.0, False), inferred_step(400.0, 390.0, False)
    (133.33333333333334, 100.0, None)
    """
    if shared_cores:
        return 1.0 / (1.0 / steady_rate - 1.0 / input_rate) if steady_rate < input_rate else None
    return steady_rate if steady_rate < (1.0 - TOLERANCE) * input_rate else None


def verdict_without_step(input_rate: float, steady_rate: float, shared_cores: bool) -> dict:
    """verdict() where the step was not timed alone: on the step inferred_step implies (a run that went at its
    input's rate is bound by it). Without the step's own rate, `neither` cannot be told from the slower stage."""
    step = inferred_step(input_rate, steady_rate, shared_cores)
    if step is not None:
        return {**verdict(input_rate, step, steady_rate, shared_cores), "step_inferred": True}
    return {"expected_images_per_second": input_rate, "input_share_percent": None,
            "steady_over_expected": steady_rate / input_rate, "slower_stage": "input", "verdict": "input",
            "shared_cores": shared_cores, "step_inferred": True}


def sizing(per_core_rate: float | None, all_threads_rate: float, host_threads: int, step_rate: float) -> dict:
    """How many host cores keep the device fed: the step's rate over the input's rate on one core (rounded up).
    Without a per-core rate (a path whose threads the suite does not set), whether this host's rate does.

    >>> sizing(40.0, 70.0, 2, 300.0)["cores_to_feed"]
    8
    """
    if per_core_rate is None:
        fed = all_threads_rate >= step_rate
        line = (f"the input path feeds {all_threads_rate:,.0f} images/s on this host (its threads not set by the "
                f"suite); the step takes {step_rate:,.0f} images/s: the input "
                + ("keeps this device fed" if fed else "does not keep this device fed"))
        return {"per_core_images_per_second": None, "cores_to_feed": None, "line": line}
    cores = max(1, math.ceil(step_rate / per_core_rate))
    line = (f"the input path feeds {per_core_rate:,.0f} images/s per core; the step takes {step_rate:,.0f} "
            f"images/s: about {cores} core{'s' if cores > 1 else ''} keep{'' if cores > 1 else 's'} this device fed")
    if cores > host_threads:
        line += f" (this host has {host_threads}: {all_threads_rate:,.0f} images/s on all of them)"
    return {"per_core_images_per_second": per_core_rate, "cores_to_feed": cores, "line": line}


def lines(block: dict | None) -> list[str]:
    """The summary's two lines of a record's `bound` block (one saying why where it was not measured)."""
    if not block:
        return []
    if not block.get("measured"):
        return [f"bound: not measured ({block.get('why', '')})"]
    step = block["step_images_per_second"]
    said = (f"step alone {step:,.1f}" if not block.get("step_inferred") else
            f"step {step:,.1f} inferred" if step else "step not timed alone")
    return [f"bound by {block['verdict']} ({block['input_path']} input): input alone "
            f"{block['input_images_per_second']:,.1f} images/s, {said}, "
            f"steady {block['steady_images_per_second']:,.1f} (expected {block['expected_images_per_second']:,.1f}"
            + (", the two share the CPU's cores)" if block["shared_cores"] else ")"),
            f"sizing: {block['sizing']['line']}"]


def short(block: dict | None) -> str:
    """The `bound by` column's cell: the verdict's first word, or '-'."""
    if not block or not block.get("measured"):
        return "-"
    return block["verdict"].split(":")[0]
