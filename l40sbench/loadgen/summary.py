"""LoadGen's mlperf_log_summary.txt read into the figures a scenario entry records.

The summary is LoadGen's own verdict: VALID or INVALID, each constraint it checked, its
recommendations and the early-stopping estimates. Latencies are in ns there and in ms here; the
query count is in the detail log (`result_query_count`), which holds one JSON object per line.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

SUMMARY = "mlperf_log_summary.txt"
DETAIL = "mlperf_log_detail.txt"
_PERCENTILE = re.compile(r"^(\d+\.\d+) percentile latency \(ns\)$")
_ESTIMATE = re.compile(r"Early stopping (\d+(?:\.\d+)?)th percentile estimate: (\d+)")
_NS_TO_MS = 1e-6


def _number(text: str):
    try:
        value = float(text)
    except ValueError:
        return text
    return int(value) if value.is_integer() and "." not in text else value


def _percentile_name(value: str) -> str:
    """'99.90' -> 'p99.9', '50.00' -> 'p50'."""
    return "p" + f"{float(value):g}"


def read_summary(text: str) -> dict:
    """The summary's figures: result, reasons, rates, latency (ms), early stopping, parameters used."""
    fields: dict[str, str] = {}
    parameters: dict = {}
    notes: dict[str, list[str]] = {"Recommendations": [], "Early Stopping Result": []}
    section, block = "results", None
    for raw in text.splitlines():
        line = raw.strip()
        if line == "Test Parameters Used":
            section = "parameters"
        if line.endswith(":") and line[:-1] in notes:
            block = line[:-1]
            continue
        if block and line.startswith("*"):  # a new point of the block
            notes[block].append(line.lstrip("* "))
            continue
        if block and raw.startswith(" ") and " : " not in line and notes[block]:  # a point's next line
            notes[block][-1] += " " + line
            continue
        block = None
        key, sep, value = line.partition(":")
        if not sep or not value.strip():
            continue
        (parameters if section == "parameters" else fields).setdefault(key.strip(), value.strip())
    return _figures(fields, {key: _number(value) for key, value in parameters.items()}, notes)


def _figures(fields: dict, parameters: dict, notes: dict) -> dict:
    constraints = {key.replace(" satisfied", ""): value.lower() == "yes" for key, value in fields.items()
                   if key.endswith("satisfied")}
    latency = {}
    for key, value in fields.items():
        match = _PERCENTILE.match(key)
        if match:
            latency[_percentile_name(match.group(1))] = float(value) * _NS_TO_MS
    for name in ("Min", "Max", "Mean"):
        if f"{name} latency (ns)" in fields:
            latency[name.lower()] = float(fields[f"{name} latency (ns)"]) * _NS_TO_MS
    estimates = {_percentile_name(p): int(ns) * _NS_TO_MS
                 for p, ns in _ESTIMATE.findall(" ".join(notes["Early Stopping Result"]))}
    reasons = [f"{name} not satisfied" for name, ok in constraints.items() if not ok]
    reasons += notes["Recommendations"]
    if not constraints.get("Early stopping", True):
        reasons += notes["Early Stopping Result"]
    headline = next(((key, value) for key, value in fields.items()
                     if key.endswith("percentile latency (ns)") and "th " in key), None)
    return {
        "scenario": fields.get("Scenario"),
        "mode": fields.get("Mode"),
        "result": fields.get("Result is"),
        "constraints": constraints,
        "reasons": reasons,
        "samples_per_second": _rate(fields),
        "scheduled_samples_per_second": _float(fields.get("Scheduled samples per second")),
        "completed_samples_per_second": _float(fields.get("Completed samples per second")),
        "headline": None if headline is None else {"name": headline[0].replace(" (ns)", " (ms)"),
                                                   "ms": float(headline[1]) * _NS_TO_MS},
        "latency_ms": latency,
        "early_stopping": {"met": constraints.get("Early stopping"), "estimates_ms": estimates,
                           "lines": notes["Early Stopping Result"]},
        "parameters": parameters,
    }


def _float(value: str | None) -> float | None:
    return None if value is None else float(value)


def _rate(fields: dict) -> float | None:
    """Samples per second as the scenario states it: offline and server directly, single-stream as its
    query rate with LoadGen's overhead (one sample a query); multi-stream states none."""
    for key in ("Samples per second", "Completed samples per second", "QPS w/ loadgen overhead"):
        if key in fields:
            return float(fields[key])
    return None


def read_detail(text: str) -> dict:
    """The detail log's :::MLLOG entries as {key: value} (the last value of a repeated key)."""
    values = {}
    for line in text.splitlines():
        if line.startswith(":::MLLOG "):
            try:
                entry = json.loads(line[len(":::MLLOG "):])
            except json.JSONDecodeError:
                continue
            values[entry.get("key")] = entry.get("value")
    return values


def read_logs(folder: Path) -> dict:
    """The summary's figures with the query count, errors and warnings from the detail log."""
    figures = read_summary((folder / SUMMARY).read_text())
    detail = read_detail((folder / DETAIL).read_text()) if (folder / DETAIL).is_file() else {}
    figures["queries"] = detail.get("result_query_count")
    figures["samples_per_query"] = detail.get("generated_samples_per_query")
    figures["errors"] = detail.get("num_errors", 0)
    if detail.get("error_runtime"):  # why LoadGen stopped issuing, as in "Ending early: Max query count reached"
        figures["reasons"] = [*figures["reasons"], f"LoadGen: {detail['error_runtime']}"]
    figures["loadgen_version"] = str(detail.get("loadgen_version", "")).split(" @")[0] or None
    return figures
