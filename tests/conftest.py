import dataclasses
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
INFERENCE_UTILISATION_BOUND = 1.25


def pytest_configure(config):
    """One peak for the session, measured while nothing else runs.

    Every run the tests start reads it from $L40SBENCH_PEAK_FILE instead of measuring (11 s a run on two
    cores; test_classify_e2e has a run that measures its own). Under pytest-xdist the controller measures
    it before the workers start, so no run's figures are divided by a peak taken while the other worker
    was busy; the workers inherit the variable. It measures jax's too, for the runs on jax (tensorflow's
    kernels' peak is not jax's). Without xdist the session's first run measures each. ./run.sh test's two
    sessions share one peak as they share the tiny runs: the serial session reads what the controller measured.
    """
    if hasattr(config, "workerinput"):  # an xdist worker: the controller has set the file up
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if TINY_RUNS_VARIABLE in os.environ:  # ./run.sh test names one folder for its two sessions
        folder = os.environ[TINY_RUNS_VARIABLE]
    else:
        runs, folder = (tempfile.mkdtemp(prefix=f"l40sbench-test-{kind}-") for kind in ("runs", "peak"))
        for made in (runs, folder):
            config.add_cleanup(lambda made=made: shutil.rmtree(made, ignore_errors=True))
        os.environ[TINY_RUNS_VARIABLE] = runs
    os.environ["L40SBENCH_PEAK_FILE"] = str(Path(folder) / "peak.json")
    if config.getoption("numprocesses", None):
        import importlib.util

        backends = ["tensorflow"] + (["jax"] if importlib.util.find_spec("jax") else [])  # jax's: peak.jax.json
        for backend in backends:
            measured = subprocess.run([sys.executable, "-m", "l40sbench.peak"], cwd=REPO, capture_output=True,
                                      text=True, timeout=600, env={**os.environ, "KERAS_BACKEND": backend})
            assert measured.returncode == 0, measured.stderr[-3000:]


# The slowest modules first, so that under `--dist loadfile` (./run.sh test) the workers finish together: those
# that make the tiny runs every other module reads (each on its own worker), then the merge tier's longest
# (clean clone, --durations), then the long tier's; the others follow in their own order.
SLOWEST_FIRST = ("test_detect_e2e.py", "test_runtimes.py", "test_backends.py", "test_study.py",
                 "test_report_page.py", "test_structure_figures.py", "test_tfds.py", "test_detect_learning.py",
                 "test_classify_e2e.py", "test_devices.py", "test_synthetic_e2e.py", "test_compare.py")


def pytest_collection_modifyitems(items):
    # run.sh runs the serial part for the long tier only (the merge tier's would be empty): a serial test
    # outside the long tier would never run there.
    stray = [item.nodeid for item in items if item.get_closest_marker("serial") and not item.get_closest_marker("long")]
    if stray:
        raise pytest.UsageError(f"marked serial but not long (./run.sh test runs serial tests in the long tier only): "
                                f"{', '.join(stray)}")
    rank = {name: i for i, name in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: a module keeps its order


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory):
    """Decoded-image cache in a temp folder, so tests leave the user's cache alone."""
    os.environ["L40SBENCH_CACHE"] = str(tmp_path_factory.mktemp("decoded"))


def _resident_kib() -> tuple[int, int]:
    """This process's resident memory now and at its peak, in KiB (Linux's /proc; (0, 0) elsewhere)."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return 0, 0
    return tuple(int(re.search(rf"^{key}:\s+(\d+)", status, re.M).group(1)) for key in ("VmRSS", "VmHWM"))


@pytest.fixture(autouse=True, scope="module")
def _release_memory_after_module(request):
    """What a module's in-process runs left behind, given back before the worker's next module.

    The tests that run the CLI in process keep Keras' global state and the C allocator's freed arenas in their
    worker; under `--dist loadfile` one worker runs a quarter of the modules, and two workers of 7 GB each
    beside a test's 5 GB child passed the host's 24 GB (the kernel's OOM killer, 2026-12-07, long tier). With
    $L40SBENCH_TEST_MEMLOG set, each module's resident memory after it and after the release is appended there.
    """
    yield
    import ctypes
    import gc

    before = _resident_kib()[0]
    if "keras" in sys.modules:
        sys.modules["keras"].backend.clear_session()
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass
    if os.environ.get("L40SBENCH_TEST_MEMLOG"):
        now, peak = _resident_kib()
        with open(os.environ["L40SBENCH_TEST_MEMLOG"], "a") as log:
            log.write(f"{os.getpid()} {request.module.__name__} after={before // 1024}MB "
                      f"released={now // 1024}MB peak={peak // 1024}MB\n")


def run_cli(*args, timeout=600, cwd=REPO, **kwargs):
    """The CLI in a fresh interpreter, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "l40sbench", *map(str, args)],
        capture_output=True, text=True, timeout=timeout, cwd=cwd, **kwargs,
    )


@dataclasses.dataclass(frozen=True)
class Finished:
    """What a CLI call returned and printed, as subprocess.run's result names them."""

    returncode: int
    stdout: str
    stderr: str


def cli_in_process(*args, env: dict | None = None) -> Finished:
    """The CLI's entry function in this process, as `python -m l40sbench` calls it, less the process's exit:
    its exit code (argparse's, too) and what it printed. `env` is added to os.environ for the call alone.

    For the error contract (one line, exit 2) of each bad input: a fresh interpreter per case costs a second or
    more of imports; each command's wiring through `python -m l40sbench` keeps one run_cli test of its own.
    """
    import contextlib
    import io
    from unittest import mock

    from l40sbench import cli

    out, err = io.StringIO(), io.StringIO()
    with mock.patch.dict(os.environ, env or {}), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main([str(arg) for arg in args])
        except SystemExit as stopped:  # argparse: --help, a bad flag
            code = stopped.code if isinstance(stopped.code, int) else 1
    return Finished(code, out.getvalue(), err.getvalue())


def assert_audits_pass(checked: list[dict], returncode: int) -> None:
    """Every compliance test of an `--audit all` run PASSes, or FAILs on speed alone with its pairs on both sides of
    1 (the audited run faster in one turn, slower in another): a shared host moves a 2-3 second latency by 10-20 %
    within a pair, and LoadGen's TEST05 bound is 5 %; a SUT whose speed an audit changes moves every pair one way,
    and fails here. An offline run LoadGen calls INVALID for ending early ("Increase expected QPS": the host ran
    faster than the probe's rate with its margin, 1.4x within one serial long-tier run, 2026-12-08) is the host's
    speed too. A test MLPerf does not ask of the model (TEST04 of a detector: audits.required) is shown, not judged:
    its same sample's NMS may cost less than the mix. The command's exit says FAIL wherever a test MLPerf asks of
    the model did."""
    from l40sbench.loadgen import audits

    said = "\n".join(audits.line(a) for a in checked)
    for audit in (a for a in checked if a.get("required", True)):
        low, high = audit["ratio_range"]
        speed_only = all("against the baseline" in why or "Increase expected QPS" in why for why in audit["why"])
        assert audit["verdict"] == "PASS" or (speed_only and low <= 1 <= high), said
    failed = any(a["verdict"] == "FAIL" and a.get("required", True) for a in checked)
    assert returncode == (1 if failed else 0), said


def assert_one_line_exit_2(result, fragment):
    """A user's mistake: exit 2, no traceback, one error line, last, naming the problem."""
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1, result.stderr
    assert result.stderr.strip().splitlines()[-1] == errors[0]
    assert fragment in errors[0], errors[0]


def assert_csv_matches_json(out_dir):
    """result.csv's value row says what result.json says, field by field."""
    import csv
    import json

    from l40sbench.core.records import flatten

    flat = flatten(json.loads((out_dir / "result.json").read_text()))
    with open(out_dir / "result.csv", newline="") as handle:
        (row,) = list(csv.DictReader(handle))
    assert row.keys() == flat.keys()
    for key, value in flat.items():
        if value is None:
            assert row[key] == "", key
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            assert row[key] == str(value), key
        else:
            assert float(row[key]) == value, key


def assert_timing_wiring(result, wall_seconds, *, epochs, test_images, warmup=1):
    """The clocks are wired to what they say they measure."""
    train, inference = result["train"], result["inference"]
    assert len(train["epoch_seconds"]) == train["epochs"] == epochs
    assert len(train["loss_per_epoch"]) == epochs
    assert 0 < sum(train["epoch_seconds"]) <= wall_seconds
    assert train["total_seconds"] == pytest.approx(sum(train["epoch_seconds"]))
    assert inference["warmup_excluded"] == warmup and inference["batch_size"] == 1
    assert inference["images_timed"] == test_images - warmup
    times = inference["times_ms"]  # every timed image, for the report's latency distribution
    assert len(times) == inference["images_timed"] and min(times) == inference["min_ms"]
    assert sum(times) / len(times) == pytest.approx(inference["mean_ms"])
    # the training's wall time holds the epoch clocks and what runs between them, within the CLI call
    assert train["total_seconds"] <= train["wall_seconds"] <= wall_seconds
    assert_utilisation_wiring(result)


def assert_utilisation_wiring(result):
    """Utilisation is GFLOP per image x images/s over the peak of the run's precision."""
    from l40sbench.core.results import rate_epoch_seconds
    from l40sbench.core.utilisation import peak_for

    u, train = result["utilisation"], result["train"]
    assert (u["peak"], u["peak_gflops"]) == peak_for(result["env"]["peak"], result["config"]["precision"])
    assert u["forward_gflops_per_image"] > 0
    inference_rate = result["inference"]["images_per_second"]
    assert u["inference_achieved_gflops"] == pytest.approx(u["forward_gflops_per_image"] * inference_rate)
    assert u["inference"] == pytest.approx(u["inference_achieved_gflops"] / u["peak_gflops"])
    if u["train_flops_per_image"].startswith("counted: "):  # from the traced training step (detection)
        assert 0 < u["train_gflops_per_image"] and result["utilisation"]["flop_counter"]
    else:
        per_forward = 1 if u["train_flops_per_image"].startswith("1 x") else 3
        assert u["train_gflops_per_image"] == pytest.approx(u["forward_gflops_per_image"] * per_forward)
    epoch = rate_epoch_seconds(train)
    global_batch = (result.get("devices") or {}).get("global_batch") or train["batch_size"]  # every replica's
    images = (global_batch * result["model"]["steps_per_epoch"] if result["task"] == "detect"
              else result["dataset"]["train_images"])
    assert u["train_achieved_gflops"] == pytest.approx(u["train_gflops_per_image"] * images / epoch)
    assert u["train"] == pytest.approx(u["train_achieved_gflops"] / u["peak_gflops"])
    # The peak is a measured matmul rate, not the core's theoretical one: Faster R-CNN's box head (four 3x3
    # convolutions over 300 regions at once) has served at 100.8 % of it on a 2-core CPU (docs/performance-log.md,
    # "The measured peak"), so inference gets a margin above 1; a wrong unit or count is off by far more.
    assert 0 < u["train"] <= 1 and 0 < u["inference"] <= INFERENCE_UTILISATION_BOUND


def assert_ctrl_c_keeps_finished_epochs(out_dir, *args, stop: str = "SIGINT"):
    """Runs the CLI with `--epochs 500`, sends SIGINT (Ctrl-C; or `stop`: SIGTERM, as a spot instance is taken
    back) once epoch 2 is logged: exit 130, no traceback, one line naming the stop, and result.json keeps every
    finished epoch with complete: false and the signal."""
    import json
    import signal

    process = subprocess.Popen(
        [sys.executable, "-m", "l40sbench", *map(str, args), "--epochs", "500", "--output-dir", str(out_dir)],
        cwd=REPO, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
        # A shell starting a job in the background makes it ignore SIGINT, and an ignored
        # signal stays ignored across exec: give the child Ctrl-C back, as a terminal would.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        for line in process.stderr:
            if line.startswith("epoch 2/500"):
                break
        process.send_signal(getattr(signal, stop))
        rest = process.stderr.read()
        assert process.wait(timeout=120) == 130, rest[-3000:]
    finally:
        process.kill()
    said = "interrupted" if stop == "SIGINT" else f"stopped by {stop}"
    assert "Traceback" not in rest and re.search(rf"^{said}: \d+ finished epoch\(s\) kept in .*\(complete: false\)$",
                                                 rest.strip().splitlines()[-1]), rest[-3000:]
    result = json.loads((out_dir / "result.json").read_text())
    assert result["complete"] is False and result["inference"] is None and result["stopped_by"] == stop
    train = result["train"]
    assert train["epochs"] >= 2 and len(train["epoch_seconds"]) == len(train["loss_per_epoch"]) == train["epochs"]


TINY_RUNS = {
    # Timed on every installed runtime as well (export and agreement: tests/test_runtimes.py).
    "vgg19": ["classify", "--base", "vgg19", "--image-size", "32", "--limit", "8", "--batch-size", "4",
              "--epochs", "3", "--weights", "none", "--runtimes", "all"],
    # The same run on jax, in a fresh interpreter where TensorFlow cannot be imported (tests/test_backends.py).
    # It runs with the stand-in CUDA driver and --devices cpu: on the CPU on purpose, though a GPU is shown.
    "vgg19-jax": ["classify", "--backend", "jax", "--base", "vgg19", "--image-size", "32", "--limit", "8",
                  "--batch-size", "4", "--epochs", "3", "--weights", "none", "--devices", "cpu"],
    # No --epochs: without a GPU the run trains 1 epoch and projects the article's 200 (test_detect_e2e.py
    # checks that on this run's record and output). Its SavedModel is exported beside it and reloaded.
    "ssd_resnet50_fpn": ["detect", "--base", "ssd_resnet50_fpn", "--image-size", "128", "--limit", "4",
                         "--batch-size", "2", "--precision", "fp32", "--runtimes", "savedmodel"],
}
# The tiny runs made in a child process of their own, with this environment added: Keras picks its backend once
# per process, and the test process runs tensorflow.
CHILD_RUNS = {"vgg19-jax": {"KERAS_BACKEND": "jax"}}
# A package named tensorflow that cannot be imported: a process that needs TensorFlow fails at once.
NO_TENSORFLOW = "raise ImportError('tensorflow is blocked in this test: the jax path must not need it')\n"


def without_tensorflow(folder: Path) -> dict:
    """The environment of a jax process in which `import tensorflow` fails (a package of that name first on the
    path), as on the GPU machine, which has no TensorFlow."""
    blocked = folder / "blocked"
    (blocked / "tensorflow").mkdir(parents=True, exist_ok=True)
    (blocked / "tensorflow" / "__init__.py").write_text(NO_TENSORFLOW)
    return {**os.environ, "KERAS_BACKEND": "jax", "PYTHONPATH": os.pathsep.join([str(blocked), str(REPO)])}


def standin_driver(folder: Path) -> dict:
    """The environment that makes l40sbench read the stand-in CUDA driver (tests/standin/libcuda.c: one NVIDIA
    L40S that no framework can use), built once into `folder` with the C compiler; empty without one."""
    import fcntl

    library = folder / "libcuda-standin.so"
    with open(folder / "libcuda-standin.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not library.exists():
            compiler = shutil.which("cc") or shutil.which("gcc")
            if compiler is None:
                return {}
            subprocess.run([compiler, "-shared", "-fPIC", "-o", str(library), str(REPO / "tests/standin/libcuda.c")],
                           check=True, capture_output=True, timeout=120)
    return {"L40SBENCH_CUDA_DRIVER": str(library)}


def export_dir(run: Path) -> Path:
    """Where a tiny detector run's SavedModel export goes: beside its folder."""
    return run.with_name(f"{run.name}-saved_model")


# The folder the tiny runs are kept in, shared by the xdist workers and by ./run.sh test's serial session.
TINY_RUNS_VARIABLE = "L40SBENCH_TEST_RUNS"


@dataclasses.dataclass(frozen=True)
class TinyRunOutput:
    """What the CLI call that made a tiny run printed, and its wall time."""

    out: str
    err: str
    wall_seconds: float


class _TinyRuns:
    """Result folders of tiny runs, each made the first time any test process asks for it.

    The processes share one folder ($L40SBENCH_TEST_RUNS): a run is made once for the whole suite, under a
    lock that a second process asking for it meanwhile waits on. What the call printed and its wall time
    are kept beside the folder (`output`).
    """

    def __init__(self, root: Path):
        self.root = root

    def __getitem__(self, name: str) -> Path:
        import contextlib
        import fcntl
        import json
        import time

        folder = self.root / name
        with open(self.root / f"{name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not _complete(folder):
                from l40sbench import cli

                shutil.rmtree(folder, ignore_errors=True)  # what a run that failed left
                argv = [*TINY_RUNS[name], *self.epochs_flag(name), *self.export_flag(name, folder),
                        "--output-dir", str(folder)]
                with open(self.root / f"{name}.out", "w") as out, open(self.root / f"{name}.err", "w") as err:
                    started = time.perf_counter()
                    if name in CHILD_RUNS:
                        # the stand-in driver never answers (a stuck driver): --devices cpu must not ask it
                        env = {**without_tensorflow(self.root), **CHILD_RUNS[name], **standin_driver(self.root),
                               "STANDIN_HANG": "1"}
                        code = subprocess.run([sys.executable, "-m", "l40sbench", *argv], stdout=out, stderr=err,
                                              cwd=REPO, env=env, timeout=900).returncode
                    else:
                        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                            code = cli.main(argv)
                    wall = time.perf_counter() - started
                assert code == 0, (self.root / f"{name}.err").read_text()[-3000:]
                (self.root / f"{name}.wall.json").write_text(json.dumps(wall))
        return folder

    @staticmethod
    def export_flag(name: str, folder: Path) -> list[str]:
        """The tiny detector exports its SavedModel (tests/test_detect_e2e.py reloads it)."""
        if TINY_RUNS[name][0] != "detect":
            return []
        shutil.rmtree(export_dir(folder), ignore_errors=True)
        return ["--export", str(export_dir(folder)), "--score-threshold", "0"]

    @staticmethod
    def epochs_flag(name: str) -> list[str]:
        """A run without --epochs trains the article's count where a GPU is visible: 1 epoch there instead."""
        if "--epochs" in TINY_RUNS[name]:
            return []
        from l40sbench.backends.tf_device import has_gpu

        return ["--epochs", "1"] if has_gpu() else []

    def output(self, name: str) -> TinyRunOutput:
        import json

        self[name]
        return TinyRunOutput((self.root / f"{name}.out").read_text(), (self.root / f"{name}.err").read_text(),
                             json.loads((self.root / f"{name}.wall.json").read_text()))


def _complete(folder: Path) -> bool:
    import json

    try:
        return json.loads((folder / "result.json").read_text())["complete"] is True
    except (OSError, ValueError, KeyError):
        return False


@pytest.fixture(scope="session")
def tiny_runs():
    """Real result folders from tiny runs: vgg19 on tensorflow (timed on every runtime) and on jax, and one
    detector (exported, and timed on the reloaded SavedModel, so reports draw a runtime comparison). Tests copy a
    folder before changing it."""
    root = Path(os.environ[TINY_RUNS_VARIABLE])
    root.mkdir(parents=True, exist_ok=True)
    return _TinyRuns(root)


def local_hosts(count: int) -> str:
    """--worker-hosts for `count` workers on 127.0.0.1, each on a port free a moment ago."""
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ",".join(f"127.0.0.1:{port}" for port in ports)
