"""The house's shape: layers that only point down, no import circle, no clock in a task, small modules."""

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "l40sbench"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
MAX_LINES = 300
# A module over MAX_LINES says why in its docstring; none is waiting to be split.
NOT_YET_SPLIT: set[str] = set()
CLOCKS = {"perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "time", "time_ns", "process_time"}


def _lint_imports(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=root, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root)})


def test_the_layers_contract_holds():
    done = _lint_imports(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 kept, 0 broken" in done.stdout


def test_the_layers_contract_fails_on_an_import_that_points_up(tmp_path):
    """A copy of the package with one function-local import from core up to the CLI breaks the contract."""
    shutil.copytree(PACKAGE, tmp_path / "l40sbench", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    with (tmp_path / "l40sbench" / "core" / "text.py").open("a") as module:
        module.write("\n\ndef _up():\n    import l40sbench.cli.compare  # noqa: F401\n")
    done = _lint_imports(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "l40sbench.core is not allowed to import l40sbench.cli" in done.stdout
    assert "l40sbench.core.text -> l40sbench.cli.compare" in done.stdout


def test_no_two_modules_import_each_other():
    """No circle of imports between any two modules, function-local imports included (grimp's graph, the one
    import-linter checks)."""
    grimp = pytest.importorskip("grimp")
    graph = grimp.build_graph("l40sbench")
    circles = sorted({tuple(sorted((module, imported))) for module in graph.modules
                      for imported in graph.find_modules_directly_imported_by(module)
                      if graph.find_shortest_chain(importer=imported, imported=module)})
    assert circles == []


def _clock_calls(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and node.attr in CLOCKS and getattr(node.value, "id", "") == "time":
            found.append(f"{path.name}:{node.lineno} time.{node.attr}")
        if isinstance(node, ast.ImportFrom) and node.module == "time":
            found += [f"{path.name}:{node.lineno} from time import {a.name}" for a in node.names if a.name in CLOCKS]
    return found


@pytest.mark.parametrize("task", ["classify", "detect"])
def test_a_task_reads_no_clock(task):
    """Every clock of a run is the harness's (core.timing): a task only marks where epochs begin and end."""
    calls = [call for module in sorted((PACKAGE / task).glob("*.py")) for call in _clock_calls(module)]
    assert calls == []


def test_the_clock_check_sees_a_clock(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("import time\nfrom time import monotonic\nstarted = time.perf_counter()\n")
    assert sorted(_clock_calls(module)) == ["m.py:2 from time import monotonic", "m.py:3 time.perf_counter"]


def test_a_long_module_says_why():
    """A product module over MAX_LINES lines states the reason in its docstring ("Longer than ... because")."""
    long = set()
    for module in sorted(PACKAGE.rglob("*.py")):
        text = module.read_text()
        if text.count("\n") > MAX_LINES and "Longer than" not in (ast.get_docstring(ast.parse(text)) or ""):
            long.add(str(module.relative_to(ROOT)))
    assert long == NOT_YET_SPLIT
