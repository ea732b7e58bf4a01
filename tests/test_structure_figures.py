"""Every registered model's exact structure figures against tests/benchmarks/baseline.json (tests/structure_figures.py
says why they are gated), each model built once; a synthetic model also runs a small batch and matches its
citation on that build."""

import json

import pytest

from tests.benchmarks.gate import _same
from tests.structure_figures import BASELINE, every_model, figures, names
from tests.test_synthetic import check_citation

EXACT = json.loads(BASELINE.read_text())["exact"]
UPDATE = "if deliberate: .venv/bin/python -m tests.structure_figures --update"


# The merge tier builds the suite's tiny detector; the other two detectors (about 80 s of building here) are the
# long tier's, as their end-to-end runs are (tests/test_detect_e2e.py). So are the three deepest synthetic models
# (10-19 s each in the merge tier on four workers, 2026-12-08): their families' shallower members (resnet50,
# inceptionv3) check the same builders there.
LONG = {("detect", "faster_rcnn_inception_v2"), ("detect", "faster_rcnn_resnet50"), ("synthetic", "inceptionv4"),
        ("synthetic", "resnet101"), ("synthetic", "resnet152")}


@pytest.mark.parametrize("family, name", [pytest.param(*pair, marks=pytest.mark.long) if pair in LONG else pair
                                          for pair in every_model()])
def test_model_structure_is_the_baselines(family, name):
    parameters, gflops = figures(family, name, check_citation if family == "synthetic" else None)
    assert parameters > 0 and gflops > 0
    for figure, value in zip(names(family, name), (int(parameters), float(gflops))):
        assert figure in EXACT, f"{figure} = {value!r}: no baseline for it in {BASELINE.name} ({UPDATE})"
        assert _same(value, EXACT[figure]), f"{figure} = {value!r}, the baseline holds {EXACT[figure]!r} ({UPDATE})"


def test_the_baseline_holds_no_figure_of_a_model_no_registry_has():
    known = {figure for family, name in every_model() for figure in names(family, name)}
    assert set(EXACT) == known
