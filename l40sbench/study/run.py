"""Runs a study's plan: each step a normal run folder under the study's, one child process per step, the
study's state (study.json) written after every step, so a killed study resumes with only the steps it lacks.

A step counts as done when its folder holds a complete result.json. A step that fails (out of memory, a
crash, a bad flag) costs its row, which says why, and the study goes on.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from l40sbench.core.records import write_atomic
from l40sbench.errors import UserError
from l40sbench.study.plan import Plan, Step, duration

STATE = "study.json"
KIND = "l40sbench.study/1"


@dataclass(frozen=True)
class Outcome:
    """One step as it ended: ok, failed (with the reason), or done earlier (resumed past)."""

    name: str
    status: str
    seconds: float | None
    reason: str = ""


def step_folder(root: Path, index: int, step: Step) -> Path:
    return root / f"{index + 1:02d}-{step.name}"


def finished(folder: Path) -> bool:
    """Whether a step's folder holds a complete result (a run the study need not repeat)."""
    try:
        return json.loads((folder / "result.json").read_text()).get("complete") is True
    except (OSError, ValueError, AttributeError):
        return False


def read_state(root: Path) -> dict:
    """A study folder's state, for --resume. Raises UserError where the folder is not a study's."""
    try:
        state = json.loads((root / STATE).read_text())
    except FileNotFoundError:
        raise UserError(f"{root} is not a study folder (no {STATE}): --resume takes the folder a study wrote") from None
    except (OSError, ValueError) as exc:
        raise UserError(f"cannot read {root / STATE}: {exc}") from None
    if not isinstance(state, dict) or state.get("kind") != KIND:
        raise UserError(f"{root / STATE} is not a study's state (kind {state.get('kind') if isinstance(state, dict) else None!r})")
    return state


def _last_error(log: Path) -> str:
    """Why a step failed: the CLI's own one-line error, else the last exception line, else its last line."""
    from l40sbench.core.child import first_line, last_error

    text = log.read_text(errors="replace") if log.exists() else ""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    users = [line for line in lines if line.startswith(("error:", "l40sbench: error"))]
    return first_line(users[-1]) if users else last_error(text) or first_line(lines[-1] if lines else "no output")


def eta_seconds(plan: Plan, outcomes: list[Outcome], index: int) -> float:
    """The rest of the plan from step `index` on, its estimates scaled by how the finished steps compared to
    theirs (the estimates' own error, measured on this machine)."""
    ran = [(o.seconds, s.estimate_s) for o, s in zip(outcomes, plan.steps) if o.status == "ok" and o.seconds]
    factor = sum(a for a, _ in ran) / sum(e for _, e in ran) if ran else 1.0
    return factor * sum(step.estimate_s for step in plan.steps[index:])


def run_plan(plan: Plan, root: Path, state: dict, log: Callable[[str], None],
             runner: Callable[[list[str], Path], int] | None = None) -> list[Outcome]:
    """Runs every step not finished yet; writes `state` to root/study.json after each."""
    runner = runner or _run_child
    outcomes: list[Outcome] = []
    count = len(plan.steps)
    for index, step in enumerate(plan.steps):
        folder = step_folder(root, index, step)
        prefix = f"study [{index + 1}/{count}] {step.name}"
        if finished(folder):
            outcomes.append(Outcome(step.name, "done earlier", None))
            log(f"{prefix}: done earlier ({folder.name}), kept")
        else:
            log(f"{prefix}: running (estimate {duration(step.estimate_s)}; study ETA "
                f"{duration(eta_seconds(plan, outcomes, index))}) ...")
            started = time.perf_counter()
            code = runner([sys.executable, "-m", "l40sbench", *step.argv, "--output-dir", str(folder)], folder)
            seconds = time.perf_counter() - started
            if code == 0 and finished(folder):
                outcomes.append(Outcome(step.name, "ok", seconds))
                log(f"{prefix}: ok in {duration(seconds)}")
            else:
                reason = f"exit {code}: {_last_error(folder / 'log.txt')}"
                outcomes.append(Outcome(step.name, "failed", seconds, reason))
                log(f"{prefix}: FAILED ({reason}); the study goes on")
        state["steps"] = [{"name": o.name, "status": o.status, "seconds": o.seconds, "reason": o.reason}
                          for o in outcomes]
        write_atomic(root / STATE, json.dumps(state, indent=2))
    return outcomes


def _run_child(argv: list[str], folder: Path) -> int:
    """One step in a child process, its output in folder/log.txt; Ctrl-C stops the child and the study."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "log.txt", "w") as out:
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
        try:
            return process.wait()
        except KeyboardInterrupt:
            process.terminate()
            process.wait()
            raise
