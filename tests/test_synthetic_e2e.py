"""Synthetic sweeps end to end through the CLI, at tiny sizes: the tables, out of memory, resume, two workers."""

import json
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import REPO, cli_in_process, local_hosts, run_cli

TINY = ("--steps", "2", "--warmup-steps", "1")


def _rows(out_dir):
    return [json.loads(line) for line in (out_dir / "rows.jsonl").read_text().splitlines()]


@pytest.mark.long
def test_a_tiny_sweep_makes_both_table_shapes_and_marks_out_of_memory(tmp_path):
    """lenet and googlenet at batch 2 and 256 on 1 and 2 logical CPU devices under a 1.75 GB cap:
    googlenet at 256 needs far more (its first activation alone is 0.8 GB), the rest stays under 1.2 GB."""
    out = tmp_path / "sweep"
    result = run_cli("synthetic", "--models", "lenet,googlenet", "--batch-sizes", "2,256", "--devices", "1,2",
                     "--memory-limit", "1.75", *TINY, "--output-dir", out)
    assert result.returncode == 0, result.stderr[-3000:]
    record = json.loads((out / "result.json").read_text())
    assert record["task"] == "synthetic" and record["complete"] and record["schema"].startswith("l40sbench.result/")
    status = {(r["model"], r["per_device_batch"], r["devices"]): r["status"] for r in record["rows"]}
    assert status == {(m, b, d): "oom" if (m, b) == ("googlenet", 256) else "ok"
                      for m in ("lenet", "googlenet") for b in (2, 256) for d in (1, 2)}
    peak_gflops = record["env"]["peak"]["matmul"]["float32"]["gflops"]
    for row in record["rows"]:
        assert row["device_kind"] == "CPU" and row["total_batch"] == row["per_device_batch"] * row["devices"]
        if row["status"] == "ok":
            assert row["images_per_second"] > 0 and row["images_per_second_stderr"] >= 0 and row["steps"] == 2
            assert row["gflops_per_image"] > 0 and row["achieved_tflops"] > 0 and 0 < row["utilisation"] <= 1
            assert row["utilisation_peak"] == "float32"
            telemetry = row["telemetry"]  # what the device did while the steps were timed
            assert (telemetry.get("energy") == "unavailable" and telemetry["reason"]) or "steps" in telemetry["phases"]
            # the figures tie together exactly: images/s = total batch x steps / the sum of the step times;
            # training costs 3 forward passes; the CPU's logical devices share the one CPU's peak
            step_seconds_sum = row["step_ms_mean"] * row["steps"] / 1000
            assert row["images_per_second"] == pytest.approx(row["total_batch"] * row["steps"] / step_seconds_sum)
            assert row["achieved_tflops"] == pytest.approx(3 * row["gflops_per_image"] * row["images_per_second"] / 1e3)
            assert row["utilisation"] == pytest.approx(row["achieved_tflops"] * 1e3 / peak_gflops)
            assert row["peak_memory_mb"] > 0 and row["scaling_efficiency"] > 0
        else:
            assert "1.75 GiB cap" in row["error"]
    assert record["env"]["peak"]["matmul"]["float32"]["gflops"] > 0
    assert len(_rows(out)) == 8
    # The study's two shapes: devices x models, and per device count batch size x models, "-*" where it ran out.
    # googlenet ran out of memory at 256: its column takes the largest batch that ran on every device count
    assert "| devices | LeNet (batch 256) | GoogLeNet (batch 2) |" in result.stdout
    assert "| 1       | " in result.stdout and "| 2       | " in result.stdout
    assert result.stdout.count("| batch size | lenet ") == 2
    assert result.stdout.count("| 256        | ") == 2 and "-*" in result.stdout
    assert (out / "tables.md").read_text() in result.stdout
    for name in ("rows.csv", "table_devices.csv", "table_batch_1dev.csv", "table_batch_2dev.csv"):
        assert (out / name).stat().st_size > 0
    assert "-*" in (out / "table_batch_2dev.csv").read_text()


def _start_sweep(out, *signal_restore):
    return subprocess.Popen(
        [sys.executable, "-m", "l40sbench", "synthetic", "--models", "lenet", "--batch-sizes", "2,4,8",
         "--steps", "1", "--warmup-steps", "1", "--output-dir", str(out)],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, preexec_fn=signal_restore[0]
        if signal_restore else None,
    )


def _wait_for_rows(out, process, count=1, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (out / "rows.jsonl").exists() and len((out / "rows.jsonl").read_text().splitlines()) >= count:
            return
        assert process.poll() is None, process.stderr.read()
        time.sleep(0.1)
    raise AssertionError("no row appeared")


@pytest.mark.long
def test_a_killed_sweep_resumes_with_only_what_is_missing(tmp_path):
    out = tmp_path / "sweep"
    process = _start_sweep(out)
    try:
        _wait_for_rows(out, process)
        process.kill()  # SIGKILL: no chance to clean up
        process.wait(timeout=30)
    finally:
        process.kill()
    before = _rows(out)
    assert 1 <= len(before) < 3
    with open(out / "rows.jsonl", "a") as handle:  # a row the kill cut short mid-write, without its newline
        handle.write('{"model": "lenet", "per_device_b')
    result = run_cli("synthetic", "--resume", out)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "cut a torn last line (32 bytes" in result.stderr
    assert f"{len(before)} configuration(s) done, {3 - len(before)} to run" in result.stderr
    after = _rows(out)  # every line reads: the next row did not land on the torn one
    assert after[:len(before)] == before  # what was measured is kept as it was
    assert sorted(r["per_device_batch"] for r in after) == [2, 4, 8]  # every row, none twice
    assert json.loads((out / "result.json").read_text())["complete"] is True


def test_a_resume_on_another_kind_of_machine_is_refused(tmp_path):
    from l40sbench.core.records import to_json

    state = {"config": {"models": ["lenet"], "batch_sizes": [2], "devices": [1], "settings": {}},
             "env": {"cpu": "Some Other CPU", "cpu_count": 64, "devices": []}}
    (tmp_path / "sweep.json").write_text(to_json(state))
    result = cli_in_process("synthetic", "--resume", tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"cannot resume {tmp_path} here: its rows were measured on Some Other CPU (64 cores), no GPU" \
           in result.stderr.strip().splitlines()[-1]
    assert not (tmp_path / "rows.jsonl").exists()


@pytest.mark.parametrize("flags, fragment", [
    (("--devices", "64"), "--devices 64 is more logical devices than this CPU has cores"),
    (("--devices", "2", "--worker-hosts", "localhost:1,localhost:2"), "--worker-hosts with --devices above 1 needs GPUs"),
])
def test_device_counts_a_cpu_cannot_run_are_refused_before_any_row(tmp_path, flags, fragment):
    result = cli_in_process("synthetic", "--models", "lenet", "--batch-sizes", "2", *TINY, *flags, "--output-dir", tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert fragment in result.stderr.strip().splitlines()[-1]
    assert not (tmp_path / "rows.jsonl").exists()
    assert "measuring this device's peak" not in result.stderr  # known from the core count: said before it


def test_a_new_sweep_will_not_write_over_a_sweeps_rows(tmp_path):
    (tmp_path / "rows.jsonl").write_text('{"model": "lenet"}\n')
    result = cli_in_process("synthetic", "--models", "lenet", "--output-dir", tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"{tmp_path} already holds a sweep (rows.jsonl); finish it with --resume {tmp_path}" in result.stderr
    assert (tmp_path / "rows.jsonl").read_text() == '{"model": "lenet"}\n'


@pytest.mark.long
def test_ctrl_c_keeps_finished_configurations(tmp_path):
    out = tmp_path / "sweep"
    # A background shell job ignores SIGINT across exec: give the child Ctrl-C back, as a terminal would.
    process = _start_sweep(out, lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        _wait_for_rows(out, process)
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=60) == 130
        stderr = process.stderr.read()
    finally:
        process.kill()
    assert "Traceback" not in stderr and "--resume" in stderr
    record = json.loads((out / "result.json").read_text())
    assert record["complete"] is False and len(record["rows"]) == len(_rows(out)) >= 1


@pytest.mark.long
def test_two_local_workers_train_under_multi_worker_mirrored_strategy(tmp_path):
    hosts = local_hosts(2)
    args = [sys.executable, "-m", "l40sbench", "synthetic", "--models", "lenet", "--batch-sizes", "4", *TINY,
            "--worker-hosts", hosts]
    worker = subprocess.Popen(args + ["--task-index", "1", "--output-dir", str(tmp_path / "w1")], cwd=REPO,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        chief = run_cli(*args[3:], "--task-index", "0", "--output-dir", tmp_path / "w0", timeout=300)
        worker_out, worker_err = worker.communicate(timeout=120)
    finally:
        worker.kill()
    assert chief.returncode == 0, chief.stderr[-3000:]
    assert worker.returncode == 0, worker_err[-3000:]
    (row,) = json.loads((tmp_path / "w0" / "result.json").read_text())["rows"]
    assert row["status"] == "ok", row["error"]
    assert (row["workers"], row["devices"], row["total_batch"]) == (2, 2, 8)
    assert row["images_per_second"] > 0
    assert not (tmp_path / "w1").exists()  # the chief alone writes the result
    assert "the chief (task 0) writes the result" in worker_err
