"""The CI speed gate's verdicts, on pytest-benchmark JSON written here."""

import json
import time

import pytest

from benchmarks import gate
from tests.benchmarks.conftest import References


def _results(**figures):
    """A pytest-benchmark JSON with one benchmark per figure: name=(value, max, baseline)."""
    benchmarks = []
    for name, (value, maximum, baseline) in figures.items():
        entry = {"value": value, "what": f"what {name} is", "max": maximum, "baseline": baseline}
        benchmarks.append({"name": f"test_{name}", "extra_info": {"gates": {name: entry}}})
    return {"benchmarks": benchmarks, "machine_info": {"node": "here", "cpu": {"brand_raw": "x"}},
            "commit_info": {"id": "abc"}, "datetime": "2026-11-30T00:00:00"}


BASELINE = {"threshold": 1.3, "figures": {"step": 10.0, "load": 0.02}}


def test_figures_within_bound_and_threshold_pass():
    found = gate.verdicts(_results(probe=(1.04, 1.10, False), step=(12.9, None, True), load=(0.021, 0.5, True)),
                          BASELINE)
    assert [(v.name, v.ok) for v in found] == [("load", True), ("load", True), ("probe", True), ("step", True)]
    assert "1.29x the baseline 10" in found[3].line


@pytest.mark.parametrize("figures, failing", [
    ({"probe": (1.5, 1.10, False)}, "FAIL  probe = 1.5 (bound <= 1.1"),
    ({"step": (15.0, None, True)}, "FAIL  step = 15, 1.50x the baseline 10 (fails above 1.30x"),
    ({"new": (3.0, None, True)}, "FAIL  new = 3: no baseline for it"),
])
def test_a_regression_fails_naming_the_figure(figures, failing, tmp_path, capsys):
    found = gate.verdicts(_results(**figures), BASELINE)
    assert len(found) == 1 and not found[0].ok and found[0].line.startswith(failing)
    path = tmp_path / "r.json"
    path.write_text(json.dumps(_results(**figures)))
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps(BASELINE))
    assert gate.main([str(path), "--baseline", str(baseline)]) == 1
    out = capsys.readouterr().out
    assert f"gate: FAILED on {next(iter(figures))}" in out and "gate: 0 passed, 1 failed" in out


def test_results_without_figures_fail(tmp_path, capsys):
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"benchmarks": []}))
    assert gate.main([str(path), "--baseline", str(tmp_path / "none.json")]) == 1
    assert "no gated figure" in capsys.readouterr().err


def test_unreadable_results_are_a_usage_error(tmp_path, capsys):
    assert gate.main([str(tmp_path / "missing.json")]) == 2
    assert capsys.readouterr().err.startswith("gate: error: cannot read results")


def test_update_takes_the_median_of_the_runs(tmp_path):
    runs = []
    for i, value in enumerate((10.0, 12.0, 11.0)):
        path = tmp_path / f"{i}.json"
        path.write_text(json.dumps(_results(step=(value, None, True), probe=(1.0, 1.1, False))))
        runs.append(str(path))
    baseline = tmp_path / "baseline.json"
    assert gate.main(["--update", *runs, "--baseline", str(baseline)]) == 0
    written = json.loads(baseline.read_text())
    assert written["figures"] == {"step": 11.0} and written["spread"] == {"step": [10.0, 12.0]}
    assert written["runs"] == 3 and written["threshold"] == gate.THRESHOLD and written["schema"] == gate.SCHEMA


def test_the_committed_baseline_covers_every_baseline_figure_the_benchmarks_record():
    committed = json.loads(gate.BASELINE.read_text())
    assert set(committed["figures"]) == {"cache_load_over_decode", "forward_over_plain_keras", "serving_over_model",
                                         "train_step_over_plain_keras"}
    assert 1.0 < committed["threshold"] < 1.5


def test_references_drop_their_warmup_samples():
    calls = []
    references = References(warmup_rounds=1, a=lambda: (calls.append("a"), time.sleep(0.002 * len(calls))))
    for _ in range(3):
        references()
    assert calls == ["a"] * 3 and len(references.seconds["a"]) == 3
    assert references.median("a") == pytest.approx(sorted(references.seconds["a"][1:])[0] / 2
                                                   + sorted(references.seconds["a"][1:])[1] / 2)
    assert references.median("a") >= 0.004
