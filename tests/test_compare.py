"""compare: real result folders, a slowed copy and a sped-up copy of one, exit codes and partnerless rows."""

import json

import pytest

from l40sbench.report import compare
from tests.conftest import assert_one_line_exit_2, cli_in_process

TIMES = ("total_seconds", "wall_seconds", "first_epoch_seconds", "steady_epoch_seconds", "mean_ms", "p50_ms", "p90_ms", "p99_ms",
         "min_ms", "max_ms", "std_ms")


def scaled(record: dict, factor: float) -> dict:
    """Every time x factor (and the rates over it), as a slower or faster machine would record them."""
    out = json.loads(json.dumps(record))
    for key in ("epoch_seconds", "wall_seconds_at_epoch"):
        out["train"][key] = [t * factor for t in out["train"][key]]
    for part in ("train", "inference"):
        for key in TIMES:
            if out[part].get(key) is not None:
                out[part][key] *= factor
    out["inference"]["times_ms"] = [t * factor for t in out["inference"]["times_ms"]]
    out["inference"]["images_per_second"] /= factor
    return out


def steady(record: dict) -> dict:
    """The record with its per-image samples read as a quiet host reads them: its own median, 1 % apart each.
    Taken beside other workers, 7 measured samples can hold one several times the rest, and then 10x every
    sample is not always judged significant: the verdict would depend on the host, not on compare."""
    out = json.loads(json.dumps(record))
    times = sorted(out["inference"]["times_ms"])
    middle = times[len(times) // 2]
    out["inference"]["times_ms"] = [middle * (1 + 0.01 * (i - len(times) // 2)) for i in range(len(times))]
    return out


@pytest.fixture(scope="module")
def copies(tiny_runs, tmp_path_factory):
    measured = json.loads((tiny_runs["vgg19"] / "result.json").read_text())
    record = steady(measured)
    root = tmp_path_factory.mktemp("copies")
    paths = {}
    for name, factor in (("slower", 10.0), ("faster", 0.8), ("same", 1.0)):
        paths[name] = root / f"{name}.json"
        paths[name].write_text(json.dumps(scaled(record, factor)))
    worse = json.loads(json.dumps(measured))  # beside the measured record: only its accuracy differs
    worse["accuracy"]["test_accuracy"] = measured["accuracy"]["test_accuracy"] - 0.25
    paths["less_accurate"] = root / "less_accurate.json"
    paths["less_accurate"].write_text(json.dumps(worse))
    return paths


def test_a_slower_copy_exits_1_and_names_the_figures(tiny_runs, copies):
    """Every sample 10x: the per-image figures (7 samples a side, steadied: `steady`) are significantly slower;
    a figure of one measurement is shown and not judged."""
    result = cli_in_process("compare", copies["same"], copies["slower"])
    assert result.returncode == 1, result.stdout + result.stderr
    verdicts = [line for line in result.stdout.splitlines() if "WORSE" in line]
    for figure in ("inference ms/image", "p50 ms"):
        assert any(figure in line and "10.000" in line and "significantly beyond" in line for line in verdicts), (
            figure, result.stdout)
    assert any("images/s" in line and "0.100" in line for line in verdicts), result.stdout
    for figure in ("epoch s (wall / epochs)", "first epoch s"):
        assert any(figure in line and "one measurement: shown, not judged" in line
                   for line in result.stdout.splitlines()), result.stdout
    assert "900.0 % slower" in result.stdout and "900.0 % fewer images/s" in result.stdout
    assert "REGRESSION" in result.stdout.splitlines()[-1] and "rule: " in result.stdout


def test_a_faster_or_equal_copy_passes(tiny_runs, copies):
    for name in ("faster", "same"):
        result = cli_in_process("compare", copies["same"], copies[name])
        assert result.returncode == 0, result.stdout + result.stderr
        assert "no regression" in result.stdout and "WORSE" not in result.stdout
    # Within the tolerance passes; a tighter tolerance than the change trips.
    assert cli_in_process("compare", copies["same"], copies["slower"], "--tolerance", "1000").returncode == 0
    assert cli_in_process("compare", copies["same"], copies["slower"], "--tolerance", "20").returncode == 1


def test_an_accuracy_drop_beyond_its_tolerance_exits_1(tiny_runs, copies):
    result = cli_in_process("compare", tiny_runs["vgg19"], copies["less_accurate"])
    assert result.returncode == 1 and "test_accuracy" in result.stdout and "fell 25.0 points" in result.stdout
    assert cli_in_process("compare", tiny_runs["vgg19"], copies["less_accurate"],
                   "--accuracy-tolerance", "30").returncode == 0


def test_rows_without_a_partner_are_named(tiny_runs):
    vgg19 = json.loads((tiny_runs["vgg19"] / "result.json").read_text())
    xception = {**vgg19, "base": "xception", "config": {**vgg19["config"], "base": "xception", "image_size": 71}}
    both = [vgg19, xception]
    result = compare.compare(both, both[:1])
    # the run and its rows on every other runtime (tests/conftest.py: --runtimes all)
    assert result.only_baseline[0] == "classify xception batch 4 devices 1 precision fp32 image size 71 backend tensorflow"
    assert len(result.only_baseline) == 5 and all("xception" in line for line in result.only_baseline)
    assert not result.only_new and result.rows and not result.regressions
    text = cli_in_process("compare", tiny_runs["vgg19"], tiny_runs["ssd_resnet50_fpn"])
    assert_one_line_exit_2(text, "nothing to compare")
    assert "only in the baseline" in text.stdout and "classify vgg19" in text.stdout
    assert "only in the new" in text.stdout and "detect ssd_resnet50_fpn" in text.stdout


def test_this_machine_against_the_l40s_study(tiny_runs):
    """The study leaves image size and precision unknown: they match any run of the same base and batch."""
    record = json.loads((tiny_runs["vgg19"] / "result.json").read_text())
    from l40sbench import reference

    result = compare.compare(reference.load("l40s"), [{**record, "config": {**record["config"], "batch_size": 16}}])
    figures = {r.figure for r in result.rows if r.line.startswith("classify vgg19")}
    assert {"epoch s (wall / epochs)", "inference ms/image", "images/s"} <= figures
    assert len(result.only_baseline) == 5


def test_synthetic_rows_match_per_configuration_and_an_oom_regresses():
    def sweep(rate, status="ok"):
        row = {"model": "lenet", "mode": "train", "per_device_batch": 8, "devices": 2, "precision": "fp32",
               "status": status, "images_per_second": rate if status == "ok" else None, "step_ms_mean": None}
        return {"task": "synthetic", "rows": [row]}

    assert compare.compare([sweep(100.0)], [sweep(95.0)]).regressions == ()
    (slower,) = compare.compare([sweep(100.0)], [sweep(80.0)]).regressions
    assert slower.figure == "images/s" and slower.ratio == pytest.approx(0.8)
    (oom,) = compare.compare([sweep(100.0)], [sweep(None, "oom")]).regressions
    assert oom.verdict == "WORSE: ok -> oom"


@pytest.mark.parametrize("args, fragment", [
    (["/no/such.json", "l40s"], "no such result file or folder: /no/such.json"),
    (["l40s", "/proc/version"], "cannot read result /proc/version"),
    (["l40s", "l40s", "--tolerance", "-5"], "tolerances must be >= 0"),
    (["l40s", "l40s", "--tolerance", "x"], "expected a number, got 'x'"),
    (["l40s"], "the following arguments are required: NEW"),
])
def test_bad_compare_input_is_one_line_and_exit_2(args, fragment):
    assert_one_line_exit_2(cli_in_process("compare", *args), fragment)


@pytest.mark.parametrize("change, fragment", [
    (lambda r: {**r, "task": "synthetic", "rows": "many"}, "the sweep.rows is 'many', not list"),
    (lambda r: {**r, "task": "synthetic", "rows": [{"model": "lenet"}]}, "rows[0] has no 'mode'"),
    (lambda r: {**r, "inference": {**r["inference"], "mean_ms": "fast"}}, "inference.mean_ms is 'fast', not number"),
    (lambda r: {**r, "train": {**r["train"], "epoch_seconds": "1,2"}}, "train.epoch_seconds is '1,2'"),
    (lambda r: {**r, "rows": []}, "a classify record holds sweep rows"),
    (lambda r: {**r, "task": "segment"}, "task is 'segment', not one of classify, detect, synthetic"),
    (lambda r: {k: v for k, v in r.items() if k != "train"}, "the record has no 'train'"),
])
def test_a_record_with_the_right_tag_and_wrong_contents_is_one_line(tiny_runs, tmp_path, change, fragment):
    record = change(json.loads((tiny_runs["vgg19"] / "result.json").read_text()))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(record))
    for args in (("compare", tiny_runs["vgg19"], bad), ("report", bad, "--output-dir", tmp_path / "report"),
                 ("cost", "--results", bad, "--price", "1")):
        assert_one_line_exit_2(cli_in_process(*args), fragment)
    assert not (tmp_path / "report").exists()


def _runtime_row(runtime: str, mean_ms: float, status: str = "ok") -> dict:
    from dataclasses import asdict

    from l40sbench.core.results import InferenceResult

    inference = None if status != "ok" else asdict(InferenceResult(
        batch_size=1, warmup_excluded=1, images_timed=20, mean_ms=mean_ms, images_per_second=1000 / mean_ms,
        p50_ms=mean_ms, p90_ms=mean_ms, p99_ms=mean_ms, min_ms=mean_ms, max_ms=mean_ms, std_ms=0.0))
    return {"runtime": runtime, "status": status, "precision_requested": "fp32", "inference": inference,
            "accuracy": {"test_accuracy": 0.5, "agreement_with_tf": 1.0} if inference else {}}


def test_compare_names_the_runtime_whose_latency_grew(tiny_runs, tmp_path):
    record = json.loads((tiny_runs["vgg19"] / "result.json").read_text())
    base, new = json.loads(json.dumps(record)), json.loads(json.dumps(record))
    base["inference"]["runtimes"] = [_runtime_row("onnxruntime", 4.0), _runtime_row("litert", 3.0),
                                     _runtime_row("openvino", 2.0)]
    new["inference"]["runtimes"] = [_runtime_row("onnxruntime", 6.0), _runtime_row("litert", 3.0),
                                    _runtime_row("openvino", 0, status="failed")]
    result = compare.compare([base], [new])
    regressed = {(row.line.split(" vgg19")[0], row.figure) for row in result.regressions}
    assert ("classify on onnxruntime", "inference ms/image") in regressed
    assert ("classify on onnxruntime", "images/s") in regressed
    assert ("classify on openvino", "status") in regressed
    assert not any(line.startswith("classify on litert") for line, _ in regressed)
    paths = []
    for name, value in (("base", base), ("new", new)):
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps(value))
    done = cli_in_process("compare", *paths)
    assert done.returncode == 1 and "classify on onnxruntime" in done.stdout


def test_across_a_cpu_and_a_gpu_nothing_is_judged_and_the_devices_are_named(tiny_runs):
    record = json.loads((tiny_runs["vgg19"] / "result.json").read_text())
    gpu = scaled(record, 0.1)
    gpu["env"]["devices"] = [{"name": "cuda:0", "type": "GPU", "model": "NVIDIA H200"}]
    gpu["env"]["peak"] = {**gpu["env"]["peak"], "device_kind": "GPU",
                          "matmul": {"float32": {"gflops": 60e3}, "tf32": {"gflops": 400e3}}}
    result = compare.compare([record], [gpu])
    (machine,) = result.machines
    assert machine.startswith("not comparable: the devices differ (CPU -> GPU NVIDIA H200)") and "shown as measured, not judged" in machine
    assert result.rows and not result.regressions and result.not_comparable
    own = [r for r in result.rows if r.line.startswith("classify vgg19")]
    assert own and all(r.verdict == "shown as measured, not judged (the devices differ)" for r in own)
    # the runtimes served on the CPU on both hosts are judged there, on the CPU's evidence
    served = [r for r in result.rows if r.line.startswith("classify on ")]
    assert served and not any(r.why_shown == "devices differ" for r in served)
    back = compare.compare([gpu], [record])  # the GPU as the baseline: the CPU is 10x slower, and not judged
    assert not back.regressions and back.machines[0].startswith("not comparable: the devices differ (GPU NVIDIA H200")


def test_each_loadgen_test_is_a_line_keyed_on_its_scenario_settings_and_runtime(tiny_runs):
    """A record's LoadGen entries (hand-made here; the long tier's runs write real ones) as compare's lines: the
    settings that make two tests the same test in the key, VALID as ok, the search's rate as a figure."""
    from l40sbench.report.comparable import lines

    record = json.loads((tiny_runs["vgg19"] / "result.json").read_text())
    record["inference"]["scenarios"] = [
        {"scenario": "server", "runtime": "tf", "result": "VALID", "precision_requested": "fp32",
         "settings": {"batch": 1, "workers": 1, "latency_bound_ms": 50, "find_max_qps": True},
         "samples_per_second": 40.0, "latency_ms": {"p50": 8.0, "p99": 30.0}, "search": {"max_valid_qps": 41.0}},
        {"scenario": "server", "runtime": "onnxruntime", "result": "INVALID", "precision_requested": "fp32",
         "settings": {"batch": 4, "workers": 2, "latency_bound_ms": 50, "target_qps": 12.5},
         "samples_per_second": 12.0, "latency_ms": {"p50": 9.0, "p99": 80.0}},
        {"scenario": "multi-stream", "runtime": "tf", "mode": "accuracy", "result": "VALID",
         "settings": {"samples_per_query": 8}, "samples_per_second": None, "latency_ms": {}}]
    found = {line.key[0]: line for line in lines(record)[-3:]}
    searched = found["classify server (workers 1, bound 50 ms, max rate) on tf"]
    assert searched.status == "ok" and searched.figures["max VALID qps"].value == 41.0
    fixed = found["classify server (workers 2, bound 50 ms, 12.5 qps) on onnxruntime"]
    assert fixed.status == "INVALID" and fixed.key[2] == 4 and fixed.figures["p99 ms"].value == 80.0
    assert "max VALID qps" not in fixed.figures
    assert found["classify multi-stream (workers 1, 8 per query, accuracy mode) on tf"].status == "ok"
