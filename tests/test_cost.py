"""Cost per N images: the study's nine rows, billing rules, and bad input."""

import json
import math
import subprocess
import sys
import tomllib

import pytest

from l40sbench import cost
from tests.conftest import assert_one_line_exit_2, cli_in_process


def _seconds(printed: str) -> int:
    minutes, seconds = printed.replace("s", "").split("m ")
    return 60 * int(minutes) + int(seconds)


def test_the_studys_nine_rows_reprice_within_a_second_and_a_cent():
    rows = cost.reference_rows()
    assert len(rows) == 9
    for row, study_time, study_cost in rows:
        assert abs(row.seconds - _seconds(study_time)) <= 1, (row.model, row.offer.name)
        assert abs(row.cost - study_cost) <= 0.01 + 1e-9, (row.model, row.offer.name, row.cost)
    # The study's worked example: Inception V3 on 8x GTX 1080, 500,000 images at 685.59 images/s.
    (leader,) = [r for r, _, _ in rows if r.model == "Inception V3" and "LeaderGPU" in r.offer.name]
    assert (cost.duration(leader.seconds), cost.money(leader.cost, "EUR")) == ("12m 09s", "€1.34")


def test_billing_rounds_the_time_up_to_its_granularity():
    offer = dict(name="o", devices=1, price=0.6, per="minute")
    # 61 s of work: 61 s billed per second, 2 minutes per minute, 1 hour per hour.
    assert cost.price("m", 61, 1.0, cost.Offer(**offer, billing="second")).cost == pytest.approx(0.61)
    assert cost.price("m", 61, 1.0, cost.Offer(**offer, billing="minute")).cost == pytest.approx(1.2)
    assert cost.price("m", 61, 1.0, cost.Offer(**offer, billing="hour")).cost == pytest.approx(36.0)
    # Exactly on a boundary is not rounded up further; a fraction of a second is.
    assert cost.price("m", 120, 1.0, cost.Offer(**offer, billing="minute")).billed_seconds == 120
    assert cost.price("m", 121, 1.2, cost.Offer(**offer, billing="second")).billed_seconds == 101


def test_a_minimum_charge_applies_only_below_it_and_says_so():
    cheap = cost.price("m", 10, 1.0, cost.Offer("o", 1, 0.6, "minute", minimum=0.5))
    assert cheap.cost == 0.5 and "minimum charge €0.50" in cheap.rule
    dear = cost.price("m", 100, 1.0, cost.Offer("o", 1, 0.6, "minute", minimum=0.5))
    assert dear.cost == pytest.approx(1.0) and "billed per second" in dear.rule


def test_money_rounds_half_up_and_durations_print_the_studys_way():
    assert cost.money(1.335, "EUR") == "€1.34" and cost.money(1.3349, "USD") == "$1.33"
    assert cost.duration(2202.64) == "36m 43s" and cost.duration(3725) == "1h 02m 05s"


def test_comparisons_say_how_much_faster_and_cheaper():
    # 100 s at 1.0/minute against 40 s at 1.5/minute: 2.5x as fast, 1.00 against 1.667, 40 % cheaper.
    rows = [cost.price("m", 1000, 10.0, cost.Offer("slow", 1, 1.0)), cost.price("m", 1000, 25.0, cost.Offer("fast", 1, 1.5))]
    (fast_vs_slow,) = [c for c in cost.compare(rows) if c.offer == "fast"]
    assert fast_vs_slow.times_as_fast == pytest.approx(2.5)
    assert fast_vs_slow.percent_cheaper == pytest.approx(40.0)


@pytest.mark.parametrize("value", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_prices_are_refused(value):
    with pytest.raises(ValueError, match="price must be a positive number"):
        cost.Offer("o", 1, value)


def test_cost_imports_no_framework():
    code = "import sys, l40sbench.cost; print(sorted(m for m in ('tensorflow', 'keras', 'numpy') if m in sys.modules))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "[]"


def test_the_reference_table_prints_every_row_beside_the_studys():
    result = cli_in_process("cost", "--reference", "leadergpu-2017")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("500,000") == 9
    (leader,) = [line for line in result.stdout.splitlines() if "Inception V3 |" in line and "LeaderGPU" in line]
    assert [cell.strip() for cell in leader.split("|")][4:7] == ["12m 09s", "€0.11/minute", "€1.34"]
    assert "8x GTX 1080 LeaderGPU is 3.02x as fast as 8x K80 Google cloud and 55.8 % cheaper" in result.stdout


@pytest.mark.parametrize("args, fragment", [
    (["--throughput", "10", "--price", "0"], "Received: price=0.0"),
    (["--throughput", "10", "--price", "-2"], "Received: price=-2.0"),
    (["--throughput", "10", "--price", "nan"], "expected a finite number, got 'nan'"),
    (["--throughput", "10", "--price", "ten"], "expected a number, got 'ten'"),
    (["--throughput", "0", "--price", "1"], "throughput must be a positive number"),
    (["--throughput", "10", "--price", "1", "--per", "week"], "invalid choice: 'week'"),
    (["--throughput", "10", "--price", "1", "--currency", "XYZ"], "invalid choice: 'XYZ'"),
    (["--throughput", "10", "--price", "1", "--minimum", "-1"], "Received: minimum=-1.0"),
    (["--price", "1"], "give one of --throughput or --results"),
    (["--throughput", "10", "--results", "x.json", "--price", "1"], "give one of --throughput or --results"),
    (["--throughput", "10"], "give --price (with --per, --currency, ...) or --catalog FILE"),
    (["--throughput", "10", "--price", "1", "--catalog", "c.toml"], "or --catalog FILE, not both"),
    (["--throughput", "10", "--catalog", "/no/such.toml"], "cannot read catalog /no/such.toml"),
    (["--target", "0.9", "--throughput", "10", "--price", "1"], "--target reads the per-epoch test metric"),
    (["--target", "90", "--results", "l40s", "--price", "1"], "--target is a fraction of 1"),
    (["--target", "0.9", "--results", "l40s", "--price", "1"], "no per-epoch test metric in l40s"),
    (["--results", "/no/such/result.json", "--price", "1"], "no such result file or folder: /no/such/result.json"),
    (["--results", "/proc/version", "--price", "1"], "cannot read result /proc/version"),
    (["--reference", "leadergpu-2017", "--price", "1"], "drop --throughput, --results, --price"),
])
def test_bad_cost_input_is_one_line_and_exit_2(args, fragment):
    assert_one_line_exit_2(cli_in_process("cost", *args), fragment)


def test_results_files_give_one_priced_row_per_figure(tmp_path):
    """A sweep's rows that ran and a classify run's inference rate; out-of-memory rows are not priced."""
    import json

    from l40sbench.core.results import DatasetInfo, InferenceResult, Row, RunResult, SweepResult, TrainResult

    rows = [Row(model="resnet50", mode="train", precision="fp32", xla=False, optimizer="sgd", devices=8, workers=1,
                device_kind="GPU", per_device_batch=batch, total_batch=8 * batch, status=status,
                images_per_second=rate).to_dict()
            for batch, status, rate in ((64, "ok", 949.72), (128, "oom", None))]
    sweep = SweepResult(complete=True, config={}, env={}, rows=tuple(rows)).to_dict()
    no_training = TrainResult(epochs=0, batch_size=16, epoch_seconds=(), total_seconds=0.0, first_epoch_seconds=None,
                              steady_epoch_seconds=None)
    inference = InferenceResult(batch_size=1, warmup_excluded=1, images_timed=139, mean_ms=None,
                                images_per_second=152.082, p50_ms=None, p90_ms=None, p99_ms=None, min_ms=None,
                                max_ms=None, std_ms=None)
    classify = RunResult(task="classify", base="xception", complete=True, config={}, env={},
                         dataset=DatasetInfo("stand-in", 0, 140, {}), train=no_training, weights="random",
                         inference=inference).to_dict()
    (tmp_path / "sweep.json").write_text(json.dumps(sweep))
    (tmp_path / "classify.json").write_text(json.dumps(classify))
    (tmp_path / "other.json").write_text(json.dumps({"hello": 1}))
    result = cli_in_process("cost", "--results", tmp_path / "sweep.json", tmp_path / "classify.json", "--price", "0.11")
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stdout.splitlines() if "500,000" in line]
    assert len(lines) == 2
    assert "resnet50 train b64 x8 GPU" in lines[0] and "8m 46s" in lines[0] and "€0.97" in lines[0]
    assert "xception classify inference" in lines[1] and "54m 48s" in lines[1]
    assert_one_line_exit_2(cli_in_process("cost", "--results", tmp_path / "other.json", "--price", "1"),
                           "is not an l40sbench result")


CATALOG_TOML = """
[[offer]]
name = "8x GTX 1080 LeaderGPU"
devices = 8
price = 0.11
unit = "minute"

[[offer]]
name = "1x GPU, hourly"
price = 2.5
unit = "hour"
currency = "USD"
billing = "hour"
minimum = 1.0
"""


def test_a_catalog_prices_every_offer_and_each_rows_rule(tmp_path):
    (tmp_path / "offers.toml").write_text(CATALOG_TOML)
    (tmp_path / "offers.json").write_text(json.dumps({"offers": tomllib.loads(CATALOG_TOML)["offer"]}))
    for name in ("offers.toml", "offers.json"):
        result = cli_in_process("cost", "--throughput", "685.59", "--catalog", tmp_path / name, "--label", "Inception V3")
        assert result.returncode == 0, result.stderr
        leader, hourly = [line for line in result.stdout.splitlines() if "500,000" in line]
        assert "12m 09s" in leader and "€1.34" in leader and "billed per second" in leader
        # 12m 09s billed as a whole hour: $2.50, above the $1.00 minimum.
        assert "$2.50" in hourly and "billed per hour" in hourly


def test_with_results_a_catalog_offer_prices_figures_of_its_device_count_and_machine(tmp_path):
    (tmp_path / "offers.toml").write_text(CATALOG_TOML + '\n[[offer]]\nname = "K80 x8"\ndevices = 8\n'
                                          'price = 0.107\nmachine = "AWS"\n')
    result = cli_in_process("cost", "--results", "leadergpu-2017", "--catalog", tmp_path / "offers.toml")
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if "500,000" in line]
    assert rows and all(" x8 GPU" in line for line in rows if "GTX 1080 LeaderGPU" in line or "K80 x8" in line)
    assert not any("1x GPU, hourly" in line for line in rows if " x1 " not in line)
    k80 = [line for line in rows if "K80 x8" in line]
    assert len(k80) == 7  # AWS's seven 8-GPU figures, and no other machine's
    assert any("inceptionv3 train b64 x8 GPU" in line and "36m 14s" in line and "€3.88" in line for line in k80)


@pytest.mark.parametrize("catalog, fragment", [
    ("[[offer]]\nname = 'a'\n", "offer 1 (a): missing 'price'"),
    ("[[offer]]\nname = 'a'\nprice = 1\ncolour = 'red'\n", "offer 1 (a): unknown key 'colour'"),
    ("[[offer]]\nname = 'a'\nprice = -1\n", "offer 1 (a): price must be a positive number"),
    ("[[offer]]\nname = 'a'\nprice = 1\nunit = 'week'\n", "offer 1 (a): unit must be one of"),
    ("[[offer]]\nname = 'a'\nprice = 1\ndevices = 0\n", "devices must be a whole number >= 1"),
    ("title = 'no offers'\n", "lists its offers as [[offer]] tables"),
    ("[[offer]\n", "is not valid TOML"),
    ("[[offer]]\nname = 'a'\nprice = 1\n[[offer]]\nname = 'a'\nprice = 2\n",
     "offer 2 (a): the name 'a' is taken by an earlier offer"),
])
def test_bad_catalogs_are_one_line_and_exit_2(tmp_path, catalog, fragment):
    (tmp_path / "c.toml").write_text(catalog)
    assert_one_line_exit_2(cli_in_process("cost", "--throughput", "10", "--catalog", tmp_path / "c.toml"), fragment)


def test_time_to_target_bills_the_wall_time_up_to_the_first_epoch_that_reached_it():
    record = {"train": {"test_metric": "test_accuracy", "test_metric_per_epoch": [0.5, 0.85, 0.8, 0.95],
                        "epoch_seconds": [10.0, 5.0, 5.0, 5.0], "wall_seconds_at_epoch": [12.0, 18.5, 25.0, 31.5]}}
    reached = cost.time_to_target(record, 0.85)
    assert (reached.epoch, reached.seconds, reached.epochs, reached.clock) == (2, 18.5, 4, "wall")
    assert cost.time_to_target(record, 0.9).seconds == 31.5
    # a record from before wall times were kept: the sum of its epoch clocks, and it says so
    older = {"train": {**record["train"], "wall_seconds_at_epoch": []}}
    reached = cost.time_to_target(older, 0.85)
    assert reached.seconds == 15.0 and reached.clock.startswith("epoch clocks")
    missed = cost.time_to_target(record, 0.99)
    assert missed.epoch is None and missed.seconds is None
    assert cost.time_to_target({"train": {"epoch_seconds": [1.0]}}, 0.5) is None
    billed, money, rule = cost.charge(15.0, cost.Offer("x", 1, 6.0, "minute", billing="minute"))
    assert (billed, money) == (60, 6.0) and "per minute" in rule


def test_cost_to_accuracy_from_a_real_classify_run(tiny_runs):
    """The run's own per-epoch test accuracy: a target it reached is priced, one above it is 'not reached'."""
    record = json.loads((tiny_runs["vgg19"] / "result.json").read_text())
    scores = record["train"]["test_metric_per_epoch"]
    assert len(scores) == record["train"]["epochs"] == 3 and all(0 <= v <= 1 for v in scores)
    target = max(scores)
    epoch = scores.index(target) + 1
    seconds = record["train"]["wall_seconds_at_epoch"][epoch - 1]  # billed: wall time, scoring included
    assert seconds >= sum(record["train"]["epoch_seconds"][:epoch])
    result = cli_in_process("cost", "--results", tiny_runs["vgg19"], "l40s", "--target", target, "--price", "3600",
                     "--per", "hour")
    assert result.returncode == 0, result.stderr
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("vgg19")]
    assert f"epoch {epoch}/3" in line and f"€{math.ceil(seconds)}.00" in line  # EUR 1 a second, whole seconds
    assert "(wall)" in line
    assert "not priced: l40s" in result.stdout
    if target < 1:
        missed = cli_in_process("cost", "--results", tiny_runs["vgg19"], "--target", "1", "--price", "1")
        assert missed.returncode == 0 and "not reached" in missed.stdout and "in 3 epochs" in missed.stdout
