"""Neighbours: other processes' CPU time and steal from /proc (a tree written in a temporary folder, one real read,
and in the long tier the real one with a process spinning beside a phase), and the run's own processes left out."""

import os
import signal
import subprocess
import sys
import time

import pytest

from l40sbench.core.neighbours import Watch, cpu_line, parse_stat, steal_share


def _stat(pid, ppid, name, ticks, started=100):
    fields = ["S", str(ppid)] + ["0"] * 9 + [str(ticks), "0"] + ["0"] * 6 + [str(started)] + ["0"] * 10
    return f"{pid} ({name}) " + " ".join(fields)


def _proc(root, cpu, processes):
    root.mkdir(exist_ok=True)
    (root / "stat").write_text("cpu  " + " ".join(map(str, cpu)) + " 0 0\ncpu0 1 2 3\n")
    for old in root.iterdir():
        if old.is_dir():
            (old / "stat").unlink()
            old.rmdir()
    for pid, ppid, name, ticks, *started in processes:
        (root / str(pid)).mkdir()
        (root / str(pid) / "stat").write_text(_stat(pid, ppid, name, ticks, *started))


def test_proc_lines_parse_with_spaces_in_names_and_steal_is_the_eighth_field():
    process = parse_stat(_stat(42, 1, "Web Content (x)", 250, 777))
    assert (process.pid, process.ppid, process.name, process.cpu_ticks, process.started) == (
        42, 1, "Web Content (x)", 250, 777)
    before = cpu_line("cpu  100 0 50 800 0 0 0 50 0 0")
    after = cpu_line("cpu  200 0 100 1600 0 0 0 100 0 0")
    assert steal_share(before, after) == pytest.approx(50 / 1000)
    assert steal_share([], after) is None


def test_a_busy_neighbour_and_steal_are_named_and_the_runs_own_processes_are_not(tmp_path):
    """Over 10 s on 2 cores (20 core-seconds): pid 7 used 4 s (20 %), pid 8 0.5 s (below the 10 % bar), the
    run's child (pid 11 under pid 10, the run) 9 s, a kernel worker that renamed itself nothing new; steal 8 %."""
    root = tmp_path / "proc"
    watch = Watch(root=root, cores=2, me=10)
    _proc(root, [1000, 0, 0, 1000, 0, 0, 0, 0], [(7, 1, "spinner", 100), (8, 1, "sshd", 10),
                                                  (10, 1, "python", 500), (11, 10, "onnx child", 0),
                                                  (12, 2, "kworker/0:1-events", 900, 5)])
    start = watch.snapshot(0.0)
    _proc(root, [1900, 0, 0, 1920, 0, 0, 0, 180], [(7, 1, "spinner", 500), (8, 1, "sshd", 60),
                                                    (10, 1, "python", 2000), (11, 10, "onnx child", 900),
                                                    (12, 2, "kworker/0:1-virtio", 900, 5)])
    block = watch.between(start, watch.snapshot(10.0))
    assert [p["pid"] for p in block["busy_processes"]] == [7]
    assert block["busy_processes"][0]["share"] == pytest.approx(0.2)
    assert block["cpu_seconds_others"] == pytest.approx(4.5) and block["steal_share"] == pytest.approx(180 / 2000)
    assert block["reasons"] == ["spinner (pid 7) used 20 % of the machine's CPU time",
                                "the hypervisor gave 9 % of the CPU time to other tenants (steal)"]


def test_the_real_proc_is_read_and_the_tests_own_child_is_its_own():
    """One real read of this machine's /proc, without judging its load: this process and a child of it are the
    run's own (left out of the neighbours), the machine line parses, and the shares are shares."""
    from l40sbench.core.neighbours import own_tree, processes

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        watch = Watch()
        start = watch.snapshot(0.0)
        found = processes()
        assert os.getpid() in found and found[child.pid].ppid == os.getpid()
        assert {os.getpid(), child.pid} <= own_tree(found, os.getpid())
        assert len(start.cpu) >= 8 and sum(start.cpu) > 0  # user ... steal from the cpu line
        block = watch.between(start, watch.snapshot(1.0))
    finally:
        child.kill()
        child.wait()
    assert child.pid not in [p["pid"] for p in block["busy_processes"]]
    assert 0 <= block["cpu_share_others"] and (block["steal_share"] is None or 0 <= block["steal_share"] <= 1)
    assert all(0 < p["share"] for p in block["busy_processes"]) and isinstance(block["reasons"], list)


@pytest.mark.long
@pytest.mark.serial
def test_a_process_spinning_beside_a_phase_is_named_on_this_machine():
    """The spinner is started through a shell that exits at once, so it is not this process's child (which
    would be the run's own). Serial: beside three other workers on two cores, the spinner was not among the
    busiest others the block names (long tier, 2026-12-07)."""
    from l40sbench.core.phases import Phases

    phases = Phases((None, "no source here"))
    with phases.phase("quiet"):
        time.sleep(0.3)
    spin = "import time\nt = time.time()\nwhile time.time() - t < 4: pass"
    pid = int(subprocess.run(["sh", "-c", f'{sys.executable} -c "{spin}" >/dev/null 2>&1 & echo $!'],
                             capture_output=True, text=True, check=True).stdout)
    try:
        time.sleep(0.3)  # past its start-up
        with phases.phase("busy"):
            time.sleep(1.0)
    finally:
        os.kill(pid, signal.SIGKILL)
    record = phases.record()
    assert record["energy"] == "unavailable" and set(record["neighbours"]) == {"quiet", "busy"}
    assert all(block["steal_share"] is None or 0 <= block["steal_share"] < 1 for block in record["neighbours"].values())
    busy = record["neighbours"]["busy"]
    assert pid in [p["pid"] for p in busy["busy_processes"]], busy
    assert any(f"(pid {pid}) used" in reason for reason in phases.reasons())


def test_a_gpu_process_seen_at_both_ends_is_listed_once_per_board(tmp_path):
    """NVML lists pid 7 on board 0 at the window's start and end, and on board 1 at its end: two entries, one
    reason (env --json printed it twice before)."""
    root = tmp_path / "proc"
    _proc(root, [1000, 0, 0, 1000, 0, 0, 0, 0], [(7, 1, "trainer", 100)])
    readings = iter([[{"pid": 7, "board": 0, "memory_mb": 900}],
                     [{"pid": 7, "board": 0, "memory_mb": 950}, {"pid": 7, "board": 1, "memory_mb": 10}]])
    watch = Watch(lambda: next(readings), root=root, cores=2, me=10)
    start = watch.snapshot(0.0)
    block = watch.between(start, watch.snapshot(1.0))
    assert [(p["pid"], p["board"]) for p in block["gpu_processes"]] == [(7, 0), (7, 1)]
    assert [r for r in block["reasons"] if "pid 7 on GPU" in r] == ["pid 7 on GPU 1 (10 MB)"]
