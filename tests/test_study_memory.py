"""A step too big for its device is known before the study runs: the plan estimates each training step's peak
memory (study.memory, fitted to measured runs) beside the memory where it will run (a GPU's, on the stand-in
driver's L40S, H100 and MIG shapes; or the host's RAM, within a container's limit), marks a step that will not
fit with a batch that would, and the study does not start it."""

import json

import pytest

from l40sbench.backends import cuda_driver
from l40sbench.cli.study import _plan_lines, _room
from l40sbench.core.memory import host_available_mb
from l40sbench.study import memory
from l40sbench.study import plan as plans
from l40sbench.study.run import run_plan
from tests.conftest import standin_driver

GB = 1024.0
THIS_HOST = memory.Room(22.9 * GB, "host RAM available now (22.9 of 23.5 GiB)")  # this project's 24 GB host


def test_the_fit_recovers_the_constants_that_made_its_rows():
    made = {"base_mb": {"classify": 1500.0, "detect": 2500.0}, "copies": {"classify": 1.0, "detect": 6.0},
            "models": {"a": {"task": "classify", "size": 224, "parameters": 10**6, "trainable_parameters": 10**3,
                             "activations_mb": 3.0},
                       "b": {"task": "classify", "size": 299, "parameters": 2 * 10**6, "trainable_parameters": 10,
                             "activations_mb": 7.5},
                       "d": {"task": "detect", "size": 640, "parameters": 3 * 10**7, "trainable_parameters": 3 * 10**7,
                             "activations_mb": 900.0}}}
    runs = [("a", 2, 224, 697), ("a", 16, 224, 697), ("b", 2, 299, 697), ("b", 16, 299, 697), ("b", 8, 150, 697),
            ("d", 2, 640, 8), ("d", 8, 640, 32), ("d", 4, 320, 16), ("d", 16, 640, 300)]
    rows = [{"model": m, "task": made["models"][m]["task"], "batch": b, "size": s, "images": n,
             "parameters": made["models"][m]["parameters"],
             "trainable_parameters": made["models"][m]["trainable_parameters"] if m != "d" else None,
             "peak_mb": memory.estimate_mb(m, b, s, False, images=n, constants=made)} for m, b, s, n in runs]
    fitted = memory.fit(rows)
    assert fitted["base_mb"] == pytest.approx(made["base_mb"], abs=0.1)
    assert fitted["copies"] == pytest.approx(made["copies"], abs=0.01)
    assert {m: v["activations_mb"] for m, v in fitted["models"].items()} == pytest.approx(
        {m: v["activations_mb"] for m, v in made["models"].items()}, abs=0.01)
    assert fitted["models"]["d"]["trainable_parameters"] == 3 * 10**7  # a detector's record counts none apart


def test_the_committed_fit_holds_its_check_runs_within_25_percent():
    record = json.loads((memory.FIT_FILE.parents[2] / "benchmarks" / "calibration" / "memory_peaks.json").read_text())
    assert record["constants"] == memory.committed()
    checked = [row for row in record["check_runs"] if row.get("peak_mb") is not None]
    assert len(checked) >= 6
    for row in checked:
        assert 0.75 <= row["measured_over_estimated"] <= 1.25, row


def test_on_this_hosts_24_gb_the_protocols_faster_rcnn_resnet50_will_not_start_and_the_plan_says_what_would():
    plan = plans.build("l40s", plans.Machine(220.0, False, room=THIS_HOST))
    marked = {step.name: step for step in plan.steps}
    big = marked["detect-faster_rcnn_resnet50"]
    assert not big.fits and big.peak_mb * memory.MARGIN > THIS_HOST.mb
    assert big.memory.startswith(f"peak about {big.peak_mb / GB:.1f} GiB of host RAM available now")
    smaller = int(big.memory.split("--batch-size ")[1].split()[0])
    assert 1 <= smaller < 16
    assert memory.estimate_mb("faster_rcnn_resnet50", smaller, 640, False, images=300) * memory.MARGIN <= THIS_HOST.mb
    assert plan.total_s == pytest.approx(sum(s.estimate_s for s in plan.steps if s.name != big.name))
    assert all(step.fits for step in plan.steps if step is not big)
    lines = _plan_lines(plan)
    assert any("detect-faster_rcnn_resnet50" in line and "not fit" in line and "; --batch-size " in line for line in lines)
    assert lines[-1].startswith("  out of memory: detect-faster_rcnn_resnet50 will not start")
    # --quick's steps are small everywhere; a machine whose memory is unknown judges nothing
    assert all(step.fits and not step.memory for step in plans.build("l40s", plans.Machine(220.0, False, room=THIS_HOST),
                                                                     quick=True).steps)
    assert all(step.peak_mb is None for step in plans.build("l40s", plans.Machine(220.0, False)).steps)


@pytest.mark.parametrize("name, mb, count", [("NVIDIA L40S", 46068, 8), ("NVIDIA H100 80GB HBM3", 81559, 1),
                                              ("NVIDIA H100 80GB HBM3 MIG 1g.10gb", 9984, 1)])
def test_on_a_gpu_the_room_is_the_smallest_boards_memory_and_the_host_process_is_left_out(
        name, mb, count, monkeypatch, tmp_path_factory):
    env = standin_driver(tmp_path_factory.getbasetemp())
    if not env:
        pytest.skip("no C compiler (cc) to build the stand-in CUDA driver")
    for key, value in {**env, "STANDIN_GPUS": str(count), "STANDIN_GPU_NAME": name, "STANDIN_GPU_MB": str(mb)}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    cuda_driver.forget()
    try:
        room = _room(True)
    finally:
        cuda_driver.forget()
    assert room.mb == mb and room.of == f"the GPU's {mb / GB:.1f} GiB ({name})"
    plan = plans.build("l40s", plans.Machine(60_000.0, True, count, room))
    for step in plan.steps:
        model = step.argv[step.argv.index("--base") + 1]
        host_side = memory.estimate_mb(model, 16, int(step.argv[step.argv.index("--image-size") + 1]), False,
                                       images=697 if step.task == "classify" else 300)
        assert step.peak_mb < host_side  # no interpreter, framework or images on the GPU's side
        assert step.fits == (step.peak_mb * memory.MARGIN <= mb)
    if mb > 40_000:  # an L40S or an H100 holds the protocol's every step
        assert all(step.fits for step in plan.steps)


def test_the_cpus_room_is_the_ram_available_or_a_containers_limit_when_smaller(tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       24576000 kB\nMemFree:  100 kB\nMemAvailable:   20480000 kB\n")
    limit, used = tmp_path / "memory.max", tmp_path / "memory.current"
    limit.write_text("max\n")
    assert host_available_mb(meminfo, (limit,), (used,)) == (20000.0, "host RAM available now (19.5 of 23.4 GiB)")
    limit.write_text(str(8 * 2**30))
    used.write_text(str(2**30))
    assert host_available_mb(meminfo, (limit,), (used,)) == (7 * GB, "the container's memory limit (8.0 GiB, 7.0 GiB left)")


def test_a_study_does_not_start_a_step_that_will_not_fit_and_its_row_says_what_would(tmp_path):
    plan = plans.build("l40s", plans.Machine(220.0, False, room=THIS_HOST))
    ran = []
    outcomes = run_plan(plan, tmp_path, {}, lambda line: None, runner=lambda argv, folder, left: ran.append(argv) or 1)
    skipped = [o for o in outcomes if o.status == "skipped"]
    assert [o.name for o in skipped] == ["detect-faster_rcnn_resnet50"]
    assert skipped[0].reason.startswith("not started: peak about ") and "--batch-size" in skipped[0].reason
    assert len(ran) == len(plan.steps) - 1
    state = json.loads((tmp_path / "study.json").read_text())
    assert state["steps"][4]["reason"] == skipped[0].reason
    again = plans.Plan.from_dict(plan.to_dict())
    assert again == plan
    old = plan.to_dict()
    for step in old["steps"]:  # a study.json written before steps carried their memory
        for key in ("peak_mb", "memory", "fits"):
            del step[key]
    assert all(step.fits and step.peak_mb is None for step in plans.Plan.from_dict(old).steps)


def test_a_records_memory_block_says_which_peak_it_counts():
    from l40sbench.core.memory import block, host_peak_mb

    assert block(20480.0) == {"peak_mb": 20480.0, "counts": "the GPU allocator's peak on the busiest device"}
    on_cpu = block(None)  # jax and torch keep no count on a CPU; TensorFlow's is None there too
    assert on_cpu["counts"] == "the process's peak resident set (host RAM)" and 0 < on_cpu["peak_mb"] <= host_peak_mb() + 0.05  # rounded to 0.1
