"""The shape of a result record, checked before anything reads it.

report, compare and cost read records written by other versions, other
machines or other hands. A record with the right schema tag but the wrong
contents (rows that are not a list, a figure that is a string, a task that
does not match what the record holds) is refused here with the first field
that is wrong, rather than failing somewhere inside a table or a plot.
Fields newer than a record (wall_seconds, utilisation) may be absent.
"""

from __future__ import annotations

from typing import Any

TASKS = ("classify", "detect", "synthetic")

# kind names: "number" (int or float, not bool), "int", "str", "dict", "list",
# "numbers" (a list of numbers); a trailing "?" allows null, a leading "~" allows absence.
RUN = {"base": "str", "config": "dict", "env": "dict", "train": "dict", "accuracy": "dict", "inference": "dict?",
       "~complete": "bool", "~utilisation": "dict", "~devices": "dict",
       "~scaling": "dict"}
TRAIN = {"epochs": "int", "epoch_seconds": "numbers", "total_seconds": "number?", "first_epoch_seconds": "number?",
         "steady_epoch_seconds": "number?", "~batch_size": "int?", "~wall_seconds": "number?",
         "~wall_seconds_at_epoch": "numbers", "~test_metric_per_epoch": "numbers", "~loss_per_epoch": "numbers"}
INFERENCE = {"mean_ms": "number?", "images_per_second": "number?", "~images_timed": "int", "~p50_ms": "number?",
             "~p90_ms": "number?", "~p99_ms": "number?", "~times_ms": "numbers", "~stages_mean_ms": "dict",
             "~runtimes": "list", "~scenarios": "list"}
SCENARIO = {"runtime": "str", "scenario": "str", "result": "str", "settings": "dict", "~reasons": "list",
            "~samples_per_second": "number?", "~latency_ms": "dict", "~queries": "int?", "~sut": "dict",
            "~search": "dict?"}
RUNTIME = {"runtime": "str", "status": "str", "~reason": "str", "~precision": "str", "~precision_requested": "str",
           "~size_mb": "number?", "~export_seconds": "number?", "~threads": "int?", "inference": "dict?",
           "~accuracy": "dict"}
SWEEP = {"config": "dict", "env": "dict", "rows": "list", "~complete": "bool"}
ROW = {"model": "str", "per_device_batch": "int", "devices": "int", "status": "str", "~mode": "str",
       "~precision": "str?", "~device_kind": "str", "images_per_second": "number?", "~step_ms_mean": "number?"}


def _is(value: Any, kind: str) -> bool:
    if kind.endswith("?") and value is None:
        return True
    kind = kind.rstrip("?")
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    return {
        "number": number,
        "int": isinstance(value, int) and not isinstance(value, bool),
        "str": isinstance(value, str),
        "bool": isinstance(value, bool),
        "dict": isinstance(value, dict),
        "list": isinstance(value, list),
        "numbers": isinstance(value, list) and all(
            v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in value),
    }[kind]


def _check_fields(value: Any, fields: dict[str, str], where: str) -> None:
    if not isinstance(value, dict):
        raise ValueError(f"{where} is not an object")
    for name, kind in fields.items():
        optional = name.startswith("~")
        name = name.lstrip("~")
        if name not in value:
            if optional:
                continue
            raise ValueError(f"{where} has no '{name}'")
        if not _is(value[name], kind):
            wanted = kind.rstrip("?").replace("numbers", "a list of numbers")
            raise ValueError(f"{where}.{name} is {value[name]!r:.40}, not {wanted}")


def check_record(record: Any) -> None:
    """Raises ValueError naming the first field of a result record that is missing or of the wrong kind."""
    if not isinstance(record, dict):
        raise ValueError("the record is not an object")
    task = record.get("task")
    if task not in TASKS:
        raise ValueError(f"task is {task!r}, not one of {', '.join(TASKS)}")
    if task == "synthetic":
        _check_fields(record, SWEEP, "the sweep")
        for index, row in enumerate(record["rows"]):
            _check_fields(row, ROW, f"rows[{index}]")
        return
    if "rows" in record:
        raise ValueError(f"a {task} record holds sweep rows (its task does not match its contents)")
    _check_fields(record, RUN, "the record")
    _check_fields(record["train"], TRAIN, "train")
    if record["inference"] is not None:
        _check_fields(record["inference"], INFERENCE, "inference")
        for index, row in enumerate(record["inference"].get("runtimes") or ()):
            where = f"inference.runtimes[{index}]"
            _check_fields(row, RUNTIME, where)
            if row["inference"] is not None:
                _check_fields(row["inference"], INFERENCE, f"{where}.inference")
        for index, entry in enumerate(record["inference"].get("scenarios") or ()):
            _check_fields(entry, SCENARIO, f"inference.scenarios[{index}]")
    for name, value in record["accuracy"].items():
        if value is not None and not isinstance(value, (int, float, dict)) or isinstance(value, bool):
            raise ValueError(f"accuracy.{name} is {value!r:.40}, not a number")
