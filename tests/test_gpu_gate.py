"""A GPU the run cannot use stops it in one line before anything is measured, with the fix that fits the cause;
a driver that never answers stops nothing but the GPU work; --devices cpu runs on the CPU on purpose without
asking the driver; env says what each backend would use. The GPUs come from a stand-in CUDA driver
(tests/standin/libcuda.c: L40S or H100 boards, MIG instances, an old driver, a driver that hangs) and a stand-in
NVML (tests/standin/nvml/pynvml.py: MIG mode, the processes on a board), which the real frameworks here cannot
use; what a backend makes of the boards is stood in where no framework here can say it."""

import importlib.util
import json
import os
import subprocess
import sys
import time
from argparse import Namespace
from unittest import mock

import pytest

from l40sbench.backends import cuda_driver, gpu_gate
from l40sbench.backends.gpu_gate import CHOICE_VARIABLE, View
from l40sbench.errors import UserError
from tests.conftest import REPO, assert_one_line_exit_2, cli_in_process, standin_driver

L40S = cuda_driver.CudaDevice(0, "GPU-40414243-4445-4647-4849-4a4b4c4d4e4f", "NVIDIA L40S", 46068.0)
H100 = "NVIDIA H100 80GB HBM3"
NVML = REPO / "tests" / "standin" / "nvml"
HANG_GUARD_SECONDS = 300  # what the limit promises is about 10 s; this only catches a hang


def standin_uuid(board: int, prefix: str = "GPU") -> str:
    """The UUID the stand-in driver gives board `board` (bytes 0x40 + i + board)."""
    return cuda_driver.format_uuid(bytes(0x40 + i + board for i in range(16)), prefix)


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    """No choice made, no GPU hidden, the driver asked afresh in each test."""
    monkeypatch.delenv(CHOICE_VARIABLE, raising=False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    cuda_driver.forget()
    yield
    cuda_driver.forget()


@pytest.fixture
def driver(tmp_path_factory):
    env = standin_driver(tmp_path_factory.getbasetemp())
    if not env:
        pytest.skip("no C compiler (cc) to build the stand-in CUDA driver")
    return env


def host(driver, *, nvml: list[dict] | None = None, **settings) -> dict:
    """The environment of a host the stand-ins describe: the driver's STANDIN_* settings, NVML's boards."""
    env = {**driver, **{f"STANDIN_{k.upper()}": str(v) for k, v in settings.items()}}
    if nvml is not None:
        env.update(PYTHONPATH=os.pathsep.join([str(NVML), str(REPO)]),
                   STANDIN_NVML=json.dumps({"driver": "580.82", "boards": nvml}))
    return env


def choose_on(env: dict, backend: str = "tensorflow", asker=None, cpu: bool = False) -> dict:
    with mock.patch.dict(os.environ, env):
        return gpu_gate.choose(backend, cpu=cpu, asker=asker or pytest.fail)


def refused_on(env: dict, asker=None) -> str:
    with pytest.raises(UserError) as refused:
        choose_on(env, asker=asker)
    line = str(refused.value)
    assert "\n" not in line
    return line


def says(version: str, view: View):
    return lambda backend, driver: (version, view)


@pytest.fixture
def shown_but_unusable(monkeypatch):
    """The driver shows one L40S; the backend, asked, sees none and says why."""
    shown = cuda_driver.DriverView(True, "12.8", (L40S,))
    monkeypatch.setattr(cuda_driver, "view", lambda: shown)
    monkeypatch.setattr(cuda_driver, "host_view", lambda: shown)
    asked = []

    def ask(backend, driver):
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


def test_an_onnx_file_runs_on_the_cpu_whatever_tensorflow_makes_of_the_gpu(shown_but_unusable, tmp_path):
    from l40sbench.cli.infer import _gate

    model = tmp_path / "m.onnx"
    model.write_bytes(b"")
    with mock.patch.dict(os.environ, {}):
        _gate(Namespace(model=model, devices=(1,)))
        choice = gpu_gate.recorded()
        assert os.environ["CUDA_VISIBLE_DEVICES"] == ""
    assert choice["chosen"] == "cpu" and choice["why"].startswith("an ONNX file: onnxruntime (the reference)")
    assert shown_but_unusable == []  # TensorFlow was not asked


def test_devices_cpu_hides_the_gpus_without_asking_the_driver_and_children_reuse_the_choice(monkeypatch):
    monkeypatch.setattr(cuda_driver, "view", pytest.fail)
    monkeypatch.setattr(cuda_driver, "host_view", pytest.fail)
    with mock.patch.dict(os.environ, {}):
        choice = gpu_gate.choose("jax", cpu=True, asker=pytest.fail)
        assert (choice["chosen"], choice["why"], choice["gpus_present"]) == ("cpu", "--devices cpu", None)
        assert os.environ["CUDA_VISIBLE_DEVICES"] == "" and os.environ["JAX_PLATFORMS"] == "cpu"
        assert gpu_gate.recorded() == choice
        # a child (a study's step) finds the choice made and asks nothing
        assert gpu_gate.choose("tensorflow", cpu=False, asker=pytest.fail) == choice
    assert CHOICE_VARIABLE not in os.environ


def test_a_gpu_the_backend_computes_on_is_chosen_and_this_machine_has_none(driver):
    choice = choose_on(driver, asker=says("2.20.0", View(1, None, "12.5.1")))
    assert choice["chosen"] == "gpu" and choice["why"] == "tensorflow computed on 1 of the driver's 1 GPU(s)"
    assert [g["uuid"] for g in choice["gpus_present"]] == [L40S.uuid] and choice["notices"] == []
    assert CHOICE_VARIABLE not in os.environ
    cuda_driver.forget()
    with mock.patch.dict(os.environ, {"TF_CPP_MIN_LOG_LEVEL": "2"}):  # this machine: the choice is kept
        assert gpu_gate.choose("tensorflow", cpu=False)["why"] == "the CUDA driver shows no GPU"
        assert json.loads(os.environ[CHOICE_VARIABLE])["chosen"] == "cpu"
        assert gpu_gate.choose("tensorflow", cpu=False, asker=pytest.fail)["why"] == "the CUDA driver shows no GPU"
        assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == "3"


def test_a_study_asks_the_driver_once_on_a_host_without_a_gpu(monkeypatch):
    asked = []
    monkeypatch.setattr(cuda_driver, "view", lambda: asked.append(1) or cuda_driver.DriverView())  # no driver
    monkeypatch.setattr(cuda_driver, "host_view", cuda_driver.DriverView)
    with mock.patch.dict(os.environ, {}):
        for _ in range(3):  # the study's steps, each the parent's child, inherit the choice in the environment
            gpu_gate.choose("tensorflow", cpu=False, asker=pytest.fail)
    assert asked == [1]


@pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None, reason="TensorFlow is not installed")
def test_a_cpu_run_prints_no_tensorflow_error_line_and_a_users_log_level_is_kept():
    """TensorFlow logs "E ... failed call to cuInit" wherever CUDA has no device: a newcomer reads it as a failure,
    and the gate has said already that the run is on the CPU."""
    script = ("import os; from l40sbench.backends.gpu_gate import choose; choose('tensorflow', cpu=False); "
              "import tensorflow as tf; tf.config.list_physical_devices('GPU'); print(os.environ['TF_CPP_MIN_LOG_LEVEL'])")
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}  # the CLI's and run.sh's default
    env.pop(CHOICE_VARIABLE, None)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=REPO,
                          timeout=HANG_GUARD_SECONDS)
    assert done.returncode == 0 and done.stdout.strip() == "3", done.stderr[-2000:]
    assert not any(" E " in line[:40] for line in done.stderr.splitlines()), done.stderr
    with mock.patch.dict(os.environ, {"TF_CPP_MIN_LOG_LEVEL": "0"}):  # a level the user chose: TensorFlow says all
        os.environ.pop(CHOICE_VARIABLE, None)
        gpu_gate.choose("tensorflow", cpu=True)
        assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == "0"


def test_a_driver_that_never_answers_stops_a_gpu_command_within_the_limit_and_env_says_so(driver, tmp_path):
    stuck = host(driver, hang=1)
    started = time.perf_counter()
    result = cli_in_process("classify", "--base", "vgg19", "--output-dir", tmp_path / "out", env=stuck)
    stopped = time.perf_counter() - started
    assert_one_line_exit_2(result, "the CUDA driver gave no answer within 10 s (")
    assert "a stuck driver" in result.stderr and "--devices cpu runs on the CPU on purpose" in result.stderr
    assert stopped < HANG_GUARD_SECONDS and not (tmp_path / "out").exists()
    from l40sbench.cli.env import _text
    from l40sbench.machine import collect

    with mock.patch.dict(os.environ, stuck):
        facts = collect("tensorflow", measure_peak=False)
    assert facts["cuda_driver"]["said"] == "the CUDA driver gave no answer within 10 s"
    assert facts["backends"]["tensorflow"]["error"].startswith("not asked: the CUDA driver gave no answer")
    assert any(line.startswith("CUDA driver: the CUDA driver gave no answer within 10 s") for line in _text(facts))
    print(f"stuck driver: classify stopped in {stopped:.1f} s")
    cuda_driver.forget()  # where run.sh's own query got no answer, the command takes it without waiting again
    with mock.patch.dict(os.environ, {**stuck, cuda_driver.NO_ANSWER_VARIABLE: "1"}), \
            mock.patch.object(cuda_driver, "_start", pytest.fail):
        assert cuda_driver.view().said == "the CUDA driver gave no answer within 10 s"


@pytest.mark.parametrize("visible", ["garbage", "7", ""])
def test_cuda_visible_devices_that_hides_every_gpu_stops_the_run(visible, driver):
    line = refused_on({**host(driver), "CUDA_VISIBLE_DEVICES": visible})
    assert line.startswith(f"CUDA_VISIBLE_DEVICES={visible!r} hides every GPU the driver shows this host "
                           f"(1 x NVIDIA L40S (GPU 0); UUIDs {L40S.uuid})")
    assert "--devices cpu runs on the CPU on purpose" in line


def test_cuda_visible_devices_that_hides_some_gpus_names_the_boards_that_run(driver):
    env = {**host(driver, gpus=8, gpu_name=H100), "CUDA_VISIBLE_DEVICES": "3"}
    choice = choose_on(env, asker=says("2.20.0", View(1, None, "12.5.1")))
    assert [g["uuid"] for g in choice["gpus_present"]] == [standin_uuid(3)] and choice["gpus_hidden"] == 7
    (notice,) = choice["notices"]
    assert notice.startswith(f"GPUs: running on {H100} {standin_uuid(3)}; CUDA_VISIBLE_DEVICES='3' hides "
                             f"{H100} {standin_uuid(0)}, ")
    assert standin_uuid(7) in notice and standin_uuid(3) not in notice.split("hides")[1]


def test_mig_mode_without_an_instance_stops_the_run_with_how_to_make_one(driver):
    board = {"name": H100, "uuid": "GPU-aaaaaaaa-0000-0000-0000-000000000000", "mig_mode": 1, "migs": []}
    line = refused_on(host(driver, gpus=0, nvml=[board]))
    assert line.startswith(f"GPU 0 ({H100}, {board['uuid']}) is in MIG mode with no MIG instance: CUDA can use no "
                           "part of it. Fix: make one (sudo nvidia-smi mig -i 0 -cgi 0 -C")
    assert "turn MIG off (sudo nvidia-smi -i 0 -mig 0)" in line


def test_a_mig_instance_is_named_by_its_mig_uuid_and_said_first(driver):
    instance = standin_uuid(0, "MIG")
    board = {"name": H100, "uuid": "GPU-aaaaaaaa-0000-0000-0000-000000000000", "mig_mode": 1, "migs": [instance]}
    env = host(driver, gpu_name=f"{H100} MIG 1g.10gb", nvml=[board])
    choice = choose_on(env, asker=says("2.20.0", View(1, None, "12.5.1")))
    assert [g["uuid"] for g in choice["gpus_present"]] == [instance]
    assert choice["notices"] == [f"GPUs: MIG instance {instance} ({H100} MIG 1g.10gb); telemetry reads its parent board"]


def test_a_driver_older_than_the_builds_cuda_is_named_beside_it(driver):
    line = refused_on(host(driver, driver_version=12020),
                      asker=says("2.20.0", View(0, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "12.5.1, cuDNN 9")))
    assert ("sees no GPU: CUDA_ERROR_UNSUPPORTED_PTX_VERSION. Fix: the driver supports CUDA 12.2, older than the "
            "CUDA 12.5.1, cuDNN 9 tensorflow was built for: install a driver for CUDA 12.5 or newer (R555 or later)") in line
    assert "reinstalls" not in line


def test_the_gpu_build_on_an_answering_driver_is_not_told_to_reinstall(driver):
    line = refused_on(host(driver), asker=says("2.20.0", View(0, "CUDA error: UNKNOWN ERROR (303)", "12.5.1")))
    assert "Fix: tensorflow is the GPU build and the driver answers: its log says more" in line
    assert "reinstalls" not in line


def test_a_busy_board_among_eight_names_the_process_holding_it(driver):
    boards = [{"name": H100, "uuid": standin_uuid(b), "processes": [{"pid": 4242, "name": "python", "memory_mb": 40000}]
               if b == 3 else []} for b in range(8)]
    busy = View(7, None, "12.5.1", ({"index": 3, "said": "CUDA_ERROR_DEVICE_UNAVAILABLE: device busy"},))
    line = refused_on(host(driver, gpus=8, gpu_name=H100, nvml=boards), asker=says("2.20.0", busy))
    assert line.startswith(f"tensorflow 2.20.0 (built for CUDA 12.5.1) cannot compute on GPU 3 ({H100}, "
                           f"{standin_uuid(3)}) (held by pid 4242 python, 40000 MB): CUDA_ERROR_DEVICE_UNAVAILABLE")
    alone = refused_on(host(driver, nvml=[{**boards[3], "uuid": L40S.uuid}]),
                       asker=says("2.20.0", View(0, "CUDA_ERROR_DEVICE_UNAVAILABLE: device busy", "12.5.1")))
    assert "Fix: the board is in use (held by pid 4242 python, 40000 MB): wait for it, or pick another" in alone


def test_a_good_answer_is_kept_per_venv_and_a_failure_is_asked_again(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "prefix", str(tmp_path))
    shown = cuda_driver.DriverView(True, "12.8", (L40S,))
    answers = iter([{"version": "9.9", "view": View(0, "busy").to_dict(), "devices": []},
                    {"version": "9.9", "view": View(1, None, "12.5.1").to_dict(), "devices": []}])
    started = []
    monkeypatch.setattr(gpu_gate, "start_probe", started.append)
    monkeypatch.setattr(gpu_gate, "answer", lambda backend, child: next(answers))
    assert gpu_gate.ask("torch", shown) == ("9.9", View(0, "busy"))
    assert gpu_gate.ask("torch", shown) == ("9.9", View(1, None, "12.5.1"))
    assert gpu_gate.ask("torch", shown) == ("9.9", View(1, None, "12.5.1"))  # kept: no third probe
    assert started == ["torch", "torch"] and (tmp_path / gpu_gate.CHECK_FILE).is_file()
    held = cuda_driver.DriverView(True, "12.8", (L40S,), ({"uuid": L40S.uuid, "processes": [{"pid": 7}]},))
    other = cuda_driver.DriverView(True, "13.0", (L40S,))
    for shown_now in (held, other):  # another process on the board, another driver: asked again
        with pytest.raises(StopIteration):
            gpu_gate.ask("torch", shown_now)


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
    facts = {"backend": "jax", "cuda_driver": cuda_driver.DriverView(True, "12.8", (L40S,)).to_dict(),
             "cuda_driver_version": "12.8",
             "backends": {"tensorflow": {"installed": False, "version": None},
                          "jax": {"installed": True, "version": "0.12.0.1", "devices": [gpu],
                                  "gpu_view": {"gpus": 1, "said": None, "built_for": "12"}}},
             "telemetry": {"nvml_driver": "570.86", "nvml_boards": [
                 {"name": "NVIDIA L40S", "uuid": L40S.uuid, "power_limit_w": 350000 / 1000, "sm_clock_mhz": 2520,
                  "max_sm_clock_mhz": 2520}]},
             "neighbours_now": {"reasons": ["spinner (pid 7) used 40 % of the machine's CPU time"]}}
    assert _first_lines(facts) == [
        "  tensorflow: not installed",
        "* jax 0.12.0.1 would use: GPU 0 NVIDIA L40S 45 GiB",
        "CUDA driver: 12.8 (NVML driver 570.86); built for: jax CUDA 12",
        f"  NVIDIA L40S ({L40S.uuid}): power limit 350 W, SM clock 2520 of 2520 MHz",
        "host now: busy, figures taken now would be unstable: spinner (pid 7) used 40 % of the machine's CPU time",
    ]


def test_a_study_and_a_sweep_begun_on_the_cpu_resume_on_it_while_a_gpu_is_shown(shown_but_unusable, tmp_path):
    from l40sbench.core.records import to_json
    from l40sbench.study.run import KIND, STATE

    began = {"chosen": "cpu", "why": "--devices cpu", "gpus_present": None, "notices": []}
    study = tmp_path / "study"
    study.mkdir()
    (study / STATE).write_text(json.dumps({
        "kind": KIND, "study": "l40s", "quick": True, "budget_s": None, "backend": "tensorflow", "device_choice": began,
        "plan": {"study": "l40s", "quick": True, "cuts": [], "total_s": 0, "steps": []}}))
    result = cli_in_process("study", "--resume", study)
    assert f"--resume {study}: on the CPU, as it began (--devices cpu)" in result.stderr.splitlines()
    assert "sees no GPU" not in result.stderr and result.returncode == 0, result.stderr
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (sweep / "sweep.json").write_text(to_json({
        "config": {"models": ["lenet"], "batch_sizes": [2], "devices": [1], "settings": {}},
        "env": {"cpu": "Some Other CPU", "cpu_count": 64, "devices": [], "device_choice": began}}))
    result = cli_in_process("synthetic", "--resume", sweep)
    assert f"--resume {sweep}: on the CPU, as it began (--devices cpu)" in result.stderr.splitlines()
    # past the gate (the choice kept): the machine check is what stops this one
    assert_one_line_exit_2(result, f"cannot resume {sweep} here: its rows were measured on Some Other CPU")
    assert shown_but_unusable == []  # no backend asked: the CPU was chosen


def test_a_board_the_backend_skips_is_named_in_env_and_in_the_record(monkeypatch):
    from l40sbench import backends
    from l40sbench.cli.env import would_use

    k80 = cuda_driver.CudaDevice(0, standin_uuid(5), "Tesla K80", 11441.0)
    shown = cuda_driver.DriverView(True, "12.8", (k80, L40S))
    gpu = {"kind": "GPU", "index": 1, "model": "NVIDIA L40S", "uuid": L40S.uuid, "memory_mb": 46068.0}
    line = would_use("jax", {"installed": True, "version": "0.11", "devices": [gpu], "gpu_view": {"gpus": 1}}, shown)
    assert line == f"jax 0.11 would use: GPU 1 NVIDIA L40S 45 GiB; skips 1 x Tesla K80 (GPU 0): {k80.uuid}"
    monkeypatch.setattr(cuda_driver, "view", lambda: shown)
    monkeypatch.setattr(gpu_gate, "recorded", lambda: {"chosen": "gpu"})
    facts = backends.facts("jax")  # jax here lists the CPU alone: both boards are ones it does not list
    assert [g["uuid"] for g in facts["gpus_skipped"]] == [k80.uuid, L40S.uuid]
