"""A study's report.md: its table beside the studies' published rows, what it cost, the host sizing, the budget's
use, and the report folder of its finished steps' tables and plots."""

from __future__ import annotations

import json
from pathlib import Path

from l40sbench.core.text import Log


def write_report(root: Path, plan, outcomes, folders, price: float | None, budget: dict | None,
                 log: Log) -> tuple[Path, str]:
    """report.md of a study's folder (its table beside the studies' rows, cost, host sizing, budget) and the
    report folder of its finished steps' tables and plots; returns (report.md, the verdict printed)."""
    from l40sbench.core.records import write_atomic
    from l40sbench.core.text import markdown_table
    from l40sbench.reference import load as load_reference
    from l40sbench.report.document import write_report as write_tables
    from l40sbench.report.inputs import load_all
    from l40sbench.study import summary
    from l40sbench.study.plan import duration

    records = {}
    for folder, outcome in zip(folders, outcomes):
        if outcome.status != "failed" and (folder / "result.json").exists():
            record = json.loads((folder / "result.json").read_text())
            if outcome.status != "cut" or (record.get("train") or {}).get("epochs"):  # a cut step: what it finished
                records[outcome.name] = record
    reference = [*load_reference("l40s"), *load_reference("leadergpu-2017"), *load_reference("mlperf-v6.0")]
    rows = summary.rows([(o.name, records.get(o.name), o.reason) for o in outcomes], reference)
    inputs = [str(f) for f in folders if f.name.split("-", 1)[1] in records]
    references = (["l40s"] if plan.study in ("l40s", "all") else []) + (
        ["leadergpu-2017"] if plan.study in ("leadergpu", "all") else []) + (
        ["mlperf-v6.0"] if any(s.task == "infer" for s in plan.steps) else [])
    report = None
    if inputs:
        from l40sbench.report.page import missing_library, write_html

        loaded = load_all(inputs + references)
        report = write_tables(loaded, root / "report")
        if missing_library():  # the GPU machine has no plotly unless its wheel travelled: report.md still
            log(missing_library())
        else:
            write_html(loaded, root / "report")
    sweep_costs = summary.sweep_cost_rows(list(records.values()), price)
    spent = summary.cost_line(list(records.values()), price)
    sizing = summary.sizing_lines([(o.name, records.get(o.name), o.reason) for o in outcomes])
    verdict = [markdown_table(summary.HEAD, rows), "", *([spent, ""] if spent else []),
               *(["Host sizing (how many cores feed each step's device):", *sizing, ""] if sizing else [])]
    if sweep_costs:
        verdict += ["The LeaderGPU study's cost table from this machine's sweep"
                    + ("" if price else " (give --price to price it)") + ":", "",
                    markdown_table(summary.COST_HEAD, sweep_costs), ""]
    verdict += summary.model_lines(list(records.values()))
    verdict += [summary.first_result_line(list(records.values()))] + [f"budget cut: {cut}" for cut in plan.cuts]
    if budget:
        slack = budget["slack_s"]
        verdict.append(f"budget: {duration(budget['used_s'])} used of {duration(budget['budget_s'])} ("
                       + (f"{duration(slack)} to spare)" if slack >= 0 else f"over by {duration(-slack)})"))
    if plan.quick:
        verdict.append("--quick: tiny sizes and a few images, a check of the path; the ratios are not the study's work")
    text = [f"# Study {plan.study} on this machine", "", "## This machine beside the study", "", *verdict, "",
            f"The studies' tables and plots: {report.relative_to(root)}" if report else "No step finished."]
    path = root / "report.md"
    write_atomic(path, "\n".join(text) + "\n")
    return path, "\n".join(verdict)
