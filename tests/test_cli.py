"""Bad input ends in one clear line and exit code 2; --help stays light."""

import os
import shutil
import subprocess
import sys
import time

import cv2
import numpy as np
import pytest

from tests.conftest import REPO, assert_one_line_exit_2, cli_in_process, run_cli


def _cats_dogs(root, classes=("cats", "dogs"), splits=("train", "test"), payload=None):
    image = cv2.imencode(".png", np.full((8, 8, 3), 128, np.uint8))[1].tobytes()
    for split in splits:
        for name in classes:
            (root / split / name).mkdir(parents=True)
            (root / split / name / "a.png").write_bytes(payload or image)
            (root / split / name / "b.png").write_bytes(image)
    return root


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["classify", "--base", "nope"], "unknown base 'nope'; choose one of:"),
        (["classify", "--epochs", "0"], "Received: epochs=0"),
        (["classify", "--epochs", "-3"], "Received: epochs=-3"),
        (["classify", "--epochs", "ten"], "invalid int value: 'ten'"),
        (["classify", "--batch-size", "0"], "Received: batch_size=0"),
        (["classify", "--fine-tune", "some"], "Received: fine_tune='some'"),
        (["classify", "--precision", "fp8"], "invalid choice: 'fp8'"),
        (["classify", "--base", "vgg19", "--image-size", "16"], "below vgg19's minimum of 32"),
        (["classify", "--weights", "/no/such/weights.h5"], "weights file not found"),
        (["classify", "--data", "/no/such/dir"], "data directory not found"),
        (["classify", "--no-such-flag"], "unrecognized arguments"),
        (["frobnicate"], "invalid choice"),
        (["detect", "--base", "yolo"], "unknown detector 'yolo'; choose one of: faster_rcnn_inception_v2"),
        (["detect", "--image-size", "100"], "multiple of 32 from 64 to 2048. Received: image_size=100"),
        (["detect", "--image-size", "4096"], "multiple of 32 from 64 to 2048. Received: image_size=4096"),
        (["detect", "--image-size", "64"], "--image-size 64 is below ssd_resnet50_fpn's minimum of 128"),
        (["detect", "--classes", ""], "expected at least one comma-separated name"),
        (["detect", "--classes", "apple,apple"], "apple given more than once"),
        (["detect", "--epochs", "0"], "Received: epochs=0"),
        (["detect", "--score-threshold", "1.5"], "Received: score_threshold=1.5"),
        (["detect", "--init-checkpoint", "/no/such/ckpt"], "init checkpoint not found"),
        (["detect", "--data", "/no/such/dir"], "data directory not found"),
        (["detect", "--classes", "apple,banana"], "class 'orange' is not one of --classes"),
        (["detect", "--export", "/proc/version"], "export directory must be new or empty: /proc/version"),
        (["detect", "--export", "/proc/l40sbench/model"], "cannot create export directory /proc/l40sbench/model"),
        (["classify", "--output-dir", "/proc/l40sbench/out"], "cannot write results to /proc/l40sbench/out"),
        (["detect", "--output-dir", "/proc/l40sbench/out"], "cannot write results to /proc/l40sbench/out"),
        (["classify", "--output-dir", "/proc/version"], "cannot write results to /proc/version"),
        (["synthetic", "--models", "lenet,nope"], "unknown model 'nope'; choose one of: alexnet"),
        (["synthetic", "--batch-sizes", "8,0"], "Received: batch_sizes=0"),
        (["synthetic", "--batch-sizes", "eight"], "expected comma-separated whole numbers, got 'eight'"),
        (["synthetic", "--devices", "0"], "Received: devices=0"),
        (["synthetic", "--steps", "0"], "Received: steps=0"),
        (["synthetic", "--warmup-steps", "0"], "Received: warmup_steps=0"),
        (["synthetic", "--memory-limit", "-1"], "Received: memory_limit_gb=-1.0"),
        (["synthetic", "--timeout", "0"], "Received: timeout_s=0.0"),
        (["synthetic", "--memory-limit", "inf"], "expected a finite number, got 'inf'"),
        (["synthetic", "--memory-limit", "1e309"], "expected a finite number, got '1e309'"),
        (["synthetic", "--timeout", "inf"], "expected a finite number, got 'inf'"),
        (["synthetic", "--timeout", "nan"], "expected a finite number, got 'nan'"),
        (["synthetic", "--models", ""], "expected at least one comma-separated name"),
        (["synthetic", "--models", "lenet,lenet"], "lenet given more than once"),
        (["synthetic", "--batch-sizes", "8,8"], "8 given more than once"),
        (["synthetic", "--devices", "1,2,1"], "1 given more than once"),
        (["synthetic", "--devices", "99999999999999999999"], "devices must all be between 1 and 4096"),
        (["synthetic", "--worker-hosts", "a:1,b:70000"], "port from 1 to 65535. Received: 'b:70000'"),
        (["compare", "a.json", "b.json", "--tolerance", "inf"], "expected a finite number, got 'inf'"),
        (["cost", "--throughput", "nan"], "expected a finite number, got 'nan'"),
        (["synthetic", "--mode", "serve"], "invalid choice: 'serve'"),
        (["synthetic", "--worker-hosts", "localhost"], "worker hosts must be host:port with a port from 1 to 65535. "
                                                       "Received: 'localhost'"),
        (["synthetic", "--worker-hosts", "a:1,b:2", "--task-index", "2"], "Received: task_index=2"),
        (["synthetic", "--task-index", "1"], "--task-index needs --worker-hosts"),
        (["synthetic", "--resume", "/no/such/sweep"], "cannot resume /no/such/sweep: no readable sweep.json"),
        (["synthetic", "--output-dir", "/proc/l40sbench/out"], "cannot write results to /proc/l40sbench/out"),
        (["synthetic", "--models", "lenet", "--find-max-batch", "--output-dir", "/tmp/l40sbench-test-find-max-batch"],
         "--find-max-batch needs --memory-limit"),
    ],
)
def test_bad_flags(args, fragment, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert_one_line_exit_2(cli_in_process(*args), fragment)
    assert not (tmp_path / "results").exists()  # a refused run leaves no empty results/<run-id>/ behind


# One refused input per command through `python -m l40sbench`, as a user runs it: the wiring from the console
# script to the exit code (every other case of the contract runs in-process, test_bad_flags and beside each command).
@pytest.mark.parametrize("args, fragment", [
    (["env", "--backend", "mxnet"], "invalid choice: 'mxnet'"),
    (["study", "nope"], "unknown study 'nope'"),
    (["classify", "--base", "nope"], "unknown base 'nope'; choose one of:"),
    (["detect", "--epochs", "0"], "Received: epochs=0"),
    (["synthetic", "--models", "lenet,lenet"], "lenet given more than once"),
    (["cost", "--throughput", "nan"], "expected a finite number, got 'nan'"),
    (["compare", "/no/such/a", "/no/such/b"], "/no/such/a"),
    (["report", "/no/such/run", "--output-dir", "r"], "/no/such/run"),
    (["infer", "/no/such/run"], "run folder not found"),
    (["datasets", "stats", "--data", "/no/such/data"], "/no/such/data"),
])
def test_each_command_refuses_bad_input_through_the_console_script(args, fragment, tmp_path):
    assert_one_line_exit_2(run_cli(*args, cwd=tmp_path), fragment)
    assert not (tmp_path / "results").exists()


def test_find_max_batch_without_a_cap_is_refused_before_the_peak_is_measured(tmp_path):
    """A check that needs no measurement comes before the seconds the peak takes (without a GPU here)."""
    result = cli_in_process("synthetic", "--models", "lenet", "--find-max-batch", "--output-dir", tmp_path)
    assert_one_line_exit_2(result, "--find-max-batch needs --memory-limit")
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr  # no peak measured, nothing else logged
    assert not (tmp_path / "sweep.json").exists()


def test_bad_data_layouts(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert_one_line_exit_2(cli_in_process("classify", "--data", empty), "data directory is empty")
    no_test = _cats_dogs(tmp_path / "no_test", splits=("train",))
    assert_one_line_exit_2(cli_in_process("classify", "--data", no_test), "missing split folder")
    one_class = _cats_dogs(tmp_path / "one", classes=("cats",))
    assert_one_line_exit_2(cli_in_process("classify", "--data", one_class), "at least two are needed")
    file_path = tmp_path / "file.txt"
    file_path.write_text("x")
    assert_one_line_exit_2(cli_in_process("classify", "--data", file_path), "not a directory")
    assert_one_line_exit_2(cli_in_process("datasets", "stats", "--data", empty), "data directory is empty")


def test_limit_below_class_count(tmp_path):
    root = _cats_dogs(tmp_path / "d")
    assert_one_line_exit_2(cli_in_process("classify", "--data", root, "--limit", "1"), "--limit 1 is smaller")


def test_strict_fails_on_a_corrupt_image_and_stats_lists_it(tmp_path):
    root = _cats_dogs(tmp_path / "d", payload=b"\xff\xd8 truncated jpeg")
    assert_one_line_exit_2(cli_in_process("classify", "--data", root, "--strict"), "unreadable image (--strict)")
    stats = cli_in_process("datasets", "stats", "--data", root)
    assert stats.returncode == 0, stats.stderr
    assert "unreadable files (4):" in stats.stdout
    assert str(root / "train" / "cats" / "a.png") in stats.stdout
    assert "train | 1    | 1    | 2" in stats.stdout


def test_datasets_stats_prints_the_article_table_for_the_standin():
    result = cli_in_process("datasets", "stats")
    assert result.returncode == 0, result.stderr
    assert "train | 279  | 278  | 557" in result.stdout
    assert "test  | 70   | 70   | 140" in result.stdout
    assert "unreadable files: none" in result.stdout


HELPS = (["--help"], ["classify", "--help"], ["detect", "--help"], ["datasets", "stats", "--help"],
         ["synthetic", "--help"], ["cost", "--help"])


def test_help_explains_every_flag_without_importing_tensorflow():
    """Every --help in one fresh interpreter (one start instead of six): none imports TensorFlow or Keras."""
    code = (
        "import sys\nfrom l40sbench.cli import main\n"
        f"for argv in {list(HELPS)!r}:\n"
        "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
        "    print('=== END OF HELP ===')\n"
        "print('TF-LOADED' if 'tensorflow' in sys.modules or 'keras' in sys.modules else 'TF-FREE')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120).stdout
    assert out.strip().endswith("TF-FREE")
    helps = dict(zip((argv[0] for argv in HELPS), out.split("=== END OF HELP ===")))
    assert len(helps) == len(HELPS) and "classify" in helps["--help"]
    for flag in ("--base", "--data", "--epochs", "--batch-size", "--image-size", "--weights", "--fine-tune",
                 "--limit", "--output-dir", "--seed", "--precision", "--xla", "--strict"):
        assert flag in helps["classify"]
    for base in ("xception", "inceptionv3", "vgg19", "efficientnetv2b0", "--list-bases", "--model"):
        assert base in helps["classify"]
    for flag in ("--base", "--data", "--epochs", "--batch-size", "--image-size", "--init-checkpoint", "--classes",
                 "--limit", "--output-dir", "--seed", "--score-threshold", "--precision"):
        assert flag in helps["detect"]
    for base in ("ssd_resnet50_fpn", "faster_rcnn_resnet50", "faster_rcnn_inception_v2"):
        assert base in helps["detect"]
    for flag in ("--list", "--models", "--batch-sizes", "--devices", "--mode", "--precision", "--xla", "--optimizer",
                 "--warmup-steps", "--steps", "--memory-limit", "--timeout", "--find-max-batch", "--worker-hosts",
                 "--task-index", "--resume", "--output-dir"):
        assert flag in helps["synthetic"]
    assert "--throughput" in helps["cost"] and "--data" in helps["datasets"]


def test_datasets_stats_prints_the_detection_table_for_voc_layouts(tmp_path):
    result = cli_in_process("datasets", "stats", "--task", "detect")
    assert result.returncode == 0, result.stderr
    assert "split | apple | banana | orange | images" in result.stdout
    assert "train | 156   | 169    | 140    | 240" in result.stdout
    assert "test  | 35    | 40     | 42     | 60" in result.stdout
    plain = tmp_path / "voc"
    for split in ("train", "test"):
        (plain / split).mkdir(parents=True)
        (plain / split / "a.png").write_bytes(cv2.imencode(".png", np.zeros((9, 9, 3), np.uint8))[1].tobytes())
        (plain / split / "a.xml").write_text("<annotation><object><name>kiwi</name><bndbox><xmin>1</xmin><ymin>1</ymin>"
                                             "<xmax>8</xmax><ymax>8</ymax></bndbox></object></annotation>")
    detected = cli_in_process("datasets", "stats", "--data", plain)
    assert detected.returncode == 0, detected.stderr
    assert "train | 1    | 1" in detected.stdout and "unreadable files: none" in detected.stdout
    (plain / "train" / "b.jpg").write_bytes(b"\xff\xd8 truncated")
    (plain / "train" / "b.xml").write_text((plain / "train" / "a.xml").read_text())
    listed = cli_in_process("datasets", "stats", "--data", plain)
    assert listed.returncode == 0, listed.stderr
    assert "train | 1    | 1" in listed.stdout and f"unreadable files (1):\n  {plain / 'train' / 'b.jpg'}" in listed.stdout
    assert_one_line_exit_2(cli_in_process("detect", "--data", plain, "--strict"), "unreadable image (--strict)")
    (plain / "test" / "a.xml").unlink()
    assert_one_line_exit_2(cli_in_process("datasets", "stats", "--data", plain), "images without XML: a.png")


def test_an_unwritable_output_dir_fails_before_any_work(tmp_path):
    """Before the fix this came after decoding the whole set, as a traceback with exit 1."""
    root = _cats_dogs(tmp_path / "d")
    result = cli_in_process("classify", "--data", root, "--output-dir", "/proc/l40sbench/out", "--epochs", "1")
    assert_one_line_exit_2(result, "cannot write results to /proc/l40sbench/out")
    assert "decoding" not in result.stderr and "loading TensorFlow" not in result.stderr


def _run_sh_versions() -> list[str]:
    line = next(line for line in (REPO / "run.sh").read_text().splitlines() if line.startswith("supported=("))
    return line[len("supported=("):line.index(")")].split()


def test_run_sh_and_pyproject_name_the_same_python_versions():
    import tomllib

    from packaging.specifiers import SpecifierSet

    spec = SpecifierSet(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["requires-python"])
    in_range = [f"3.{minor}" for minor in range(6, 20) if f"3.{minor}.0" in spec]
    assert sorted(_run_sh_versions(), key=lambda v: int(v.split(".")[1])) == in_range
    assert _run_sh_versions() == sorted(_run_sh_versions(), key=lambda v: -int(v.split(".")[1]))  # newest first
    assert f"{sys.version_info.major}.{sys.version_info.minor}" in in_range


def test_run_sh_refuses_an_unsupported_python_in_one_line(tmp_path):
    for name in ("run.sh", "pyproject.toml"):
        shutil.copy(REPO / name, tmp_path / name)
    env = {**os.environ, "PYTHON": sys.executable.replace("python", "no-such-python")}
    result = subprocess.run(["bash", str(tmp_path / "run.sh"), "--help"], capture_output=True, text=True, env=env,
                            timeout=60)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert result.stderr.startswith("run.sh: needs Python 3.11 to 3.13") and "does not run" in result.stderr
    assert not (tmp_path / ".venv").exists()


def test_run_sh_chooses_the_build_with_one_driver_query_within_its_limit(tmp_path, tmp_path_factory):
    """run.sh's choice of build, as a dry run (L40SBENCH_INSTALL_DRY_RUN: the choice and the install command,
    nothing installed) of a copy with a venv of its own: a stand-in driver showing an L40S chooses the `gpu`
    extra, none the plain build; a driver that never answers is said and costs at most its limit; a venv that
    holds the GPU build keeps it where no GPU is shown (a login node); L40SBENCH_BUILD overrides."""
    from tests.conftest import standin_driver

    driver = standin_driver(tmp_path_factory.getbasetemp())
    if not driver:
        pytest.skip("no C compiler (cc) to build the stand-in CUDA driver")
    for name in ("run.sh", "pyproject.toml", "l40sbench/backends/cuda_driver.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / name, tmp_path / name)
    stamp = tmp_path / ".venv" / ".l40sbench-pyproject.sha256"

    def dry_run(gpus: int, build: str | None = None, held: str | None = None, hang: bool = False):
        env = {**os.environ, **driver, "L40SBENCH_INSTALL_DRY_RUN": "1", "STANDIN_GPUS": str(gpus),
               "STANDIN_HANG": "1" if hang else "0"}
        env.pop("L40SBENCH_BUILD", None)
        env.update({"L40SBENCH_BUILD": build} if build else {})
        stamp.unlink(missing_ok=True)
        if held:
            stamp.parent.mkdir(exist_ok=True)
            stamp.write_text(f"0123 uv 0.13.8, bytecode compiled, {held} build\n")
        started = time.perf_counter()
        done = subprocess.run(["bash", str(tmp_path / "run.sh")], capture_output=True, text=True, env=env, timeout=120)
        return done, time.perf_counter() - started

    for gpus, build, held, hang, chosen, why, said in [
            (1, None, None, False, "GPU", "the CUDA driver shows 1 GPU(s)", ""),
            (0, None, None, False, "CPU", "no NVIDIA driver shows a GPU (L40SBENCH_BUILD=gpu installs the GPU build anyway)", ""),
            (1, None, "cpu", False, "GPU", "the CUDA driver shows 1 GPU(s)", ""),
            (0, None, "gpu", False, "GPU", "this venv holds the GPU build",
             "run.sh: no CUDA driver shows a GPU to this call; keeping the GPU build this venv holds"),
            (1, None, None, True, "CPU", "the CUDA driver gave no answer within 10 s",
             "run.sh: the CUDA driver gave no answer within 10 s (a stuck driver?); installing the CPU build"),
            (1, None, "gpu", True, "GPU", "the CUDA driver gave no answer within 10 s",
             "run.sh: the CUDA driver gave no answer within 10 s (a stuck driver?); keeping the gpu build this venv holds"),
            (1, "cpu", None, False, "CPU", "L40SBENCH_BUILD=cpu", ""),
            (0, "gpu", None, False, "GPU", "L40SBENCH_BUILD=gpu", "")]:
        done, wall = dry_run(gpus, build, held, hang)
        assert done.returncode == 0, done.stderr
        choice, command = done.stdout.strip().splitlines()
        assert choice.startswith(f"run.sh: the {chosen} build (") and choice.endswith(f"): {why}"), choice
        extras = "test,runtimes,loadgen,jax" + (",gpu" if chosen == "GPU" else "")
        assert command == f'run.sh: would run: uv pip install --compile-bytecode -e "{tmp_path}[{extras}]"'
        assert done.stderr.startswith(said) and (said or done.stderr == ""), done.stderr
        assert wall < 60, wall  # a hang guard: the limit is 10 s
    done, _ = dry_run(0, "cuda")
    assert done.returncode == 2 and done.stderr == "run.sh: L40SBENCH_BUILD must be gpu, cpu or auto; got cuda\n"


def test_the_gpu_extra_pins_the_cuda_builds_of_the_pinned_versions():
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    pins = {line.split("==")[0]: line.split("==")[1] for line in project["dependencies"] if "==" in line}
    gpu = project["optional-dependencies"]["gpu"]
    assert f"tensorflow[and-cuda]=={pins['tensorflow']}" in gpu
    jax = [line.replace("jax==", "jax[cuda12]==") for line in project["optional-dependencies"]["jax"]
           if line.startswith("jax==")]
    assert sorted(line for line in gpu if line.startswith("jax[")) == sorted(jax)


# One name per idea across the commands, and the spellings an idea must not have in any --help.
IDEAS = {
    "--output-dir": ("--out", "--output", "--outdir", "--out-dir"),
    # --batch-sizes (the sweep's list) and --max-batch-size (infer's dynamic-batching maximum) are other ideas
    "--batch-size": ("--batch", "--bs"),
    "--devices": ("--device", "--gpus"),
    "--price": ("--price-per-minute", "--price-per-hour"),
}
# Where each idea applies, it has its one name (commands that compute take --devices and say cpu there).
TAKEN_BY = {
    "--output-dir": ("classify", "detect", "synthetic", "study", "report", "infer"),
    "--model": ("classify", "infer"),  # a model file; cost's name in its table is --label
    "--devices": ("classify", "detect", "synthetic", "study", "infer"),
    "--backend": ("classify", "detect", "synthetic", "study", "env"),
    "--price": ("study", "cost"),
    "--xla": ("classify", "detect", "synthetic", "study"),
    "--worker-hosts": ("classify", "detect", "synthetic"),
}


def _shown_flags():
    import argparse

    from l40sbench.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    for name, parser in sub.choices.items():
        yield name, [a for a in parser._actions if a.option_strings and a.help != argparse.SUPPRESS
                     and a.dest != "help"]


def test_every_command_names_each_idea_the_same_way_and_states_every_default():
    names = {}
    for command, actions in _shown_flags():
        shown = {option for action in actions for option in action.option_strings}
        names[command] = shown
        for canonical, others in IDEAS.items():
            assert not shown & set(others), f"{command}: {sorted(shown & set(others))} where {canonical} is the name"
        for action in actions:
            if action.default not in (None, False):
                assert "default" in (action.help or ""), f"{command} {action.option_strings}: no default stated"
    for flag, commands in TAKEN_BY.items():
        assert [c for c in commands if flag not in names[c]] == [], flag
    for command in TAKEN_BY["--devices"]:
        devices = next(a for a in dict(_shown_flags())[command] if "--devices" in a.option_strings)
        assert "cpu: on the CPU on purpose" in devices.help and "CUDA_VISIBLE_DEVICES picks" in devices.help


def test_cost_names_its_table_row_with_label_and_takes_model_for_a_release():
    shown = {option for command, actions in _shown_flags() if command == "cost" for a in actions
             for option in a.option_strings}
    assert "--label" in shown and "--model" not in shown
    result = cli_in_process("cost", "--throughput", "100", "--price", "1", "--model", "mine")
    assert result.returncode == 0 and "mine" in result.stdout, result.stderr
    assert "notice: --model is now --label" in result.stderr


def test_an_old_spelling_still_works_for_a_release_and_says_its_new_name(tmp_path):
    result = cli_in_process("report", "l40s", "--out", tmp_path / "r")
    assert result.returncode == 0 and (tmp_path / "r" / "report.md").exists(), result.stderr
    assert result.stderr.splitlines()[0] == ("notice: --out is now --output-dir, its name on every command; --out "
                                             "goes in the next release")
    refused = cli_in_process("infer", tmp_path / "no-run", "--scenario", "offline", "--batch", "4")
    assert refused.stderr.startswith("notice: --batch is now --max-batch-size,")
    assert_one_line_exit_2(refused, "no-run")
