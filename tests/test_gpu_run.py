"""The GPU run's own parts on this CPU: the preflight's refusals, the hard stop of a part that overruns (the long
tier, with the rehearsal), and the size of what travels. The whole rehearsal (wheels, peer rows, the study, the pack) is tests/test_backends.py's
gpu_run fixture."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

SCRIPT = REPO / "gpu" / "run.sh"
PREFLIGHT = REPO / "gpu" / "preflight.py"


def _blocked(tmp_path: Path, *modules: str) -> dict:
    """An environment where each of `modules` fails to import, as a module missing from the GPU machine does."""
    blocked = tmp_path / "blocked"
    for module in modules:
        (blocked / module).mkdir(parents=True)
        (blocked / module / "__init__.py").write_text(f"raise ImportError('{module} is blocked in this test')\n")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(blocked), str(REPO)]), "PYTHON": sys.executable}


def _missing(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("preflight: MISSING")]


@pytest.mark.long
def test_a_missing_module_stops_the_run_in_the_preflight_one_line_each(tmp_path):
    env = {**_blocked(tmp_path, "cv2", "pynvml"), "GPU_RUN_TINY": "1", "WORK_DIR": str(tmp_path / "work")}
    result = subprocess.run(["bash", str(SCRIPT), str(tmp_path / "out")], capture_output=True, text=True, env=env,
                            timeout=300)
    assert result.returncode == 2
    assert _missing(result.stdout) == ["preflight: MISSING  module cv2: ImportError: cv2 is blocked in this test",
                                       "preflight: MISSING  module pynvml: ImportError: pynvml is blocked in this test"]
    assert "the preflight found missing pieces (above): nothing was run" in result.stdout
    assert not list((tmp_path / "work").glob("study-*")) and not (tmp_path / "work" / "peer").exists()


@pytest.mark.long
def test_a_gpu_that_no_backend_sees_stops_the_preflight():
    """Off a rehearsal a CPU is no GPU: the backend's devices and NVML each say so, one line, exit 2. (Its time is
    the subprocess's timeout's to bound: a wall bound here failed at 30.75 s on a busy CI host.)"""
    result = subprocess.run([sys.executable, str(PREFLIGHT), "--backends", "jax"], capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    assert result.returncode == 2
    missing = _missing(result.stderr)
    assert missing[0] == "preflight: MISSING  jax sees no GPU" and missing[1].startswith(
        "preflight: MISSING  NVML does not start") and len(missing) == 2
    assert result.stderr.splitlines()[-1].startswith("preflight: 2 missing piece(s) in ")


@pytest.mark.long
def test_a_part_past_its_share_is_stopped_and_the_pack_says_so(tmp_path):
    """The study gets 20 s (its quick form takes about a minute): SIGINT at 20 s, the study keeps its state,
    the pack still runs and names the part that was stopped."""
    out, work = tmp_path / "out", tmp_path / "work"
    env = {**os.environ, "PYTHON": sys.executable, "GPU_RUN_TINY": "1", "PARTS": "studies", "JAX_S": "20",
           "WORK_DIR": str(work), "KERAS_BACKEND": ""}
    result = subprocess.run(["bash", str(SCRIPT), str(out)], capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:]
    part = [p for p in json.loads((out / "gpu.json").read_text())["parts"] if p["part"] == "study-jax"]
    # SIGINT at the share; where the study took longer than 15 s to stop, SIGKILL then: either way it ended there
    ended = {124: "stopped at its share (SIGINT)", 137: "killed 15 s after its share"}
    assert part and ended.get(part[0]["exit"]) == part[0]["ended"], part
    assert 20 <= part[0]["seconds"] <= 20 + 15 + 2
    assert f"| study-jax | {part[0]['ended']} |" in (out / "gpu.md").read_text()
    # Whatever the study had written when it was stopped is whole (beside other work it may not have begun).
    state = work / "study-jax" / "study.json"
    assert not state.exists() or json.loads(state.read_text())["backend"] == "jax"
    assert "no report.md: the study was stopped before its end" in (out / "gpu.md").read_text()
    assert "peer: not asked for (PARTS=studies)" in result.stdout


# What gpu/wheels.sh fetched when last measured (docs/PERFORMANCE.md, "GPU runs"), for a clone
# without the folder: the tree's own size is checked in every tier, the wheels' where they are at hand.
WHEELS_AT_MOST_MIB = 16


def test_what_travels_to_the_gpu_machine_is_under_64_mib():
    """The tracked tree and the wheels (gpu/wheels.sh, for the GPU machine's Python, in build/gpu-wheels
    or L40SBENCH_GPU_WHEELS; nothing is downloaded here)."""
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, text=True, check=True)
    size = sum((REPO / name).stat().st_size for name in tracked.stdout.split("\0") if name and (REPO / name).is_file())
    wheels = Path(os.environ.get("L40SBENCH_GPU_WHEELS", REPO / "build" / "gpu-wheels"))
    names = sorted(p.name.split("-")[0] for p in wheels.glob("*.whl"))
    if names == ["keras", "namex", "narwhals", "optree", "plotly"]:
        assert any("cp312" in p.name for p in wheels.glob("optree-*.whl"))  # the GPU machine's Python
        fetched = sum(p.stat().st_size for p in wheels.glob("*.whl"))
        assert fetched < WHEELS_AT_MOST_MIB * 2**20
        size += fetched
    else:
        size += WHEELS_AT_MOST_MIB * 2**20
    assert size < 64 * 2**20, f"{size / 2**20:.1f} MiB travel"


def test_the_preflight_checks_every_module_the_gpu_run_imports():
    """Each third-party module l40sbench imports anywhere (function-local imports too) is one the preflight checks,
    notes as optional, a backend, or one it names as off the GPU run's paths (no TensorFlow there): a new import
    fails here until it is placed."""
    import ast

    spec = importlib.util.spec_from_file_location("gpu_preflight", PREFLIGHT)
    preflight = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(preflight)
    imported = set()
    for path in (REPO / "l40sbench").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
    third_party = imported - set(sys.stdlib_module_names) - {"l40sbench"}
    placed = set(preflight.MODULES) | set(preflight.OPTIONAL) | set(preflight.NOT_ON_THE_GPU_RUN) | {
        "jax", "jaxlib", "torch"}
    assert sorted(third_party - placed) == []
    assert not set(preflight.NOT_ON_THE_GPU_RUN) & (set(preflight.MODULES) | set(preflight.OPTIONAL))
    assert "plotly" in preflight.OPTIONAL and "plotly" in preflight.WHEELS  # it travels, and is noted where not
