"""report: real tiny runs beside the studies' records, in one Markdown report with valid plots."""

import json

import pytest
from PIL import Image

from l40sbench.core.text import format_duration
from l40sbench.report import inputs
from tests.conftest import assert_one_line_exit_2, cli_in_process


@pytest.fixture(scope="module")
def report(tiny_runs, tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    catalog = out / "offers.toml"
    catalog.write_text('[[offer]]\nname = "one CPU box"\nprice = 0.5\nunit = "hour"\ncurrency = "USD"\n')
    result = cli_in_process("report", tiny_runs["vgg19"], tiny_runs["ssd_resnet50_fpn"] / "result.json",
                     "l40s", "leadergpu-2017", "--output-dir", out / "r", "--catalog", catalog, "--images", "1000")
    assert result.returncode == 0, result.stderr
    return out / "r", (out / "r" / "report.md").read_text()


def _row(text: str, first_cell: str, after: str) -> list[str]:
    """The cells of the first Markdown row starting with first_cell below the heading `after`."""
    section = text[text.index(after):]
    line = next(line for line in section.splitlines() if line.startswith(f"| {first_cell} "))
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_this_machine_sits_beside_the_l40s_rows(tiny_runs, report):
    out, text = report
    record = json.loads((tiny_runs["vgg19"] / "result.json").read_text())
    here = inputs.machine(record)
    assert f"**[A]** {here} · **[B]** NVIDIA L40S (study)" in text
    # vgg19: this run's training figures, then the study's, in one row.
    cells = _row(text, "vgg19", "## Classification")
    train = record["train"]
    # each definition in its own column: the study's time per epoch beside this run's wall less its own test
    # scoring / epochs; the scoring and the time to the first step in columns of their own
    utilisation, scoring = record["utilisation"], sum(train["scoring_seconds_per_epoch"])
    assert cells[1:15] == ["cached", record["bound"]["verdict"].split(":")[0], "32", record["config"]["precision"], "3", format_duration(train["wall_seconds"]),
                           format_duration((train["wall_seconds"] - scoring) / 3),
                           format_duration(train["total_seconds"] / 3), format_duration(train["first_epoch_seconds"]),
                           format_duration(train["steady_epoch_seconds"]), "n 2, no interval",
                           f"{100 * utilisation['train']:.1f} % of float32", format_duration(scoring),
                           format_duration(record["time_to_first_step"]["seconds"])]
    assert cells[15:] == ["not stated by the study", "-", "-", "-", "10", "54.982s", "5.498s", "-", "-", "-", "-", "-",
                          "-", "-"]
    assert (f"- vgg19 [{here}]: trained through the cached input; the study beside it did not state its input path, "
            "so the two may measure different input paths") in text
    inference = _row(text, "vgg19", "### Inference")
    assert inference[1:3] == ["7", f"{record['inference']['mean_ms']:.3f}"]
    assert inference[3].startswith("± ") and inference[3].endswith(" % (n 7)")  # the mean's 95 % interval
    assert inference[8:12] == ["139", "5.991", "-", "166.915"]  # the study keeps no samples: no interval
    assert inference[7] == f"{100 * utilisation['inference']:.1f} % of float32"
    assert _row(text, "xception", "## Classification")[19:21] == ["10", "1m21.964s"]  # the study's xception
    detect = _row(text, "ssd_resnet50_fpn", "## Object detection")
    assert detect[1] == "parser" and detect[5] == "1" and detect[19:21] == ["200", "25m59.613s"]
    assert "### Accuracy on the test split" in text and "mAP@[.5:.95]" in text
    assert "### Inference by runtime: ssd_resnet50_fpn" in text and "| savedmodel " in text
    assert "### Inference by runtime: vgg19" in text and "| onnxruntime " in text  # its --runtimes all
    for heading in ("## Inputs", "## Machines", "Peak (same run)", "## Synthetic throughput (images/s)",
                    "## Cost per N images"):
        assert heading in text


def _drawn(path):
    """A valid image of plausible size with something drawn on it."""
    with Image.open(path) as image:
        image.verify()
    with Image.open(path) as image:
        width, height = image.size
        assert 500 <= width <= 3000 and 300 <= height <= 3000, (path.name, image.size)
        colours = image.convert("L").getextrema()
        assert colours[1] - colours[0] > 100, path.name  # drawn, not blank
    assert path.stat().st_size > 15_000, path.name


def test_every_plot_is_a_valid_image_of_plausible_size(report):
    out, text = report
    expected = {"epoch_times_classify.png", "epoch_times_detect.png", "latency_classify.png", "latency_detect.png",
                "throughput_vs_batch.png", "throughput_vs_devices.png", "cost.png",
                "runtimes_detect_1.png", "runtimes_latency_detect_1.png",  # each run timed a second runtime
                "runtimes_classify_1.png", "runtimes_latency_classify_1.png"}
    assert {p.name for p in out.glob("*.png")} == expected
    for name in expected:
        assert f"]({name})" in text, name
        _drawn(out / name)


def test_the_leadergpu_tables_sit_side_by_side_and_are_priced(report):
    _, text = report
    header = next(line for line in text.splitlines() if line.startswith("| model ") and "batch/device" in line)
    machines = [cell.strip() for cell in header.strip("|").split("|")][3:]
    assert len(machines) == 5 and machines[1].startswith("LeaderGPU ltbv17/14/16, GTX 1080")
    rows = [line for line in text.splitlines() if line.startswith("| ResNet-50 ") and "| 64 " in line]
    eight = next([c.strip() for c in line.strip("|").split("|")] for line in rows if line.split("|")[3].strip() == "8")
    assert eight[3:] == ["-", "949.72", "-", "384.00", "387.00"]  # GTX 1080, AWS and Google at 8 GPUs
    assert "-* : out of memory" in text
    cost = text[text.index("## Cost per N images"):]
    assert "€1.34" in cost and "12m 09s" in cost  # the study's LeaderGPU Inception V3 row
    # The catalog's 1-device offer prices this machine's inference figures (1,000 images at $0.50/hour).
    assert "vgg19 classify inference" in cost and "one CPU box" in cost and "ssd_resnet50_fpn detect inference" in cost


def test_two_runs_of_one_machine_are_told_apart():
    record = {"task": "classify", "base": "vgg19", "env": {"cpu": "X", "cpu_count": 2, "timestamp_utc": "T1"}}
    later = {**record, "env": {**record["env"], "timestamp_utc": "T2"}}
    labels = inputs.machine_labels([inputs.Loaded("a", record), inputs.Loaded("b", later)])
    assert labels == ["X (2 cores), T1", "X (2 cores), T2"]
    assert inputs.machine_labels([inputs.Loaded("a", record)]) == ["X (2 cores)"]
    gpu = {"env": {"devices": [{"type": "GPU", "model": "NVIDIA H200"}] * 2}}
    assert inputs.machine(gpu) == "2x NVIDIA H200"


def test_bad_report_input_is_one_line_and_exit_2(tmp_path, monkeypatch):
    assert_one_line_exit_2(cli_in_process("report", "/no/such/run", "--output-dir", tmp_path / "r"),
                           "no such result file or folder: /no/such/run")
    assert_one_line_exit_2(cli_in_process("report", tmp_path, "--output-dir", tmp_path / "r"), "holds no result.json")
    monkeypatch.chdir(tmp_path)  # without --output-dir: results/<UTC time>-report-<first input>/, as every command
    assert cli_in_process("report", "l40s").returncode == 0
    assert [p.name.split("-", 2)[2] for p in (tmp_path / "results").iterdir()] == ["report-l40s"]
    (tmp_path / "file").write_text("x")
    assert_one_line_exit_2(cli_in_process("report", "l40s", "--output-dir", tmp_path / "file" / "r"), "cannot write results to")
    assert not (tmp_path / "r").exists()


def test_the_series_and_plots_of_a_devices_list_and_of_loadgen_server_and_offline_tests(tmp_path):
    """What the long tier's real --devices and LoadGen runs feed the report, from hand-made blocks: each
    curve's points and a drawn plot."""
    from l40sbench.core.scaling import scaling
    from l40sbench.report import plots, series

    records = [{"base": "vgg19", "devices": {"replicas": n, "kind": "GPU"}, "train": {"steady_epoch_seconds": t}}
               for n, t in ((1, 8.0), (2, 5.0), (4, 3.0))]
    for record, block in zip(records, scaling(records)):
        record["scaling"] = block
    lone = {"base": "xception", "scaling": scaling([{"devices": {"replicas": 1}, "train": {}}])[0]}
    groups = series.scaling_groups([("here", r) for r in records] + [("there", lone)])
    assert list(groups) == ["vgg19 — here"] and len(groups["vgg19 — here"]) == 3  # one count alone is no curve
    _drawn(plots.epoch_vs_devices({"vgg19 — here": [(r["scaling"]["devices"], r["scaling"]["epoch_seconds"])
                                                   for r in records]}, tmp_path / "devices.png", "epochs"))

    server = [{"runtime": "onnxruntime", "settings": {"batch": 1, "latency_bound_ms": 50},
               "scheduled_samples_per_second": 40.0, "latency_ms": {"p50": 8.0, "p99": 30.0},
               "search": {"steps": [{"qps": 20.0, "p50_ms": 6.0, "p99_ms": 12.0},
                                    {"qps": 80.0, "p50_ms": 90.0, "p99_ms": 2000.0},
                                    {"qps": 60.0, "p50_ms": None, "p99_ms": None}]}},
              {"runtime": "tf", "settings": {}, "scheduled_samples_per_second": 10.0, "latency_ms": {"p50": 20.0}}]
    curves = series.server_latency(server)
    assert curves == {"onnxruntime b1": [(40.0, 8.0, 30.0), (20.0, 6.0, 12.0), (80.0, 90.0, 2000.0)], "tf b1": []}
    _drawn(plots.latency_vs_load({"onnxruntime b1": curves["onnxruntime b1"]}, 50, tmp_path / "server.png", "server"))
    offline = [{"runtime": "tf", "settings": {"batch": b, "workers": w}, "samples_per_second": rate}
               for b, w, rate in ((1, 1, 30.0), (8, 1, 90.0), (8, 2, 150.0))]
    rates = series.offline_rate(offline)
    assert rates == {"tf": [(1, 30.0), (8, 90.0)], "tf x2 workers": [(8, 150.0)]}
    _drawn(plots.rate_vs_batch(rates, tmp_path / "offline.png", "offline"))
