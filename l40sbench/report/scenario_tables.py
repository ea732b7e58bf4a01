"""LoadGen's scenario entries of a record as tables: LoadGen's verdict and MLPerf's rules apart, an accuracy
run's score beside each sample answered alone, the reasons for each INVALID below."""

from __future__ import annotations

from collections.abc import Sequence

from l40sbench.core.text import format_table
from l40sbench.report.cells import number


def scenario_entries(result: dict, scenario: str, runtimes: Sequence[str] | None = None) -> list[dict]:
    """The record's LoadGen entries of one scenario (of `runtimes` only, when given), by runtime then batch,
    workers and rate."""
    entries = [e for e in (result.get("inference") or {}).get("scenarios") or ()
               if e["scenario"] == scenario and (runtimes is None or e["runtime"] in runtimes)]
    return sorted(entries, key=lambda e: (e["runtime"], e["settings"].get("batch", 1), e["settings"].get("workers", 1),
                                          e["settings"].get("target_qps") or 0))


def scenario_title(result: dict, scenario: str) -> str:
    what = {"single-stream": "one query of one sample at a time; LoadGen's figure is the early-stopping p90",
            "multi-stream": "one query of N samples at a time; LoadGen's figure is the early-stopping p99 of a query",
            "server": "Poisson arrivals at the offered rate; VALID when 99 % of queries meet the bound",
            "offline": "every sample in one query; LoadGen's figure is samples/s"}[scenario]
    return f"LoadGen {scenario}: {result['base']} ({what})"


SCENARIO_HEADERS = ("runtime", "precision", "batch", "workers", "mode", "LoadGen", "MLPerf rules", "samples/s", "p50 ms",
                    "p90 ms", "p99 ms", "early-stop est. ms", "% peak", "queries")


def mlperf_cell(entry: dict) -> str:
    """MLPerf's closed-division verdict apart from LoadGen's: compliant, or how many rules the test misses."""
    block = entry.get("mlperf")
    if not block:
        return "-"
    return "compliant" if block["compliant"] else f"not ({len(block['unmet'])} unmet)"


def scenario_cells(result: dict, scenario: str, runtimes: Sequence[str] | None = None) -> tuple[
        tuple[str, ...], list[list], list[str]]:
    """(headers, one line per test of `scenario`, LoadGen's reasons for each INVALID)."""
    entries = scenario_entries(result, scenario, runtimes)
    extra = {"server": ("bound ms", "offered/s", "max VALID/s"), "multi-stream": ("samples/query",)}.get(scenario, ())
    lines, reasons = [], []
    for e in entries:
        settings, latency = e["settings"], e.get("latency_ms") or {}
        estimates = (e.get("early_stopping") or {}).get("estimates_ms") or {}
        estimate = estimates.get("p90" if scenario == "single-stream" else "p99")
        share = (e.get("utilisation") or {}).get("share")
        row = [e["runtime"], e.get("precision") or "-", settings.get("batch", 1), settings.get("workers", 1),
               e.get("mode", "performance"), e["result"], mlperf_cell(e), number(e.get("samples_per_second")), number(latency.get("p50")),
               number(latency.get("p90")), number(latency.get("p99")), number(estimate),
               "-" if share is None else f"{100 * share:.1f}", e.get("queries") or "-"]
        if scenario == "server":
            search = e.get("search")
            row += [number(settings.get("latency_bound_ms")), number(e.get("scheduled_samples_per_second")),
                    "-" if search is None else number(search["max_valid_qps"])]
            if search and search.get("why_zero"):
                reasons.append(f"{e['runtime']}: max VALID rate 0: {search['why_zero']}")
        elif scenario == "multi-stream":
            row.append(settings.get("samples_per_query"))
        lines.append(row)
        if e["result"] != "VALID" and e.get("reasons"):
            reasons.append(f"{e['runtime']} batch {settings.get('batch', 1)}: INVALID: {'; '.join(e['reasons'][:3])}")
        accuracy = e.get("accuracy") or {}
        if accuracy.get("figure"):
            verdict = "the same as" if accuracy.get("matches_probe") else "NOT"
            reasons.append(f"{e['runtime']} batch {settings.get('batch', 1)}: accuracy run: {accuracy['figure']} "
                           f"{number(accuracy.get('value'))} from LoadGen's log, {verdict} "
                           f"{number(accuracy.get('probe'))} (each sample answered alone)")
        if e.get("mlperf") and not e["mlperf"]["compliant"]:
            unmet = [e["mlperf"]["checks"][name]["rule"] for name in e["mlperf"]["unmet"]]
            reasons.append(f"{e['runtime']} batch {settings.get('batch', 1)}: MLPerf rules not met: {'; '.join(unmet)}")
    return SCENARIO_HEADERS + extra, lines, reasons


def scenario_table(result: dict, scenario: str, runtimes: Sequence[str] | None = None) -> str:
    """One line per test of `scenario` in the record, LoadGen's reasons for each INVALID below."""
    headers, lines, reasons = scenario_cells(result, scenario, runtimes)
    if not lines:
        return "(no test of this scenario finished)"
    return "\n".join([format_table(headers, lines), *(f"  {reason}" for reason in reasons)])


def audit_lines(record: dict, load) -> tuple[list[str], bool]:
    """The lines for the audits of the last infer call (`load`: its LoadConfig, or None), and whether any that
    MLPerf asks of the run's model FAILed."""
    from l40sbench.loadgen.audits import line

    if load is None:
        return [], False
    runtimes = record["notes"]["infer_runs"][-1]["runtimes"]
    audits = [a for a in (record["inference"] or {}).get("audits") or ()
              if "verdict" in a and (a["runtime"] in runtimes or "all" in runtimes) and a["test"] in load.audits
              and a.get("scenario_name") in load.scenarios]
    lines = ["", "MLPerf compliance audits (checked as MLCommons' verification checks them; never results):"] if audits else []
    return lines + [f"  {audit['runtime']:<12} {line(audit)}" for audit in audits], any(
        a["verdict"] == "FAIL" and a.get("required", True) for a in audits)
