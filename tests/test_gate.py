"""The CI speed gate's verdicts, on pytest-benchmark JSON written here."""

import json
import time

import pytest

from tests.benchmarks import gate
from tests.benchmarks.conftest import References


def _results(**figures):
    """A pytest-benchmark JSON with one benchmark per figure: name=(value, max, baseline[, min[, exact]])."""
    benchmarks = []
    for name, (value, maximum, baseline, *rest) in figures.items():
        minimum, exact = (rest[0] if rest else None), (rest[1] if len(rest) > 1 else False)
        entry = {"value": value, "what": f"what {name} is", "max": maximum, "min": minimum, "baseline": baseline,
                 "exact": exact}
        benchmarks.append({"name": f"test_{name}", "fullname": f"tests/benchmarks/test_b.py::test_{name}",
                           "extra_info": {"gates": {name: entry}}})
    return {"benchmarks": benchmarks, "machine_info": {"node": "here", "cpu": {"brand_raw": "x"}},
            "commit_info": {"id": "abc"}, "datetime": "2026-11-30T00:00:00"}


BASELINE = {"threshold": 1.3, "figures": {"step": 10.0, "load": 0.02}}
EXACT = {"structure.synthetic.alexnet.parameters": 62378344, "structure.synthetic.alexnet.forward_gflops": 1.43}


def test_a_baseline_figure_missing_from_the_results_fails_naming_it():
    """A benchmark removed, renamed or deselected with -k: its figures are named, not passed over. (The exact
    structure figures are tests/test_structure_figures.py's to require.)"""
    found = gate.verdicts(_results(step=(10.0, None, True)), {**BASELINE, "exact": EXACT})
    failed = sorted(v.name for v in found if not v.ok)
    assert failed == ["load"]
    assert all("missing from the results" in v.line for v in found if not v.ok)


def test_exact_figures_pass_only_when_equal():
    same = gate.verdicts(_results(**{name: (value, None, False, None, True) for name, value in EXACT.items()}),
                         {"exact": EXACT})
    assert [v.ok for v in same] == [True, True]
    changed = gate.verdicts(_results(**{"structure.synthetic.alexnet.forward_gflops": (1.4300001, None, False, None,
                                                                                         True),
                                        "structure.synthetic.alexnet.parameters": (62378344, None, False, None, True)}),
                            {"exact": EXACT})
    assert [v.ok for v in changed] == [False, True]


def test_figures_within_bound_and_threshold_pass():
    found = gate.verdicts(_results(probe=(1.04, 1.10, False), step=(12.9, None, True), load=(0.021, 0.5, True)),
                          BASELINE)
    assert [(v.name, v.ok) for v in found] == [("load", True), ("load", True), ("probe", True), ("step", True)]
    assert "1.29x the baseline 10" in found[3].line


@pytest.mark.parametrize("figures, failing", [
    ({"probe": (1.5, 1.10, False)}, "FAIL  probe = 1.5 (bound <= 1.1"),
    ({"probe": (0.5, None, False, 0.9)}, "FAIL  probe = 0.5 (bound >= 0.9"),
    ({"step": (15.0, None, True)}, "FAIL  step = 15, 1.50x the baseline 10 (fails outside 0.77x..1.30x"),
    ({"step": (7.0, None, True)}, "FAIL  step = 7, 0.70x the baseline 10 (fails outside 0.77x..1.30x"),
    ({"new": (3.0, None, True)}, "FAIL  new = 3: no baseline for it"),
    ({"structure.synthetic.alexnet.parameters": (62378345, None, False, None, True)},
     "FAIL  structure.synthetic.alexnet.parameters = 62378345, the baseline holds 62378344: what "
     "structure.synthetic.alexnet.parameters is changed"),
])
def test_a_regression_fails_naming_the_figure(figures, failing, tmp_path, capsys):
    relevant = {"threshold": 1.3, "figures": {k: v for k, v in BASELINE["figures"].items() if k in figures},
                "exact": {k: v for k, v in EXACT.items() if k in figures}}
    found = gate.verdicts(_results(**figures), relevant)
    assert len(found) == 1 and not found[0].ok and found[0].line.startswith(failing)
    path = tmp_path / "r.json"
    path.write_text(json.dumps(_results(**figures)))
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps(relevant))
    assert gate.main([str(path), "--baseline", str(baseline)]) == 1
    out = capsys.readouterr().out
    assert f"gate: FAILED on {next(iter(figures))}" in out and "gate: 0 passed, 1 failed" in out


def test_a_timed_figure_fails_only_if_its_retry_fails_too(tmp_path, capsys):
    """A neighbour's moment slows one try; a regression slows both. Exact figures are never retried."""
    baseline = {**BASELINE, "exact": {"structure.x.parameters": 10}}
    first = _results(ratio=(1.5, 1.2, False), step=(20.0, None, True), **{"structure.x.parameters": (11, None, False,
                                                                                                     None, True)})
    assert gate.timed_failures(first, baseline) == ["tests/benchmarks/test_b.py::test_ratio",
                                                    "tests/benchmarks/test_b.py::test_step"]
    recovered = _results(ratio=(1.1, 1.2, False), step=(21.0, None, True))
    judged = {v.name: v for v in gate.judged_twice(first, recovered, baseline)}
    assert judged["ratio"].ok and judged["ratio"].line.startswith("ok    retried: ratio = 1.1 (bound <= 1.2, 8.3 % inside")
    assert "first try: ratio = 1.5 (bound <= 1.2, 25.0 % past the bound" in judged["ratio"].line
    assert not judged["step"].ok and "retried: step = 21, 2.10x the baseline" in judged["step"].line
    assert not judged["structure.x.parameters"].ok  # deterministic: one try says it all
    paths = []
    for name, results in (("baseline", baseline), ("first", first), ("again", recovered)):
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps(results))
    assert gate.main(["--retry-list", str(paths[1]), "--baseline", str(paths[0])]) == 0
    assert capsys.readouterr().out.split() == ["tests/benchmarks/test_b.py::test_ratio",
                                               "tests/benchmarks/test_b.py::test_step"]
    assert gate.main([str(paths[1]), "--retry", str(paths[2]), "--baseline", str(paths[0])]) == 1
    out = capsys.readouterr().out
    assert "gate: FAILED on load, step, structure.x.parameters" in out and "FAIL  retried: step" in out  # load: missing
    passing = tmp_path / "passing.json"
    passing.write_text(json.dumps(_results(step=(10.0, None, True), load=(0.02, None, True))))
    assert gate.main(["--retry-list", str(passing), "--baseline", str(paths[0])]) == 0
    assert capsys.readouterr().out == ""  # nothing to run again: not even an empty line (run.sh runs each line)


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


def test_update_refuses_exact_figures_that_differ_between_runs(tmp_path, capsys):
    runs = []
    for i, value in enumerate((100, 101)):
        path = tmp_path / f"{i}.json"
        path.write_text(json.dumps(_results(**{"structure.x.parameters": (value, None, False, None, True)})))
        runs.append(str(path))
    assert gate.main(["--update", *runs, "--baseline", str(tmp_path / "b.json")]) == 2
    assert "exact figures differ between the runs: structure.x.parameters" in capsys.readouterr().err


def test_the_committed_baseline_covers_every_baseline_figure_the_benchmarks_record():
    from l40sbench.classify.bases import NAMED
    from l40sbench.detect.bases import STUDIED
    from l40sbench.synthetic.models import MODELS

    committed = json.loads(gate.BASELINE.read_text())
    assert set(committed["figures"]) == {"cache_load_over_decode", "decode_over_opencv", "forward_over_plain_keras",
                                         "serving_over_model", "synthetic_step_over_plain_keras",
                                         "train_step_over_plain_keras"}
    models = [("classify", n) for n in NAMED] + [("detect", n) for n in STUDIED] + [
        ("synthetic", n) for n in MODELS.names()]
    assert len(models) == 20
    assert set(committed["exact"]) == {f"structure.{family}.{name}.{figure}" for family, name in models
                                       for figure in ("parameters", "forward_gflops")}
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
