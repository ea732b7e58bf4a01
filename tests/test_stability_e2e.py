"""The stability verdict and the noise-aware compare on real runs: two quiet runs of one command are stable and
compare within noise at a shared host's tolerance; the same command with four processes spinning on the two cores from its first epoch on is
unstable and says why; the same command at a larger input size compares as significantly slower; a record of a
machine half as fast compares as the same, naming the machine.

Serial (./run.sh test runs these alone, after the rest): a quiet verdict taken while other workers run is not one.
"""

import json
import re
import subprocess
import sys

import pytest

from l40sbench.peak.burst import START_WARM_SECONDS
from tests.conftest import REPO, run_cli
from tests.test_compare import scaled

pytestmark = [pytest.mark.serial, pytest.mark.long]  # real runs on a quiet and on a loaded host

# The tests' tiny vgg19 (tests/conftest.py) at 96 px: 40 ms an image here, where 32 px's 12 ms spreads
# 10-30 % on a quiet host (docs/PERFORMANCE.md, "The stability guard"). 23 timed images (about a second of
# inference) so the guard's split rule checks them and a moment's slowdown is a part of the figure, not all.
COMMAND = ["classify", "--base", "vgg19", "--limit", "24", "--batch-size", "4", "--epochs", "2", "--weights", "none"]
TIMED = 23
# Back-to-back runs of COMMAND on these shared VMs differ by up to 22 % in per-image time while each run's
# samples hold still (docs/PERFORMANCE.md, "Two runs of one command"): noise between runs, which no interval
# from one run a side can hold, so the tolerance must (docs/trust.md). 25 % for that; 2.8x the work is far past.
SHARED_HOST_TOLERANCE = "25"
# A quiet run that a neighbour's moment made unstable is run again, as the closing line tells a user to:
# the test is of the verdicts on a quiet machine, and the noisy verdict has its own test.
QUIET_ATTEMPTS = 3


def _run(out, busy: int = 0, size: int = 96) -> dict:
    """The CLI as a user runs it; with `busy`, that many processes spin on the cores from the first epoch's end."""
    process = subprocess.Popen([sys.executable, "-m", "l40sbench", *COMMAND, "--image-size", str(size),
                                "--output-dir", str(out)], cwd=REPO,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    spinners, lines = [], []
    try:
        for line in process.stderr:
            lines.append(line)
            if busy and not spinners and re.match(r"epoch 1/\d+:", line):
                spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
        stdout = process.stdout.read()
        assert process.wait(timeout=600) == 0, "".join(lines)[-3000:]
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
        process.kill()
    assert not busy or spinners, "the run never logged its first epoch"
    record = json.loads((out / "result.json").read_text())
    record["_stdout"] = stdout
    return record


def _quiet_run(out) -> dict:
    """A run on a quiet machine: tried again (into a fresh folder) while the guard calls it unstable."""
    for attempt in range(QUIET_ATTEMPTS):
        folder = out if attempt == 0 else out.with_name(f"{out.name}-{attempt + 1}")
        record = _run(folder)
        if record["stability"]["verdict"] == "stable":
            break
        print(f"{out.name}: attempt {attempt + 1} unstable: {record['stability']['reasons']}")
    return folder, record


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("stability")
    found = {name: _quiet_run(root / name) for name in ("quiet", "again")}
    found["busy"] = (root / "busy", _run(root / "busy", busy=4))
    found["larger"] = (root / "larger", _run(root / "larger", size=160))
    return found


def test_quiet_runs_are_stable_and_say_so(runs):
    for name in ("quiet", "again"):
        _, record = runs[name]
        stability = record["stability"]
        assert stability["verdict"] == "stable", (name, stability["reasons"])
        assert [b["moment"] for b in stability["speed"]["bursts"]] == ["start", "after training", "end"]
        assert all(b["gflops"] > 0 and b["seconds"] < 5 for b in stability["speed"]["bursts"])
        # the start burst follows back-to-back calls until the machine reads its speed, as the others follow work
        start, *later = stability["speed"]["bursts"]
        assert 0 < start["warm_seconds"] < START_WARM_SECONDS + 0.5 and start["warm_target_gflops"] > 0
        assert all(b["warm_seconds"] == 0 and b["warm_target_gflops"] is None for b in later)
        assert record["_stdout"].strip().splitlines()[-1].startswith("stability: stable (the matmul rate held")
        neighbours = record["telemetry"]["neighbours"]
        assert set(neighbours) == {"training", "bound", "inference"}  # every phase: its steal share and who else ran
        assert all("steal_share" in block and not block["reasons"] for block in neighbours.values()), neighbours


def test_a_run_beside_busy_cores_is_unstable_with_the_reason(runs):
    _, record = runs["busy"]
    stability = record["stability"]
    assert stability["verdict"] == "unstable"
    assert any(reason.startswith("the float32 matmul rate changed") for reason in stability["reasons"]), stability
    # the spinners are the test's children, not the run's: neighbours, named with their share of the machine.
    # They spin through all of inference (17-29 % of the machine each); they start at epoch 1's end, so over the
    # whole training phase each is near the 10 % line (9.4 % on a slow CI host): training counts them in all.
    named = [r for r in stability["reasons"] if r.startswith("a neighbour during inference: python")]
    assert named and "% of the machine's CPU time" in named[0], stability["reasons"]
    neighbours = record["telemetry"]["neighbours"]
    busy = neighbours["inference"]["busy_processes"]
    assert len(busy) >= 2 and all(p["share"] >= 0.10 for p in busy)
    assert neighbours["training"]["cpu_share_others"] >= 0.15, neighbours["training"]
    last = record["_stdout"].strip().splitlines()[-1]
    assert last.startswith("UNSTABLE RUN: ") and "matmul rate changed" in last
    assert record["inference"]["mean_ms"] and record["train"]["epochs"] == 2  # every figure still reported


def test_figures_carry_their_intervals_and_energy_says_why_it_is_missing(runs):
    _, record = runs["quiet"]
    block = record["inference"]["interval_ms"]
    assert block["n"] == record["inference"]["images_timed"] == TIMED
    assert block["mean_ci95"][0] <= block["mean"] <= block["mean_ci95"][1]
    # independent latencies get the BCa bootstrap, serially correlated ones the effective-n interval
    assert block["method"].startswith("BCa bootstrap") or "serially correlated" in block["method"], block
    assert block["lag1_autocorrelation"] is not None
    assert record["train"]["steady_epoch_interval"]["n"] == 1
    assert "mean 95 % interval" in record["_stdout"] and f"% (n {TIMED})" in record["_stdout"]
    telemetry = record["telemetry"]
    if telemetry.get("energy") == "unavailable":  # as on these VMs: no GPU, no readable RAPL counter
        assert telemetry["reason"] and "energy: unavailable (" in record["_stdout"]
    else:
        inference = telemetry["phases"]["inference"]  # a device that reports energy used some while timed
        assert inference["energy_j"] > 0 and inference["j_per_image"] == inference["energy_j"] / TIMED


def test_two_runs_of_one_command_compare_within_noise(runs):
    result = run_cli("compare", runs["quiet"][0], runs["again"][0], "--tolerance", SHARED_HOST_TOLERANCE)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WORSE" not in result.stdout
    assert "within noise" in result.stdout or " same" in result.stdout
    assert "rule: a time or rate regresses when the 95 % interval of new / baseline (serial samples" in result.stdout


def test_more_work_compares_significantly_slower(runs):
    """The same command at 96 and at 160 px: 2.8x the pixels, judged as measured. The two runs share one host
    (and one peak measurement), so their bursts differing in a noisy hour is not another machine."""
    result = run_cli("compare", runs["quiet"][0], runs["larger"][0])
    assert result.returncode == 1, result.stdout + result.stderr
    assert "(image size 96 -> 160)" in result.stdout
    worse = [line for line in result.stdout.splitlines() if "WORSE" in line]
    assert any("inference ms/image" in line and "significantly beyond the tolerance" in line for line in worse), (
        result.stdout)
    assert "REGRESSION" in result.stdout.splitlines()[-1]


def test_a_machine_half_as_fast_compares_as_the_same_code(runs, tmp_path):
    record = json.loads((runs["quiet"][0] / "result.json").read_text())
    slower = scaled(record, 2.0)
    for kernel in slower["env"]["peak"]["matmul"].values():  # the peak measured again, at half
        kernel["gflops"] /= 2
    slower["env"]["peak"]["conv_float32_gflops"] /= 2
    slower["env"]["peak"]["measured_utc"] = "2099-01-01T00:00:00Z"
    for burst in slower["stability"]["speed"]["bursts"]:  # and the run's own bursts at half
        burst["gflops"] /= 2
        burst["samples_gflops"] = [g / 2 for g in burst["samples_gflops"]]
    path = tmp_path / "slower-machine.json"
    path.write_text(json.dumps(slower))
    result = run_cli("compare", runs["quiet"][0], path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "new machine 2.00x slower: the float32 matmul peak" in result.stdout
    assert "explained by the machine" in result.stdout and "WORSE" not in result.stdout
    raw = run_cli("compare", runs["quiet"][0], path, "--raw")
    assert raw.returncode == 1 and "explained by the machine (" not in raw.stdout  # as measured: twice the time
