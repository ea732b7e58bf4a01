"""MLPerf's compliance tests (mlcommons/inference, compliance/): their audit.config files and the checks their
verification scripts make, done by the suite on the same logs.

- TEST01: performance mode computes the real answer. LoadGen logs a sample of the responses of a performance run
  (accuracy_log_sampling_target); each must equal, byte for byte, that sample's response in the accuracy run; and
  the run's speed is within 10 % of the baseline's.
- TEST04: no caching. Every query is the same sample (performance_issue_same); the run may not be more than 10 %
  faster than the baseline.
- TEST05: alternate seeds. LoadGen's test05_* seeds from mlperf.conf (LoadGen reads the test05 switch from
  mlperf.conf alone, so the suite sets it itself); the speed within 5 % of the baseline's. MLPerf dropped it in
  late 2024; it still says whether a figure depends on one schedule of samples.

The speed is MLCommons' own: the early-stopping latency estimate for single- and multi-stream (as a rate, 1e9 / ns),
samples per second for offline and server. Their 10 % (5 %) become 20 % where a single-stream latency is at most
0.2 ms or a multi-stream one at most 1.6 ms. The suite runs the baseline and the audit in turns and judges the
median of the paired ratios, so a host drifting between two runs moves both sides of a pair, and a host that
changes speed within a pair spoils that pair alone.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from l40sbench.loadgen.summary import DETAIL, read_detail

AUDIT_CONFIG = "audit.config"
HEADER = "# l40sbench's copy of MLCommons' {test} audit.config (compliance/{test})\n"
# MLCommons' TEST01 samples the performance run's responses at this target count, per model (compliance/TEST01/
# <model>/audit.config; resnet50's is the folder's own).
TEST01_SAMPLING_TARGET = {"resnet50": 4096, "retinanet": 256, "yolo": 64}
TEST01_SEED = 720381539243781796
SCENARIO_KEYS = ("SingleStream", "MultiStream", "Offline", "Server")
TOLERANCE = {"TEST01": 0.10, "TEST04": 0.10, "TEST05": 0.05}
# The models MLPerf's submission checker asks TEST04 of (tools/submission: models_TEST04, resnet among them): a
# detector is exempt, RetinaNet and YOLO alike (compliance/TEST04/README.md: its NMS costs differ by sample).
TEST04_REQUIRED_OF = ("resnet50",)
RELAXED = 0.20
RELAXED_BELOW_NS = {"SingleStream": 200_000, "MultiStream": 1_600_000}  # at or under this latency: 20 %
RESULT_FIELD = {"SingleStream": "early_stopping_latency_ss", "MultiStream": "early_stopping_latency_ms",
                "Offline": "result_samples_per_second", "Server": "result_completed_samples_per_sec"}


def config_text(test: str, model: str) -> str | None:
    """The audit.config LoadGen reads for `test` (None for TEST05: LoadGen takes its switch from mlperf.conf)."""
    if test == "TEST01":
        return HEADER.format(test=test) + ("*.*.mode = 2\n"
                                           f"*.*.accuracy_log_rng_seed = {TEST01_SEED}\n"
                                           f"*.*.accuracy_log_sampling_target = {TEST01_SAMPLING_TARGET[model]}\n")
    if test == "TEST04":
        return HEADER.format(test=test) + "".join(
            f"*.{s}.mode = 2\n*.{s}.performance_issue_unique = 0\n*.{s}.performance_issue_same = 1\n"
            f"*.{s}.performance_issue_same_index = 3\n" for s in SCENARIO_KEYS)
    return None


def identify(text: str) -> str:
    """Which compliance test an audit.config's settings are: TEST01, TEST04, TEST05, or 'an audit' with its keys."""
    keys = {line.split("=", 1)[0].strip().rsplit(".", 1)[-1] for line in text.splitlines()
            if "=" in line and not line.lstrip().startswith("#")}
    if keys & {"accuracy_log_sampling_target", "accuracy_log_probability"}:
        return "TEST01"
    if "performance_issue_same" in keys:
        return "TEST04"
    if "test05" in keys:
        return "TEST05"
    return f"an audit of {', '.join(sorted(keys)) or 'no settings'}"


def speed(folder: Path) -> tuple[str, float | None, str]:
    """(LoadGen's scenario, the run's speed as MLCommons reads it, higher faster, or None; why it does not count:
    '' where LoadGen called the run VALID)."""
    detail = read_detail((folder / DETAIL).read_text()) if (folder / DETAIL).is_file() else {}
    scenario = str(detail.get("effective_scenario", ""))
    value = detail.get(RESULT_FIELD.get(scenario, ""))
    why = "" if detail.get("result_validity") == "VALID" else (
        f"{folder.parent.name}/{folder.name} is not VALID for LoadGen"
        + (f" ({str(detail['result_invalid_reason']).strip()})" if detail.get("result_invalid_reason") else ""))
    if value is None or not float(value) > 0:
        return scenario, None, why or f"{folder.parent.name}/{folder.name} states no {RESULT_FIELD.get(scenario)}"
    value = float(value)
    return scenario, (1e9 / value if scenario in RELAXED_BELOW_NS else value), why


def tolerance(test: str, scenario: str, baseline_speed: float) -> float:
    bound_ns = RELAXED_BELOW_NS.get(scenario)
    return RELAXED if bound_ns and 1e9 / baseline_speed <= bound_ns else TOLERANCE[test]


def compare_responses(accuracy_log: Path | None, sampled_log: Path) -> dict:
    """TEST01's accuracy check: each response logged in performance mode against the accuracy run's response for
    the same sample, whole (MLCommons' default compares the first byte); with no accuracy log (its run did not
    finish), every sampled response is missing from it."""
    reference = {}
    for entry in json.loads(accuracy_log.read_text()) if accuracy_log else ():
        reference.setdefault(entry["qsl_idx"], entry["data"])
    sampled = json.loads(sampled_log.read_text()) if sampled_log.is_file() else []
    matched = sum(1 for entry in sampled if reference.get(entry["qsl_idx"]) == entry["data"])
    missing = sum(1 for entry in sampled if entry["qsl_idx"] not in reference)
    empty = sum(1 for entry in sampled if not entry["data"])
    return {"sampled": len(sampled), "matched": matched, "mismatched": len(sampled) - matched - missing,
            "missing_from_accuracy_log": missing, "empty": empty}


def check(test: str, baselines: list[Path], audited: list[Path], accuracy_log: Path | None = None) -> dict:
    """One test's verdict from its turns: the paired speed ratios (audited over baseline), their median against the
    test's bound, and TEST01's responses; PASS or FAIL with why."""
    pairs, why, scenario = [], [], ""
    for base, test_run in zip(baselines, audited):
        scenario, base_speed, base_why = speed(base)
        _, test_speed, test_why = speed(test_run)
        if base_why or test_why:
            why += [text for text in (base_why, test_why) if text]
            continue
        pairs.append({"baseline": base_speed, "audited": test_speed, "ratio": test_speed / base_speed})
    ratio = statistics.median(p["ratio"] for p in pairs) if pairs else None
    bound = tolerance(test, scenario, pairs[0]["baseline"]) if pairs else TOLERANCE[test]
    if ratio is not None:
        fast = ratio >= 1 + bound if test == "TEST04" else abs(ratio - 1) > bound
        if fast:
            why.append(f"the audited run is {100 * (ratio - 1):+.1f} % against the baseline, past "
                       f"{'+' if test == 'TEST04' else '±'}{100 * bound:g} %")
    block = {"test": test, "scenario": scenario, "pairs": pairs, "ratio": ratio, "bound": bound,
             "ratio_range": [min(p["ratio"] for p in pairs), max(p["ratio"] for p in pairs)] if pairs else None}
    if test == "TEST01":
        responses = [compare_responses(accuracy_log, run / "mlperf_log_accuracy.json") for run in audited]
        block["responses"] = responses
        for turn, seen in enumerate(responses, start=1):
            if not seen["sampled"] or seen["mismatched"] or seen["missing_from_accuracy_log"]:
                why.append(f"turn {turn}: {seen['mismatched']} of {seen['sampled']} sampled responses differ from "
                           f"the accuracy run's ({seen['empty']} empty, {seen['missing_from_accuracy_log']} of "
                           "samples the accuracy run did not log)")
    return {**block, "verdict": "FAIL" if why or ratio is None else "PASS", "why": why}


def required(test: str, model: str) -> bool:
    """Whether MLPerf asks `test` of `model` (the benchmark whose settings the run took): TEST04 of resnet only."""
    return test != "TEST04" or model in TEST04_REQUIRED_OF


def line(block: dict) -> str:
    """One line for a test: PASS or FAIL with its figures, and where MLPerf does not ask the test of the model,
    that it does not (such a FAIL fails nothing)."""
    ratio = block.get("ratio")
    pairs = ", ".join(f"{pair['ratio']:.3f}" for pair in block["pairs"])
    sign = "+" if block["test"] == "TEST04" else "±"
    figures = (f"speed {ratio:.3f}x the baseline's (pairs {pairs}; bound {sign}{100 * block['bound']:g} %)"
               if ratio else "no speed")
    if block["test"] == "TEST01" and block.get("responses"):
        seen = block["responses"]
        figures += (f", {sum(s['matched'] for s in seen)} of {sum(s['sampled'] for s in seen)} sampled responses "
                    "equal to the accuracy run's")
    why = f": {'; '.join(block['why'])}" if block["verdict"] == "FAIL" and block["why"] else ""
    exempt = (f" (MLPerf does not ask {block['test']} of {block['model']}: a detector's NMS costs differ by sample)"
              if block.get("required") is False else "")
    return f"{block['test']} {block['scenario']}: {block['verdict']}, {figures}{why}{exempt}"
