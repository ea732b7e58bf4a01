"""A GPU the run cannot use stops it in one line before anything is measured; --devices cpu runs on the CPU on
purpose; env says what each backend would use. The GPUs come from a stand-in CUDA driver (tests/standin/
libcuda.c, one NVIDIA L40S), which the real frameworks here cannot use; the every-command wiring runs in this
process with the driver's answer and the backend's stood in."""

import json
import os
import subprocess
import sys
import time
from unittest import mock

import pytest

from l40sbench.backends import cuda_driver, gpu_gate
from l40sbench.backends.gpu_gate import CHOICE_VARIABLE, View
from tests.conftest import REPO, assert_one_line_exit_2, cli_in_process, standin_driver

L40S = cuda_driver.CudaDevice(0, "GPU-40414243-4445-4647-4849-4a4b4c4d4e4f", "NVIDIA L40S", 46068.0)
HANG_GUARD_SECONDS = 300  # what the acceptance asks is under 30 s; this only catches a hang


@pytest.fixture
def driver(tmp_path_factory):
    env = standin_driver(tmp_path_factory.getbasetemp())
    if not env:
        pytest.skip("no C compiler (cc) to build the stand-in CUDA driver")
    return env


@pytest.fixture
def shown_but_unusable(monkeypatch):
    """The driver shows one L40S; the backend, asked, sees none and says why."""
    monkeypatch.delenv(CHOICE_VARIABLE, raising=False)
    monkeypatch.setattr(cuda_driver, "devices", lambda: (L40S,))
    asked = []

    def ask(backend):
        asked.append(backend)
        return "9.9", View(0, "it could not load libcudnn.so.9", "12.5.1")

    monkeypatch.setattr(gpu_gate, "ask", ask)
    return asked


@pytest.mark.parametrize("argv, backend", [
    (["classify", "--base", "vgg19"], "tensorflow"),
    (["classify", "--base", "vgg19", "--backend", "jax"], "jax"),
    (["detect", "--base", "ssd_resnet50_fpn"], "tensorflow"),
    (["synthetic", "--models", "lenet"], "tensorflow"),
    (["infer", "no-such-run"], "tensorflow"),
    (["study", "l40s", "--plan"], "tensorflow"),
    (["env", "--peak"], "tensorflow"),
])
def test_every_command_that_computes_stops_in_one_line(argv, backend, shown_but_unusable, tmp_path):
    out = tmp_path / "out"
    flags = ["--output-dir", out] if argv[0] in ("classify", "detect", "synthetic") else []
    result = cli_in_process(*argv, *flags)
    assert_one_line_exit_2(result, "the CUDA driver shows 1 x NVIDIA L40S (GPU 0), but ")
    line = result.stderr.strip()
    assert f"{backend} 9.9 (built for CUDA 12.5.1) sees no GPU: it could not load libcudnn.so.9" in line
    assert gpu_gate.FIX[backend] in line and "--devices cpu runs on the CPU on purpose" in line
    assert shown_but_unusable == [backend] and not out.exists() and result.stdout == ""


def test_the_choice_hides_the_gpus_for_cpu_and_children_reuse_it(driver, monkeypatch):
    monkeypatch.delenv(CHOICE_VARIABLE, raising=False)
    with mock.patch.dict(os.environ, driver):
        choice = gpu_gate.choose("jax", cpu=True)
        assert (choice["chosen"], [g["name"] for g in choice["gpus_present"]]) == ("cpu", ["NVIDIA L40S"])
        assert os.environ["CUDA_VISIBLE_DEVICES"] == "" and os.environ["JAX_PLATFORMS"] == "cpu"
        assert gpu_gate.recorded() == choice
        # a child (a study's step) finds the choice made and asks nothing
        assert gpu_gate.choose("tensorflow", cpu=False, asker=pytest.fail) == choice
    with mock.patch.dict(os.environ, {}), monkeypatch.context() as patch:
        patch.setattr(cuda_driver, "devices", lambda: (L40S,))
        choice = gpu_gate.choose("tensorflow", cpu=False, asker=lambda name: ("2.20.0", View(1, None, "12.5.1")))
        assert choice["chosen"] == "gpu" and choice["why"] == "tensorflow sees 1 of the driver's 1 GPU(s)"
    assert CHOICE_VARIABLE not in os.environ
    assert gpu_gate.choose("tensorflow", cpu=False)["why"] == "the CUDA driver shows no GPU"  # this machine


def _cli(*args, env):
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "l40sbench", *map(str, args)], capture_output=True, text=True,
                          cwd=REPO, env={**os.environ, **env}, timeout=HANG_GUARD_SECONDS)
    return done, time.perf_counter() - started


@pytest.mark.parametrize("backend, reason", [
    ("tensorflow", "sees no GPU: it could not load libcuda"),  # what TensorFlow loads is the real driver's name
    ("jax", "sees no GPU: jaxlib is its CPU build: jax's CUDA plugin (jax-cuda12-plugin) is not installed"),
])
def test_the_real_backends_refuse_the_stand_in_l40s(backend, reason, driver, tmp_path):
    out = tmp_path / "run"
    done, wall = _cli("classify", "--backend", backend, "--base", "vgg19", "--epochs", "1", "--limit", "8",
                      "--image-size", "32", "--output-dir", out, env={**driver, "KERAS_BACKEND": backend})
    assert_one_line_exit_2(done, "the CUDA driver shows 1 x NVIDIA L40S (GPU 0), but ")
    assert reason in done.stderr and "L40SBENCH_BUILD=gpu ./run.sh env" in done.stderr
    assert not out.exists() and done.stdout == ""
    print(f"{backend}: refused in {wall:.1f} s")


def test_env_says_what_each_backend_would_use_and_why(driver):
    from l40sbench.cli.env import _text

    done, _ = _cli("env", "--json", env=driver)
    assert done.returncode == 0, done.stderr
    facts = json.loads(done.stdout)
    assert [g["name"] for g in facts["cuda_driver_gpus"]] == ["NVIDIA L40S"]
    assert facts["cuda_driver_version"] == "12.8"
    view = facts["backends"]["tensorflow"]["gpu_view"]
    assert view["gpus"] == 0 and view["said"].startswith("it could not load") and view["built_for"].startswith("12.")
    lines = _text(facts)  # --json sorts the backends by name; the text lists them in backends.NAMES' order
    tensorflow, jax = (next(line for line in lines[:3] if line[2:].startswith(f"{name} ")) for name in ("tensorflow", "jax"))
    assert tensorflow.startswith(f"{'*' if facts['backend'] == 'tensorflow' else ' '} tensorflow 2.20.0 would use: the CPU (")
    assert "though the driver shows 1 x NVIDIA L40S (GPU 0): it could not load" in tensorflow
    assert "fix: L40SBENCH_BUILD=gpu ./run.sh env reinstalls with tensorflow[and-cuda]" in tensorflow
    assert "jax-cuda12-plugin" in jax
    driver_line = next(line for line in lines if line.startswith("CUDA driver: "))
    assert driver_line.startswith("CUDA driver: 12.8; built for: tensorflow CUDA 12.")
    assert any(line.startswith("host now: ") for line in lines[:6])


def test_env_lines_for_a_gpu_a_board_and_a_busy_host():
    """The first lines where a backend uses the GPU, NVML reads the board, and a neighbour is busy (readings
    stood in: no GPU here)."""
    from l40sbench.cli.env import _first_lines

    gpu = {"kind": "GPU", "index": 0, "model": "NVIDIA L40S", "memory_mb": 46068.0}
    facts = {"backend": "jax", "cuda_driver_gpus": [vars(L40S)], "cuda_driver_version": "12.8",
             "backends": {"tensorflow": {"installed": False, "version": None},
                          "jax": {"installed": True, "version": "0.12.0.1", "devices": [gpu],
                                  "gpu_view": {"gpus": 1, "said": None, "built_for": "12"}}},
             "telemetry": {"nvml_driver": "570.86", "nvml_boards": [
                 {"name": "NVIDIA L40S", "uuid": L40S.uuid, "power_limit_w": 350000 / 1000, "sm_clock_mhz": 2520,
                  "max_sm_clock_mhz": 2520}]},
             "neighbours_now": {"reasons": ["spinner (pid 7) used 40 % of the machine's CPU time"]}}
    assert _first_lines(facts) == [
        "  tensorflow: not installed",
        "* jax 0.12.0.1 would use: GPU 0 NVIDIA L40S 45 GB",
        "CUDA driver: 12.8 (NVML driver 570.86); built for: jax CUDA 12",
        f"  NVIDIA L40S ({L40S.uuid}): power limit 350 W, SM clock 2520 of 2520 MHz",
        "host now: busy, figures taken now would be unstable: spinner (pid 7) used 40 % of the machine's CPU time",
    ]
