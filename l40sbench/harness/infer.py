"""`infer RUN_DIR`: a finished run's fine-tuned model timed again, on any runtime, without retraining.

The run folder holds the model (model.keras for classification, the SavedModel for detection) and
result.json; the test split is read again with the run's own settings. tf is timed again in this
process as the reference; the new rows replace that runtime's earlier rows in inference.runtimes,
and `inference` itself (the run's original tf figures) is left as it was.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from collections.abc import Callable
from pathlib import Path

from l40sbench.core.task import Save
from l40sbench.core.text import Log
from l40sbench.errors import UserError
from l40sbench.harness.tasks import TASKS, load_task
from l40sbench.loadgen.audit_runs import audit_key
from l40sbench.loadgen.scenarios import entry_key


def read_run(run_dir: Path) -> dict:
    """The finished classify or detect record in run_dir.

    Raises:
      UserError: no result.json, not a run of a pipeline, or not finished.
    """
    from l40sbench.core.reading import read_result_file

    if not run_dir.is_dir():
        raise UserError(f"run folder not found: {run_dir}")
    path = run_dir / "result.json"
    if not path.is_file():
        raise UserError(f"{run_dir} holds no result.json: not a run folder")
    (record,) = read_result_file(path)[:1]
    if record["task"] not in TASKS.names():
        raise UserError(f"{run_dir} is a {record['task']} run; infer takes a {' or '.join(TASKS.names())} run")
    if not record["complete"]:
        raise UserError(f"{run_dir} holds an unfinished run (complete: false): nothing was fine-tuned to the end")
    return record


def model_path(run_dir: Path, record: dict) -> Path:
    """Where the run's fine-tuned model is.

    Raises:
      UserError: the run was fine-tuned off tensorflow, or its folder holds no model.
    """
    backend = record["config"].get("backend") or record["env"]["backend"]  # detect's config names none
    if backend != "tensorflow":
        raise UserError(f"{run_dir} was fine-tuned on {backend}: infer times models trained on the tensorflow "
                        "backend (the other runtimes take them through TensorFlow's exporters)")
    return load_task(record["task"]).model_path(run_dir, record)


def merge(rows: tuple, new_rows: tuple, key: Callable[[dict], object] = lambda row: row["runtime"]) -> tuple:
    """Earlier rows no new row replaces (the same key: by default, of runtimes not run again), then the new rows."""
    again = {key(row) for row in new_rows}
    return tuple(row for row in rows if key(row) not in again) + tuple(new_rows)


def check_loadgen() -> None:
    """Raises UserError when MLPerf LoadGen is not installed (before any work)."""
    import importlib.util

    if importlib.util.find_spec("mlperf_loadgen") is None:
        raise UserError("--scenario needs MLPerf LoadGen: pip install 'l40sbench[loadgen]' (mlcommons-loadgen)")


def check_load(load, record: dict) -> None:
    """Raises UserError when `infer --scenario` cannot run on this run (before any work)."""
    check_loadgen()
    load_task(record["task"]).check_scenarios(load, record)


def infer(run_dir: Path, names: tuple[str, ...], precision: str, *, log: Log, save: Save, load=None) -> dict:
    """Times run_dir's model on `names`, then (given a loadgen LoadConfig) under each LoadGen scenario;
    saves the record after each row and each runtime's scenarios, and returns it.

    Raises:
      KeyboardInterrupt: after the rows and the finished scenarios were saved (notes.infer_runs marks the
        call complete: false).
    """
    from l40sbench.runtimes.registry import resolve

    runtimes = resolve(names)
    record = read_run(run_dir)
    model = model_path(run_dir, record)
    if load is not None:
        check_load(load, record)
    reference, work = load_task(record["task"]).reload(record, model, log)
    return measure(run_dir, record, reference, work, runtimes, precision, log=log, save=save, load=load, names=names)


def measure(run_dir: Path, record: dict, reference, work, runtimes: tuple[str, ...], precision: str, *, log: Log,
            save: Save, load, names: tuple[str, ...]) -> dict:
    """The rows of `runtimes` beside the reference row, then `load`'s LoadGen scenarios on the runtimes `names`
    asked for, merged into `record` (earlier rows of the same runtime replaced) and saved after each."""
    from l40sbench.peak.host import with_cpu_peak
    from l40sbench.runtimes.measure import measure_runtimes
    from l40sbench.runtimes.registry import RUNTIMES

    earlier = tuple((record["inference"] or {}).get("runtimes") or ())
    earlier_scenarios = tuple((record["inference"] or {}).get("scenarios") or ())
    call = {"date_utc": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "runtimes": list(runtimes), "runtime_precision": precision, "complete": False}
    if load is not None:
        call["scenarios"] = dataclasses.asdict(load)
    notes = dict(record.get("notes") or {})
    notes["infer_runs"] = list(notes.get("infer_runs") or []) + [call]
    earlier_audits = tuple((record["inference"] or {}).get("audits") or ())
    state: dict = {"rows": (), "entries": (), "audits": ()}

    def updated(**changes) -> dict:
        state.update(changes)
        rows = tuple(dataclasses.asdict(row) for row in state["rows"])
        entries = tuple(dataclasses.asdict(entry) for entry in state["entries"])
        inference = {**(record["inference"] or {}), "runtimes": list(merge(earlier, rows)),
                     "scenarios": list(merge(earlier_scenarios, entries, key=entry_key)),
                     "audits": list(merge(earlier_audits, state["audits"], key=audit_key))}
        return {**record, "notes": notes, "inference": inference}

    rows = measure_runtimes(runtimes, work, precision, run_dir / "runtimes", reference, log,
                            lambda rows: save(updated(rows=rows)))
    if load is not None:
        from l40sbench.loadgen.scenarios import run_scenarios

        # LoadGen runs on the runtimes asked for (tf only when named, or with all): tf's row is the reference.
        registered = RUNTIMES.names()  # not tf-cpu, tf timed again with the GPUs hidden: no LoadGen child loads it
        asked = tuple(row for row in rows if (row.runtime in names or "all" in names) and row.runtime in registered)
        run_scenarios(asked, load, record, work, run_dir, log,
                      lambda entries, audits: save(updated(entries=entries, audits=audits)))
    call["complete"] = True
    final = updated()
    final["env"] = with_cpu_peak(final.get("env") or {}, (row.get("device") for row in final["inference"]["runtimes"]))
    save(final)
    return final
