"""MLPerf Inference's closed-division rules that a LoadGen test can be checked against, and the check.

LoadGen's VALID says the test met the settings it was given; MLPerf's rules say which settings count.
The figures are those of ResNet-50 (classification) and RetinaNet (detection), the closed division's
image benchmarks nearest to the two tasks: a run here is never a submission (its model, data and
accuracy target are not MLPerf's), and the block says how far its settings are from one.
"""

from __future__ import annotations

RULES = "MLPerf Inference closed division: ResNet-50's settings for classify, RetinaNet's for detect"
MIN_DURATION_S = 600.0
MIN_QUERIES = {"single-stream": 1024, "multi-stream": 270_336, "server": 270_336}
OFFLINE_MIN_SAMPLES = 24_576
PERFORMANCE_SAMPLE_COUNT = {"classify": 1024, "detect": 64}
SERVER_BOUND_MS = {"classify": 15.0, "detect": 100.0}
SERVER_PERCENTILE = 0.99


def _check(rule: str, value, met: bool) -> dict:
    return {"rule": rule, "value": value, "met": bool(met)}


def check(scenario: str, task: str, *, result: str, duration_s: float | None, queries: int | None,
          samples_per_query: int | None, performance_sample_count: int | None, latency_bound_ms: float | None,
          accuracy_run: bool = False) -> dict:
    """The entry's `mlperf` block: each rule with the test's value and whether it holds; `compliant` only
    where every one does.

    >>> check("offline", "classify", result="VALID", duration_s=60, queries=1, samples_per_query=7000,
    ...       performance_sample_count=139, latency_bound_ms=None)["compliant"]
    False
    """
    checks = {
        "loadgen_valid": _check("a VALID verdict from LoadGen", result, result == "VALID"),
        "duration": _check(f"the test's minimum duration is at least {MIN_DURATION_S:g} s", duration_s,
                           (duration_s or 0) >= MIN_DURATION_S),
        "performance_sample_count": _check(
            f"at least {PERFORMANCE_SAMPLE_COUNT[task]} samples in the library LoadGen draws from",
            performance_sample_count, (performance_sample_count or 0) >= PERFORMANCE_SAMPLE_COUNT[task]),
    }
    if scenario == "offline":
        samples = (queries or 0) * (samples_per_query or 0)
        checks["samples"] = _check(f"at least {OFFLINE_MIN_SAMPLES} samples in the query", samples,
                                   samples >= OFFLINE_MIN_SAMPLES)
    else:
        checks["queries"] = _check(f"at least {MIN_QUERIES[scenario]} queries", queries,
                                   (queries or 0) >= MIN_QUERIES[scenario])
    if scenario == "server":
        checks["latency_bound"] = _check(
            f"a {SERVER_BOUND_MS[task]:g} ms bound at the {100 * SERVER_PERCENTILE:g}th percentile", latency_bound_ms,
            latency_bound_ms == SERVER_BOUND_MS[task])
    checks["accuracy_run"] = _check("an accuracy-mode run of the same system beside the performance run",
                                    accuracy_run, accuracy_run)
    return _block(checks)


def with_accuracy_run(block: dict) -> dict:
    """`block` once a matching accuracy-mode run of the same system exists."""
    return _block({**block["checks"], "accuracy_run": {**block["checks"]["accuracy_run"], "value": True, "met": True}})


def _block(checks: dict) -> dict:
    unmet = [name for name, entry in checks.items() if not entry["met"]]
    return {"rules": RULES, "checks": checks, "compliant": not unmet, "unmet": unmet}
