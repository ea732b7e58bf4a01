"""Synthetic sweeps end to end through the CLI, at tiny sizes: the tables, out of memory, resume, two workers."""

import json
import signal
import socket
import subprocess
import sys
import time

from tests.conftest import REPO, run_cli

TINY = ("--steps", "2", "--warmup-steps", "1")


def _rows(out_dir):
    return [json.loads(line) for line in (out_dir / "rows.jsonl").read_text().splitlines()]


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
    for row in record["rows"]:
        assert row["device_kind"] == "CPU" and row["total_batch"] == row["per_device_batch"] * row["devices"]
        if row["status"] == "ok":
            assert row["images_per_second"] > 0 and row["images_per_second_stderr"] >= 0 and row["steps"] == 2
            assert row["gflops_per_image"] > 0 and row["achieved_tflops"] > 0 and 0 < row["utilisation"]
            assert row["peak_memory_mb"] > 0 and row["scaling_efficiency"] > 0
        else:
            assert "1.75 GB cap" in row["error"]
    assert record["env"]["calibration"]["matmul_gflops"] > 0
    assert len(_rows(out)) == 8
    # The study's two shapes: devices x models, and per device count batch size x models, "-*" where it ran out.
    assert "| devices | LeNet (batch 256) | GoogLeNet (batch 256) |" in result.stdout
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
         "--steps", "1", "--warmup-steps", "0", "--output-dir", str(out)],
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
    result = run_cli("synthetic", "--resume", out)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"{len(before)} configuration(s) done, {3 - len(before)} to run" in result.stderr
    after = _rows(out)
    assert after[:len(before)] == before  # what was measured is kept as it was
    assert sorted(r["per_device_batch"] for r in after) == [2, 4, 8]  # every row, none twice
    assert json.loads((out / "result.json").read_text())["complete"] is True


def test_a_new_sweep_will_not_write_over_a_sweeps_rows(tmp_path):
    (tmp_path / "rows.jsonl").write_text('{"model": "lenet"}\n')
    result = run_cli("synthetic", "--models", "lenet", "--output-dir", tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"{tmp_path} already holds a sweep (rows.jsonl); finish it with --resume {tmp_path}" in result.stderr
    assert (tmp_path / "rows.jsonl").read_text() == '{"model": "lenet"}\n'


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


def _free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def test_two_local_workers_train_under_multi_worker_mirrored_strategy(tmp_path):
    hosts = ",".join(f"127.0.0.1:{port}" for port in _free_ports(2))
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
