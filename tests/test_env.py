"""`env`: the machine, the backends and the devices each would use, telemetry, neighbours and the kept peak;
as text and JSON; with NVML replaced by a stand-in of four boards, the boards it lists and which one a run uses."""

import json
import sys

import pytest

from tests.conftest import assert_one_line_exit_2, cli_in_process


@pytest.fixture(scope="module")
def reported():
    return cli_in_process("env"), cli_in_process("env", "--json")


def test_env_prints_the_machine_and_what_a_run_would_use(reported):
    text, as_json = reported
    assert text.returncode == 0 and as_json.returncode == 0, text.stderr + as_json.stderr
    facts = json.loads(as_json.stdout)
    for key in ("suite_commit", "python", "cpu", "cpu_count", "versions", "backends", "run_would_use",
                "cuda_driver_gpus", "telemetry", "neighbours_now", "peak"):
        assert key in facts, key
    assert facts["backends"]["tensorflow"]["installed"] and facts["backends"]["tensorflow"]["devices"]
    assert facts["run_would_use"][0]["kind"] in ("CPU", "GPU") and facts["backend"] == "tensorflow"
    assert "steal_share" in facts["neighbours_now"]
    lines = text.stdout.splitlines()
    # the renter's question first: what each backend would compute on (tensorflow, the default, marked)
    assert lines[0].startswith("* tensorflow 2.20.0 would use: the CPU (") and lines[1].startswith("  jax ")
    assert lines[0].endswith("; the CUDA driver shows no GPU") and facts["cuda_driver_version"] is None
    assert any(line.startswith("host now: ") for line in lines[:6])
    assert any(line.startswith("l40sbench ") for line in lines)
    assert any(line.startswith("backend tensorflow's devices: /physical_device:CPU:0 ") for line in lines)
    assert any(line.startswith("telemetry: ") for line in lines) and any(line.startswith("neighbours now: ")
                                                                           for line in lines)


def test_env_with_a_stand_in_nvml_lists_every_board_and_marks_the_one_a_run_uses(monkeypatch, capsys):
    from l40sbench import machine
    from l40sbench.cli import env
    from tests.test_telemetry import BOARDS, _fake_nvml

    monkeypatch.setitem(sys.modules, "pynvml", _fake_nvml())
    gpu = {"kind": "GPU", "name": "cuda:0", "index": 0, "model": "NVIDIA H200", "uuid": BOARDS[2][0],
           "memory_mb": 143771.0}
    monkeypatch.setattr(machine, "_start_probes", lambda driver: ({}, {}))
    monkeypatch.setattr(machine, "_backends", lambda started: {"jax": {"installed": True, "version": "0.11", "devices": [gpu]},
                                                   "tensorflow": {"installed": False, "version": None},
                                                   "torch": {"installed": False, "version": None}})
    monkeypatch.setattr(machine, "NEIGHBOUR_WINDOW_SECONDS", 0.05)
    facts = machine.collect("jax", measure_peak=False)
    boards = facts["telemetry"]["nvml_boards"]
    assert [b["uuid"] for b in boards] == [b[0] for b in BOARDS]
    assert [b["used"] for b in boards] == [False, False, True, False]
    assert facts["telemetry"]["source"] == "nvml" and facts["run_would_use"] == [gpu]
    text = "\n".join(env._text(facts))
    assert f"NVML board 2: NVIDIA H200 {BOARDS[2][0]} 0000:3b:00.0 (used)" in text
    assert "backend jax's devices: cuda:0 NVIDIA H200 " + BOARDS[2][0] in text
    assert text.startswith("* jax 0.11 would use: GPU 0 NVIDIA H200 140 GiB\n  tensorflow: not installed\n")


def test_env_refuses_a_bad_flag_in_one_line():
    assert_one_line_exit_2(cli_in_process("env", "--no-such-flag"), "unrecognized arguments")
    assert_one_line_exit_2(cli_in_process("env", "--backend", "mxnet"), "invalid choice")
