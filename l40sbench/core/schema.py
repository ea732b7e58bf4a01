"""The shape of a result record, checked before anything reads it, derived from the result dataclasses.

report, compare and cost read records written by other versions, other
machines or other hands. A record with the right schema tag but the wrong
contents (rows that are not a list, a figure that is a string, a task that
does not match what the record holds) is refused here with the first field
that is wrong, rather than failing somewhere inside a table or a plot.
Each block's fields and kinds are those of its dataclass in core.results: a
field the class requires must be there, one with a default may be absent
(newer than the record); core.migrate has brought older shapes up first.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any

from l40sbench.core import results

TASKS = ("classify", "detect", "synthetic")


def _kind(hint) -> str:
    """The schema kind of a dataclass field's type: "number", "int", "str", "bool", "dict", "list" or
    "numbers" (a list of numbers), with "?" where None is allowed."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return _kind(args[0]) + "?"
    origin = typing.get_origin(hint) or hint
    if origin is tuple:
        return "numbers" if args and args[0] in (int, float) else "list"
    if dataclasses.is_dataclass(hint) or origin is dict:
        return "dict"
    return {float: "number", int: "int", str: "str", bool: "bool", list: "list"}[origin]


def fields_of(cls) -> dict[str, str]:
    """A result dataclass's fields as the schema checks them: name -> kind, a leading "~" where the field has
    a default (a record older than the field may lack it; one the class requires, every record has had)."""
    hints = typing.get_type_hints(cls)
    out = {}
    for f in dataclasses.fields(cls):
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        out[("" if required else "~") + f.name] = _kind(hints[f.name])
    return out


RUN = fields_of(results.RunResult)
TRAIN = fields_of(results.TrainResult)
INFERENCE = fields_of(results.InferenceResult)
RUNTIME = fields_of(results.RuntimeResult)
SCENARIO = fields_of(results.ScenarioResult)
SWEEP = fields_of(results.SweepResult)
ROW = fields_of(results.Row)


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
