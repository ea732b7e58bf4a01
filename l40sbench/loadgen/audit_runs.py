"""The audits of one `infer` call: the suite's, checked per test and scenario; an audit.config in the working
directory, said and recorded as that audit; the audit.config files a killed child left, removed."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from l40sbench.core.results import RuntimeResult, ScenarioResult
from l40sbench.core.text import Log
from l40sbench.loadgen import audits
from l40sbench.loadgen.child import RESULT_FILE
from l40sbench.loadgen.config import Job, LoadConfig
from l40sbench.runtimes.responses import ACCURACY_LOG


def audit_key(audit: dict) -> tuple:
    """What makes two audits the same: runtime, scenario, test, and the folder their logs are in."""
    return audit["runtime"], audit["scenario"], audit["test"], audit.get("folder") or audit.get("log_dir")


def remove_audit_configs(out: Path) -> None:
    """The audit.config files the child wrote beside its audits' logs, which a killed child leaves behind."""
    for stray in out.glob(f"*-audit/**/{audits.AUDIT_CONFIG}"):
        stray.unlink(missing_ok=True)


def audit_entry(row: RuntimeResult, entry: ScenarioResult, given_audit: tuple[Path, str]) -> dict:
    """A test an audit.config in the working directory changed: recorded as that audit, never as a result."""
    return {"test": given_audit[1], "source": f"{given_audit[0]} (an audit.config in the working directory)",
            "runtime": row.runtime, "scenario": entry.scenario, "result": entry.result, "log_dir": entry.log_dir,
            "entry": dataclasses.asdict(entry)}


def audit_said(audit: dict) -> str:
    return (f"{audit['scenario']}: {audit['test']} from {audit['source']}: LoadGen {audit['result']}; its logs in "
            f"{audit['log_dir']} for MLCommons' verification")


def check_audits(row: RuntimeResult, load: LoadConfig, out: Path, done: list[Job]) -> tuple[dict, ...]:
    """Each audit the suite ran, checked as MLCommons' verification checks it, per test and scenario."""
    checked = []
    for folder in dict.fromkeys(job.audit_folder for job in done):
        mine = [job for job in done if job.audit_folder == folder]
        turns = {part: [out / job.tag for job in mine if job.audit == part and (out / job.tag / RESULT_FILE).is_file()]
                 for part in ("baseline", *load.audits)}
        accuracy = out / folder / "results" / "accuracy" / ACCURACY_LOG
        model = mine[0].mlperf_model
        for test in load.audits:
            block = audits.check(test, turns["baseline"], turns[test], accuracy if accuracy.is_file() else None)
            checked.append({**block, "runtime": row.runtime, "precision_requested": row.precision_requested,
                            "scenario_name": mine[0].scenario, "folder": str(out / folder), "turns": len(turns[test]),
                            "model": model, "required": audits.required(test, model)})
    return tuple(checked)


def working_directory_audit(log: Log) -> tuple[Path, str] | None:
    """An audit.config in the working directory (MLCommons' own procedure for a compliance test): its path and
    which test its settings hold, said in one line; None where there is none."""
    path = Path.cwd() / audits.AUDIT_CONFIG
    if not path.is_file():
        return None
    test = audits.identify(path.read_text(errors="replace"))
    log(f"loadgen: {path} holds {test}'s settings: LoadGen reads it, so every test of this call is recorded as "
        f"{test} (inference.audits), not as a result")
    return path, test
