"""MLPerf Inference's closed-division rules that a LoadGen test can be checked against, and the check.

LoadGen's VALID says the test met the settings it was given; MLPerf's rules say which settings count. The
minimums are LoadGen's own mlperf.conf values for the nearest MLPerf benchmark (ResNet-50 for classify, RetinaNet
for detect; loadgen.mlperf_conf), the ones a submission may not lower: a run here is never a submission (its
model, data and accuracy target are not MLPerf's), and the block says how far its settings are from one.
"""

from __future__ import annotations

RULES = "MLPerf Inference closed division: LoadGen's mlperf.conf for {model}"


def _check(rule: str, value, met: bool) -> dict:
    return {"rule": rule, "value": value, "met": bool(met)}


def check(scenario: str, mlperf: dict, model: str, *, result: str, duration_s: float | None, queries: int | None,
          samples_per_query: int | None, performance_sample_count: int | None, latency_bound_ms: float | None,
          accuracy_run: bool = False) -> dict:
    """The entry's `mlperf` block: each rule with the test's value and whether it holds; `compliant` only
    where every one does. `mlperf`: mlperf.conf's settings for the scenario (mlperf_conf.block's "mlperf").

    >>> check("offline", {"min_duration_ms": 600000, "min_query_count": 24576,
    ...                   "performance_sample_count_override": 1024}, "resnet50", result="VALID", duration_s=60,
    ...       queries=1, samples_per_query=7000, performance_sample_count=139, latency_bound_ms=None)["compliant"]
    False
    """
    minimum_s = mlperf["min_duration_ms"] / 1000
    library = mlperf["performance_sample_count_override"]
    checks = {
        "loadgen_valid": _check("a VALID verdict from LoadGen", result, result == "VALID"),
        "duration": _check(f"the test's minimum duration is at least {minimum_s:g} s", duration_s,
                           (duration_s or 0) >= minimum_s),
        "performance_sample_count": _check(f"at least {library} samples in the library LoadGen draws from",
                                           performance_sample_count, (performance_sample_count or 0) >= library),
    }
    floor = mlperf["min_query_count"]
    if scenario == "offline":
        samples = (queries or 0) * (samples_per_query or 0)
        checks["samples"] = _check(f"at least {floor} samples in the query", samples, samples >= floor)
    else:
        checks["queries"] = _check(f"at least {floor} queries", queries, (queries or 0) >= floor)
    if scenario == "server":
        bound_ms, percentile = mlperf["server_target_latency_ns"] / 1e6, mlperf["server_target_latency_percentile"]
        checks["latency_bound"] = _check(f"a {bound_ms:g} ms bound at the {100 * percentile:g}th percentile",
                                         latency_bound_ms, latency_bound_ms == bound_ms)
    checks["accuracy_run"] = _check("an accuracy-mode run of the same system beside the performance run",
                                    accuracy_run, accuracy_run)
    return _block(checks, RULES.format(model=model))


def with_accuracy_run(block: dict) -> dict:
    """`block` once a matching accuracy-mode run of the same system exists."""
    return _block({**block["checks"], "accuracy_run": {**block["checks"]["accuracy_run"], "value": True, "met": True}},
                  block["rules"])


def _block(checks: dict, rules: str) -> dict:
    unmet = [name for name, entry in checks.items() if not entry["met"]]
    return {"rules": rules, "checks": checks, "compliant": not unmet, "unmet": unmet}
