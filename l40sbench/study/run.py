"""Runs a study's plan: each step a normal run folder under the study's, one child process per step, the
study's state (study.json) written after every step, so a killed study resumes with only the steps it lacks.

A step counts as done when its folder holds a complete result.json. A step that fails (out of memory, a
crash, a bad flag) costs its row, which says why, and the study goes on. With a deadline (--budget), no step
starts whose estimate (scaled by how the finished steps compared to theirs) would cross it, and a step still
running at the deadline is interrupted as Ctrl-C would (it saves what it measured, complete: false), then
killed if it has not stopped within GRACE_SECONDS.
"""

from __future__ import annotations

import json
import signal
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
GRACE_SECONDS = 20  # an interrupted run saves its record and exits within a few seconds here
CUT = -2  # a runner's code for a step stopped at the deadline


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
    from l40sbench.core.child import last_error
    from l40sbench.errors import first_line

    text = log.read_text(errors="replace") if log.exists() else ""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    users = [line for line in lines if line.startswith(("error:", "l40sbench: error"))]
    return first_line(users[-1]) if users else last_error(text) or first_line(lines[-1] if lines else "no output")


def ended_by(code: int, log: Path) -> str:
    """Why a step's process failed, in a line: its exit code and its last error; for a process the kernel
    killed (SIGKILL: no error of its own), that its last line is where it was and the likeliest killer."""
    import os

    if code != -signal.SIGKILL:
        return f"exit {code}: {_last_error(log)}"
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (f"killed by SIGKILL at '{_last_error(log)}': most likely the kernel's out-of-memory killer (this host "
            f"has {memory:.0f} GiB; `dmesg` names it); a smaller --batch-size or --image-size needs less")


def pace(plan: Plan, outcomes: list[Outcome]) -> float:
    """How the finished steps' times compared to their estimates (the estimates' own error on this machine)."""
    ran = [(o.seconds, s.estimate_s) for o, s in zip(outcomes, plan.steps) if o.status == "ok" and o.seconds]
    return sum(a for a, _ in ran) / sum(e for _, e in ran) if ran else 1.0


def eta_seconds(plan: Plan, outcomes: list[Outcome], index: int) -> float:
    """The rest of the plan from step `index` on, its estimates scaled by pace()."""
    return pace(plan, outcomes) * sum(step.planned_s for step in plan.steps[index:])


def run_plan(plan: Plan, root: Path, state: dict, log: Callable[[str], None],
             runner: Callable[[list[str], Path, float | None], int] | None = None, deadline: float | None = None,
             clock: Callable[[], float] = time.perf_counter) -> list[Outcome]:
    """Runs every step not finished yet, within `deadline` (an instant on `clock`) where there is one; writes
    `state` to root/study.json after each."""
    runner = runner or _run_child
    outcomes: list[Outcome] = []
    count = len(plan.steps)
    for index, step in enumerate(plan.steps):
        folder = step_folder(root, index, step)
        prefix = f"study [{index + 1}/{count}] {step.name}"
        left = deadline - clock() if deadline is not None else None
        expected = pace(plan, outcomes) * step.estimate_s
        if finished(folder):
            outcomes.append(Outcome(step.name, "done earlier", None))
            log(f"{prefix}: done earlier ({folder.name}), kept")
        elif not step.fits:
            reason = f"not started: {step.memory}"
            outcomes.append(Outcome(step.name, "skipped", None, reason))
            log(f"{prefix}: {reason}")
        elif left is not None and expected > left:
            reason = (f"not started: its estimate ({duration(expected)}) would cross the deadline "
                      f"({duration(max(left, 0.0))} left)")
            outcomes.append(Outcome(step.name, "skipped", None, reason))
            log(f"{prefix}: {reason}")
        else:
            log(f"{prefix}: running (estimate {duration(step.estimate_s)}; study ETA "
                f"{duration(eta_seconds(plan, outcomes, index))}) ...")
            started = clock()
            code = runner([sys.executable, "-m", "l40sbench", *step.argv, "--output-dir", str(folder)], folder, left)
            seconds = clock() - started
            if code == CUT:
                reason = "stopped at the deadline; its partial record is kept (complete: false)"
                outcomes.append(Outcome(step.name, "cut", seconds, reason))
                log(f"{prefix}: {reason}")
            elif code == 0 and finished(folder):
                outcomes.append(Outcome(step.name, "ok", seconds))
                log(f"{prefix}: ok in {duration(seconds)}")
            else:
                reason = ended_by(code, folder / "log.txt")
                outcomes.append(Outcome(step.name, "failed", seconds, reason))
                log(f"{prefix}: FAILED ({reason}); the study goes on")
        state["steps"] = [{"name": o.name, "status": o.status, "seconds": o.seconds, "reason": o.reason}
                          for o in outcomes]
        write_atomic(root / STATE, json.dumps(state, indent=2))
    return outcomes


def _run_child(argv: list[str], folder: Path, timeout: float | None = None) -> int:
    """One step in a child process, its output in folder/log.txt; Ctrl-C stops the child and the study. Past
    `timeout` seconds the child is interrupted (SIGINT: it saves what it measured), killed after GRACE_SECONDS
    if it has not stopped, and CUT returned."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "log.txt", "w") as out:
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
        try:
            return process.wait(timeout=max(timeout, 0.0) if timeout is not None else None)
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            return CUT
        except KeyboardInterrupt:
            process.terminate()
            process.wait()
            raise
