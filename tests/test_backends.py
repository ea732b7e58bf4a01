"""Keras backends: classify and the sweep on jax beside tensorflow, nothing of TensorFlow loaded under jax,
the GPU script on the CPU, and the flags that name a backend a command cannot use.

Each jax run is a fresh interpreter with KERAS_BACKEND=jax: Keras picks its backend once per process,
and the test process runs tensorflow.
"""

import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from l40sbench.backends import tf_flops
from tests.conftest import (
    REPO,
    TINY_RUNS,
    assert_csv_matches_json,
    assert_one_line_exit_2,
    assert_timing_wiring,
    cli_in_process,
    run_cli,
    without_tensorflow,
)

JAX = {**os.environ, "KERAS_BACKEND": "jax"}


def _python(code: str, env: dict, timeout: int = 600):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, cwd=REPO,
                          env=env, timeout=timeout)


def _keys(value, prefix=""):
    """Every key path of a record, lists of records by their first element."""
    if isinstance(value, dict):
        return {k for key, item in value.items() for k in {f"{prefix}{key}"} | _keys(item, f"{prefix}{key}.")}
    if isinstance(value, list) and value and isinstance(value[0], dict):
        return _keys(value[0], f"{prefix}[].")
    return set()


def test_importing_the_pipeline_the_sweep_and_the_writers_under_jax_leaves_tensorflow_out():
    result = _python("""
        import sys
        import l40sbench.cli, l40sbench.classify.task, l40sbench.synthetic.sweep, l40sbench.synthetic.worker
        import l40sbench.core.records, l40sbench.report.document, l40sbench.backends.jax
        import keras
        assert keras.backend.backend() == "jax", keras.backend.backend()
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("tensorflow", "tf_keras", "torch"))
        assert not loaded, loaded
        print("clean")
    """, JAX)
    assert result.returncode == 0 and "clean" in result.stdout, result.stderr[-3000:]


# The GPU machine's shape on this CPU: a venv with jax and the few packages that machine has, no TensorFlow, keras
# or plotly, and the wheels that travel there beside it (gpu/shape_venv.sh makes both, once).
GPU_SHAPE = Path(os.environ.get("L40SBENCH_GPU_SHAPE", REPO / "build" / "gpu-shape"))
TRAVELLING = ("keras", "namex", "optree", "plotly", "narwhals")


@pytest.fixture(scope="module")
def gpu_run(tmp_path_factory):
    """gpu/run.sh at its CPU size (GPU_RUN_TINY: the preflight, the peer's Keras rows on one small
    model, `study all --quick` on its vgg19 classification step and its sweep, the pack) in the GPU machine's
    shape: its own venv (no TensorFlow), the travelling wheels installed from their folder, KERAS_BACKEND unset.
    Returns (OUT, WORK, the finished process, its wall seconds)."""
    python, wheels = GPU_SHAPE / "venv" / "bin" / "python", GPU_SHAPE / "wheels"
    pins = [f"{name}-{importlib.metadata.version(name)}-" for name in TRAVELLING]
    found = [p.name for p in wheels.glob("*.whl")]
    if not python.exists() or not all(any(name.startswith(pin) for name in found) for pin in pins):  # no download
        pytest.skip(f"the rehearsal runs in the GPU machine's shape, {GPU_SHAPE}/venv with the wheels "
                    f"{', '.join(pins)} beside it: run `gpu/shape_venv.sh` once (or name its folder in "
                    "L40SBENCH_GPU_SHAPE)")
    root = tmp_path_factory.mktemp("gpu-run")
    out, work = root / "out", root / "work"
    env = {key: value for key, value in os.environ.items()
           if key not in ("KERAS_BACKEND", "PYTHONPATH", "VIRTUAL_ENV")}
    env.update(GPU_RUN_TINY="1", WHEELS=str(wheels), WORK_DIR=str(work), PYTHON=str(python), TOTAL_S="900")
    started = time.perf_counter()
    result = subprocess.run(["bash", str(REPO / "gpu" / "run.sh"), str(out)], capture_output=True,
                            text=True, env=env, timeout=1100)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    return out, work, result, time.perf_counter() - started


@pytest.fixture(scope="module")
def jax_run(tiny_runs):
    """The tiny vgg19 on jax, TensorFlow blocked (tests/conftest.py): its record, its printed summary, a bound on
    its wall time, its folder."""
    folder, printed = tiny_runs["vgg19-jax"], tiny_runs.output("vgg19-jax")
    return json.loads((folder / "result.json").read_text()), printed.out, printed.wall_seconds, folder


def test_classify_on_jax_writes_the_record_tensorflow_writes(jax_run, tiny_runs):
    record, printed, wall, out = jax_run
    reference = json.loads((tiny_runs["vgg19"] / "result.json").read_text())
    # the same record shape, less what only TensorFlow has: its threads in the peak, the other runtimes' rows
    only_tensorflow = {key for key in _keys(reference)
                       if key == "env.peak.intra_op_threads" or key.startswith("inference.runtimes.")}
    # the neighbours a run saw (other test workers, on a busy host) are lists of any length, empty included
    seen = {key for key in _keys(reference) if key.startswith("telemetry.neighbours.") and ".[]." in key}
    assert _keys(reference) - only_tensorflow - seen <= _keys(record)
    assert record["dataset"] == reference["dataset"]
    assert record["config"]["epochs"] == reference["config"]["epochs"] == 3
    assert record["inference"]["images_timed"] == reference["inference"]["images_timed"] == 7
    assert_timing_wiring(record, wall, epochs=3, test_images=8)
    assert_csv_matches_json(out)
    assert record["config"]["backend"] == "jax" and reference["config"]["backend"] == "tensorflow"
    env = record["env"]
    assert env["backend"] == "jax" and env["backend_version"].startswith("0.") and env["tensorflow"] is None
    assert env["devices"] and env["devices"][0]["type"] == "CPU" and env["devices"][0]["name"] == "cpu:0"
    assert env["peak"]["backend"] == "jax" and reference["env"]["peak"]["backend"] == "tensorflow"
    # --devices cpu with a stand-in driver that never answers (tests/conftest.py): the CPU, chosen, the driver
    # never asked (the run would have waited on it and stopped)
    choice = env["device_choice"]
    assert (choice["chosen"], choice["why"], choice["gpus_present"]) == ("cpu", "--devices cpu", None)
    assert reference["env"]["device_choice"]["why"] == "the CUDA driver shows no GPU"  # this host, kept once asked
    devices = record["devices"]
    assert devices["compile"] == {"training": "jax.jit (XLA), as Keras on jax always compiles",
                                  "inference": "jax.jit (XLA)"}
    assert devices["trained_weight_max_change"] > 0  # the head trained
    assert "Keras backend               : jax" in printed
    # One convention on both backends (2 x MACs of convolutions and matmuls, backends.flop_convention).
    counted, profiled = (r["utilisation"]["forward_gflops_per_image"] for r in (record, reference))
    assert counted == pytest.approx(profiled, rel=0.03)
    assert record["utilisation"]["flop_counter"].endswith("from the traced jaxpr's conv_general_dilated and dot_general")
    assert reference["utilisation"]["flop_counter"] == tf_flops.COUNTER


@pytest.mark.long
def test_jax_counts_vgg16_at_224_px_as_published():
    """VGG-16's published 15.47 GMAC (convolutions and fully connected layers), twice, within 0.5 %."""
    result = _python("""
        from l40sbench.backends import jax as ops
        from l40sbench.synthetic.models import MODELS
        print("GFLOP", ops.forward_gflops(MODELS.get("vgg16").build(), 224))
    """, JAX)
    assert result.returncode == 0, result.stderr[-3000:]
    gflops = float(result.stdout.split("GFLOP")[1])
    assert gflops == pytest.approx(2 * 15.47, rel=0.005)


@pytest.mark.long
def test_gpu_run_is_the_study_on_its_backend(gpu_run):
    """The script runs `study all` on jax: its plan printed first, detection left out and why, the verdict."""
    _, work, result, _ = gpu_run
    printed = result.stdout
    assert "plan: study all (--quick), 2 step(s)" in printed
    assert "l40sbench classify --base vgg19 --image-size 32" in printed and "synthetic-leadergpu" in printed
    assert "detection needs TensorFlow: its steps are left out on jax" in printed
    state = json.loads((work / "study-jax" / "study.json").read_text())
    assert state["backend"] == "jax" and [s["status"] for s in state["steps"]] == ["ok", "ok"]


@pytest.mark.long
def test_each_backend_keeps_its_own_peak_beside_the_file_named(gpu_run):
    """gpu_run.sh names WORK/peak.json for its runs: jax's peak is kept beside it, measured once for all."""
    _, work, _, _ = gpu_run
    kept = json.loads((work / "peak.jax.json").read_text())
    assert kept["backend"] == "jax" and kept["source"] == "measured in this run"
    assert not (work / "peak.json").exists()  # tensorflow's: nothing measured one
    for name in ("01-classify-vgg19", "02-synthetic-leadergpu"):
        peak = json.loads((work / "study-jax" / name / "result.json").read_text())["env"]["peak"]
        assert peak["measured_utc"] == kept["measured_utc"]


def test_report_puts_the_backends_side_by_side(jax_run, tiny_runs, tmp_path):
    _, _, _, out = jax_run
    result = cli_in_process("report", tiny_runs["vgg19"], out, "--output-dir", tmp_path / "report")
    assert result.returncode == 0, result.stderr
    text = (tmp_path / "report" / "report.md").read_text()
    assert "## Keras backends side by side" in text
    assert "| classify vgg19 32px b4 fp32 | jax " in text and "| classify vgg19 32px b4 fp32 | tensorflow " in text
    from l40sbench.report.inputs import machine

    here = machine(json.loads((out / "result.json").read_text()))
    assert f"**[A]** {here} · tensorflow · **[B]** {here} · jax\n" in text  # each backend a column group
    assert (tmp_path / "report" / "backends_0.png").stat().st_size > 10_000
    compared = cli_in_process("compare", tiny_runs["vgg19"], out)
    assert_one_line_exit_2(compared, "nothing to compare")  # another backend is another configuration
    assert "backend tensorflow" in compared.stdout and "backend jax" in compared.stdout


def test_infer_on_a_jax_run_says_which_backend_it_needs(jax_run):
    _, _, _, out = jax_run
    assert_one_line_exit_2(cli_in_process("infer", out), "was fine-tuned on jax")


@pytest.mark.long
def test_training_learns_the_standin_on_jax(tmp_path):
    """The learning test of test_classify_e2e, on jax: a linear head on a random ResNet-50's frozen features;
    0.943-0.993 after 12 epochs over seeds 0-4 (docs/performance-log.md, "How far the learning tests are from their
    bounds"). With --epoch-scoring off, as there: the 12 scorings between epochs change no weight and were most
    of this run's time."""
    out = tmp_path / "learn"
    result = run_cli("classify", "--backend", "jax", "--base", "resnet50", "--image-size", 32, "--limit", 200,
                     "--epochs", 12, "--weights", "none", "--epoch-scoring", "off", "--output-dir", out, env=JAX)
    assert result.returncode == 0, result.stderr[-3000:]
    record = json.loads((out / "result.json").read_text())
    assert record["env"]["backend"] == "jax" and record["dataset"]["test_images"] == 140
    assert record["train"]["test_metric_per_epoch"] == []
    accuracy = record["accuracy"]["test_accuracy"]
    assert accuracy >= 0.85, f"test accuracy {accuracy:.3f} after 12 epochs on jax (bound 0.85; chance 0.5)"


@pytest.mark.long
def test_a_tiny_sweep_on_jax_over_two_logical_devices_prints_the_study_tables(tmp_path):
    out = tmp_path / "sweep"
    result = run_cli("synthetic", "--backend", "jax", "--models", "lenet", "--batch-sizes", 4, "--devices", "1,2",
                     "--steps", 2, "--warmup-steps", 1, "--output-dir", out, env=without_tensorflow(tmp_path))
    assert result.returncode == 0, result.stderr[-3000:]
    record = json.loads((out / "result.json").read_text())
    assert record["config"]["settings"]["backend"] == "jax" and record["env"]["backend"] == "jax"
    assert [(r["devices"], r["status"], r["backend"]) for r in record["rows"]] == [(1, "ok", "jax"), (2, "ok", "jax")]
    for row in record["rows"]:
        assert row["images_per_second"] > 0 and row["gflops_per_image"] > 0 and 0 < row["utilisation"] <= 1
    assert record["rows"][1]["scaling_efficiency"] > 0
    assert "| devices | LeNet (batch 4) |" in result.stdout and "Keras backend               : jax" in result.stdout
    assert result.stdout.count("| batch size | lenet ") == 2


@pytest.mark.long
def test_the_gpu_script_runs_on_the_cpu_under_jax_without_tensorflow(gpu_run):
    """The rehearsal in the GPU machine's shape: the wheels from their folder, the preflight, the peer's suite rows
    (no timm here: it says so), the study, and what comes back: under 8 files of 16 MiB, the table and the JSON."""
    out, work, result, wall = gpu_run
    printed = result.stdout
    assert f"preflight: ok       keras {importlib.metadata.version('keras')} from {work / 'site'}" in printed
    assert "preflight: everything is there" in printed and "peer: torch and timm do not both import here" in printed
    assert f"preflight: ok       plotly {importlib.metadata.version('plotly')} from {work / 'site'}" in printed
    assert "tensorflow" not in subprocess.run([str(GPU_SHAPE / "venv" / "bin" / "python"), "-m", "pip", "list"],
                                              capture_output=True, text=True).stdout  # the shape: no TensorFlow
    for name in ("01-classify-vgg19", "02-synthetic-leadergpu"):
        record = json.loads((work / "study-jax" / name / "result.json").read_text())
        assert record["complete"] and record["env"]["backend"] == "jax", name
    back = sorted(p for p in out.rglob("*") if p.is_file())
    assert [p.name for p in back] == ["gpu.json", "gpu.md", "records.tar.gz", "run.txt"]
    assert len(back) <= 8 and all(p.stat().st_size < 16 * 2**20 for p in back)
    table, run = (out / "gpu.md").read_text(), json.loads((out / "gpu.json").read_text())
    assert "| peer-keras-jax | finished |" in table and "| study-jax | finished |" in table
    rows = [r for r in run["peer_rows"] if r["side"] == "keras-jax"]
    assert {(r["batch"], r["precision"]) for r in rows} == {(2, "bf16"), (2, "fp32"), (1, "bf16"), (1, "fp32")}
    assert all(r["status"] == "ok" and r["images_per_second"] > 0 and r["gflops_per_image"] > 0 for r in rows), [
        (r["batch"], r["precision"], r["status"]) for r in rows]
    assert "| resnet50 | 2 | fp32 | - | - | - | " in table  # the suite's row, and no timm figure beside it
    assert "| 01-classify-vgg19" not in table and "| classify-vgg19 " in table  # the study's own table
    assert "| MLPerf Inference v5.0 closed, H200 SXM, offline | resnet50 | 95,089 samples/s |" in table
    seen = run["paths"]
    assert any("the traced jaxpr" in line for line in seen["FLOP counts"])
    assert any("windows of" in line for line in seen["sweep step windows"])
    assert all(line.startswith("study-jax/") for line in seen["energy per image"])
    import tarfile

    with tarfile.open(out / "records.tar.gz") as packed:
        names = packed.getnames()
    assert "study-jax/report.md" in names  # it comes back; the page stays there (over the pack's 4 MiB per file)
    assert (work / "study-jax" / "report" / "index.html").exists()  # plotly travelled, so the page is drawn
    assert wall < 900  # TOTAL_S: the command keeps its deadline


@pytest.mark.parametrize("args, env, fragment", [
    (("detect", "--backend", "jax"), {}, "detect runs on the tensorflow backend only"),
    (("detect",), {"KERAS_BACKEND": "jax"}, "from KERAS_BACKEND"),
    (("classify",), {"KERAS_BACKEND": "theano"}, "KERAS_BACKEND 'theano' is not a Keras backend"),
    (("classify", "--backend", "jax", "--devices", "2"), {}, "runs on the tensorflow backend (tf.distribute)"),
    (("classify", "--backend", "jax", "--runtimes", "onnxruntime"), {}, "use --backend tensorflow for them"),
    (("synthetic", "--backend", "torch", "--models", "lenet", "--devices", "1,2"), {}, "runs the sweep on one device"),
    (("synthetic", "--backend", "jax", "--models", "lenet", "--precision", "mixed_float16"), {},
     "use mixed_bfloat16 on jax"),
])
def test_a_backend_a_command_cannot_use_is_one_line_and_exit_2(tmp_path, args, env, fragment):
    result = cli_in_process(*args, "--output-dir", tmp_path / "out", env=env)
    assert_one_line_exit_2(result, fragment)
    assert not (tmp_path / "out" / "result.json").exists()


@pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                    reason="torch is not installed: CI leaves it out (several GB); l40sbench[torch] for this test")
def test_classify_and_a_sweep_on_torch(tmp_path):
    """By hand: `.venv/bin/pip install torch==2.13.0`, then ./run.sh test tests/test_backends.py -k torch."""
    torch_env = {**os.environ, "KERAS_BACKEND": "torch"}
    out = tmp_path / "classify"
    result = run_cli(*TINY_RUNS["vgg19"], "--output-dir", out, env=torch_env)
    assert result.returncode == 0, result.stderr[-3000:]
    record = json.loads((out / "result.json").read_text())
    assert record["env"]["backend"] == "torch" and record["devices"]["trained_weight_max_change"] > 0
    assert record["devices"]["compile"] == {"training": "eager", "inference": "eager, torch.no_grad"}
    sweep = run_cli("synthetic", "--models", "lenet", "--batch-sizes", 4, "--steps", 2, "--warmup-steps", 1,
                    "--output-dir", tmp_path / "sweep", env=torch_env)
    assert sweep.returncode == 0, sweep.stderr[-3000:]
    rows = json.loads((tmp_path / "sweep" / "result.json").read_text())["rows"]
    assert [(r["status"], r["backend"]) for r in rows] == [("ok", "torch")] and rows[0]["images_per_second"] > 0


def test_a_memory_cap_on_a_gpu_is_refused_off_tensorflow():
    """On a GPU the cap is TensorFlow's logical-device limit: jax would run without one, so it is refused."""
    from l40sbench.errors import UserError
    from l40sbench.synthetic.config import SweepConfig
    from l40sbench.synthetic.job import StepSettings
    from l40sbench.synthetic.sweep import check_against_machine

    state = {"env": {"devices": [{"type": "GPU", "model": "NVIDIA H200", "name": "cuda:0"}], "cpu_count": 16}}
    for backend, refused in (("jax", True), ("tensorflow", False)):
        config = SweepConfig(models=("lenet",), settings=StepSettings(memory_limit_gb=8, backend=backend))
        if refused:
            with pytest.raises(UserError, match="TensorFlow's logical-device limit"):
                check_against_machine(config, state)
        else:
            check_against_machine(config, state)


def test_the_jax_sweep_step_trains_and_infers_on_one_device_and_refuses_more_than_it_sees(tmp_path):
    """backends.jax.sweep_step in a jax interpreter without TensorFlow (the long tier sweeps through the CLI
    on two devices): two train steps move the loss, inference returns its sum, a third device is refused."""
    done = _python("""
        import json, keras, numpy as np
        from l40sbench.backends import jax as kernels
        from l40sbench.synthetic.job import Job, StepSettings
        from l40sbench.synthetic.models import MODELS

        loss = keras.losses.sparse_categorical_crossentropy
        train, names, replicas, model = kernels.sweep_step(MODELS.get("lenet"), Job("lenet", 4, 1, StepSettings(
            backend="jax")), keras.optimizers.SGD(0.01), loss)
        losses = [float(train()) for _ in range(3)]
        infer, *_ = kernels.sweep_step(MODELS.get("lenet"), Job("lenet", 4, 1, StepSettings(
            backend="jax", mode="inference")), keras.optimizers.SGD(0.01), loss)
        try:
            kernels.sweep_step(MODELS.get("lenet"), Job("lenet", 4, 3, StepSettings(backend="jax")),
                               keras.optimizers.SGD(0.01), loss)
            refused = None
        except ValueError as exc:
            refused = str(exc)
        print(json.dumps({"losses": losses, "names": names, "replicas": replicas, "inferred": float(infer()),
                          "refused": refused}))
    """, without_tensorflow(tmp_path), timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["names"] == ["cpu:0"] and out["replicas"] == 1
    assert all(map(lambda v: v == v, out["losses"])) and out["losses"][0] != out["losses"][-1]
    assert out["inferred"] == pytest.approx(4.0, rel=1e-3)  # softmax rows of 4 images, summed
    assert out["refused"] == "3 devices asked, 1 cpu device(s) visible to jax"
