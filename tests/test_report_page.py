"""`report --html`: one page that opens offline, holds the records' figures, sorts and filters, and draws the
plots with their points; checked in the page's text and in headless Chromium (Debian's chromium and
chromium-driver, which ./run.sh test installs where it can; the browser test skips, saying why, elsewhere)."""

import html
import json
import re
import shutil
import sys
from pathlib import Path

import pytest

from l40sbench.core.text import format_duration
from tests.conftest import REPO, assert_one_line_exit_2, cli_in_process, run_cli

SCREENSHOTS = REPO / "results"  # report-page.png and report-page-plots.png (docs/cost-and-reports.md)


def _slower_machine(folder: Path, target: Path) -> Path:
    """The tiny vgg19 run as a stand-in for a machine at half the speed: its peak halved, its times doubled."""
    shutil.copytree(folder, target)
    record = json.loads((target / "result.json").read_text())
    record["env"]["cpu"] = "a stand-in at half speed"
    for figures in record["env"]["peak"]["matmul"].values():
        figures["gflops"] /= 2
    train, inference = record["train"], record["inference"]
    train["epoch_seconds"] = [2 * s for s in train["epoch_seconds"]]
    for key in ("first_epoch_seconds", "steady_epoch_seconds", "total_seconds", "wall_seconds"):
        train[key] *= 2
    inference["times_ms"] = [2 * t for t in inference["times_ms"]]
    for key in ("mean_ms", "p50_ms", "p90_ms", "p99_ms", "min_ms", "max_ms"):
        inference[key] *= 2
    inference["images_per_second"] /= 2
    for interval in (inference["interval_ms"], train["steady_epoch_interval"]):
        for key in ("mean", "median", "std"):
            interval[key] = None if interval.get(key) is None else 2 * interval[key]
        for key in ("mean_ci95", "median_ci95"):
            interval[key] = None if interval.get(key) is None else [2 * v for v in interval[key]]
    record["stability"] = {**(record.get("stability") or {}), "verdict": "unstable",
                           "reasons": ["a stand-in's neighbour took 40 % of the CPU"]}
    (target / "result.json").write_text(json.dumps(record))
    return target


def _older_run(folder: Path, target: Path) -> Path:
    """The tiny vgg19 run as a record from before peaks per precision, backends and intervals were recorded."""
    target.mkdir()
    record = json.loads((folder / "result.json").read_text())
    env = record["env"]
    env["calibration"] = {"matmul_gflops": env.pop("peak")["matmul"]["float32"]["gflops"], "conv_gflops": 1.0}
    env.pop("backend", None)
    env["cpu"] = "an older run's CPU"
    record["train"]["steady_epoch_interval"], record["inference"]["interval_ms"] = {}, {}
    (target / "result.json").write_text(json.dumps(record))
    return target


CATALOG = '[[offer]]\nname = "stand-in cloud"\nprice = 0.5\nunit = "hour"\ncurrency = "USD"\n'


def _figures(text: str) -> dict:
    return json.loads(re.search(r'<script type="application/json" id="figures">(.*?)</script>', text,
                                re.S).group(1).replace("<\\/", "</"))


@pytest.fixture(scope="module")
def page(tiny_runs, tmp_path_factory):
    root = tmp_path_factory.mktemp("page")
    sweep = run_cli("synthetic", "--models", "lenet", "--batch-sizes", "2,4", "--devices", "1", "--steps", "2",
                    "--warmup-steps", "1", "--output-dir", root / "sweep")
    assert sweep.returncode == 0, sweep.stderr[-2000:]
    slower = _slower_machine(tiny_runs["vgg19"], root / "slower")
    (root / "catalog.toml").write_text(CATALOG)
    inputs = [tiny_runs["vgg19"], slower, root / "sweep", "l40s", "leadergpu-2017"]
    pages = []
    for name in ("first", "second"):  # the same records twice: the same page but for its generation time
        result = cli_in_process("report", *inputs, "--output-dir", root / name, "--html", "--catalog", root / "catalog.toml")
        assert result.returncode == 0, result.stderr[-2000:]
        pages.append((root / name / "index.html").read_text())
    return root, tiny_runs["vgg19"], pages


def test_the_page_is_one_file_that_names_no_network_and_is_stable(page):
    root, _, (first, second) = page
    assert (root / "first" / "index.html").stat().st_size < 10 * 2**20
    assert not re.findall(r"<(?:script|link|img|iframe)[^>]*(?:src|href)=\"(?:https?:)?//", first)
    without = [re.sub(r'<meta name="generated" content="[^"]*">', "", text) for text in (first, second)]
    assert without[0] == without[1] and first != "" and "Plotly.react(" in first


def test_the_page_holds_both_machines_and_the_records_figures(page):
    root, vgg19, (first, _) = page
    record = json.loads((vgg19 / "result.json").read_text())
    assert f"{record['inference']['mean_ms']:.3f}" in first and f"{2 * record['inference']['mean_ms']:.3f}" in first
    assert '<option value="a stand-in at half speed (' in first  # the second machine, by name, in the filter
    peak = record["env"]["peak"]["matmul"]["float32"]["gflops"]  # the machines side by side, each with its peak
    assert f"<td>{peak:,.1f}</td>" in first and f"<td>{peak / 2:,.1f}</td>" in first
    assert '<th data-machine="a stand-in at half speed (' in first  # ... as columns, each with its price
    assert "<td>stand-in cloud: $0.5/hour (1 device)</td>" in first and "<td>published: L40S fine-tuning" in first
    figures = _figures(first)
    epoch = figures["plot-classify-epoch"]["data"]
    assert sorted(len(t["x"]) for t in epoch) == [1, 1, 3]  # each tiny run's vgg19, the L40S study's three bases
    cost = figures["plot-cost"]["data"]  # the LeaderGPU study's own table, repriced, as report.md's cost section
    assert cost and all(len(t["x"]) == len(t["y"]) > 0 and min(t["x"]) > 0 for t in cost)
    sweep = [t for t in figures["plot-sweep"]["data"] if t["name"].startswith("lenet x1 ·")]
    assert sweep and sweep[0]["x"] == [2, 4]
    assert len(set(re.findall(r'<a href="([^"]*/result\.json)">', first))) == 3  # the three run folders, linked
    steady = format_duration(record["train"]["steady_epoch_seconds"])  # each measured figure links to its record
    # (the cell may also be marked unstable: the tiny run beside CI's other workers)
    assert re.search(r'<td [^>]*title="[^"]*mean [^"]*"><a href="[^"]*/vgg19/result\.json">' + re.escape(steady), first)
    assert all(tag["link"].endswith("result.json") for tag in figures["plot-classify-epoch"]["tags"][0])
    published = [t for t in figures["plot-sweep"]["data"] if t["name"].endswith("(published)")]
    assert published and all(t["line"]["dash"] == "dash" for t in published)  # the LeaderGPU grid, beneath ours
    assert figures["plot-sweep"]["data"][-1]["name"].startswith("lenet x1 ·")


def test_cost_to_accuracy_follows_each_epoch_on_each_offer(page):
    _, vgg19, (first, _) = page
    train = json.loads((vgg19 / "result.json").read_text())["train"]
    curves = _figures(first)["plot-classify-cost-accuracy"]["data"]
    assert len(curves) == 2 and all(t["y"] == train["test_metric_per_epoch"] for t in curves)
    fast, slow = (t["x"] for t in curves)  # billed per second at $0.5/hour; the stand-in took twice as long
    assert fast == sorted(fast) and fast[-1] == pytest.approx(0.5 * train["wall_seconds_at_epoch"][-1] / 3600, abs=2e-4)
    assert all(t["customdata"][0] == "USD" for t in curves)


def test_figures_carry_their_interval_and_n_on_hover_and_unstable_runs_their_reason(page):
    _, vgg19, (first, _) = page
    interval = json.loads((vgg19 / "result.json").read_text())["inference"]["interval_ms"]
    low, high = interval["mean_ci95"]
    assert html.escape(f"95 % interval {low:.4g} to {high:.4g} ms ({interval['method']}") in first
    assert f"n {interval['n']}" in first
    assert 'class="unstable" title="unstable run: a stand-in&#x27;s neighbour took 40 % of the CPU' in first
    assert "a published figure: no samples, so no interval" in first  # the L40S study's rows


def _browser():
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
    if not (shutil.which("chromium") and shutil.which("chromedriver")):
        pytest.skip("Debian's chromium and chromium-driver are not installed (./run.sh test installs them as root)")
    options = webdriver.ChromeOptions()
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1300,2200"):
        options.add_argument(flag)
    options.binary_location = shutil.which("chromium")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = webdriver.ChromeService(executable_path=shutil.which("chromedriver"))
    return webdriver.Chrome(options=options, service=service)


def test_the_page_in_headless_chromium_offline(page):
    root, vgg19, _ = page
    from selenium.webdriver.common.by import By

    driver = _browser()
    try:
        driver.execute_cdp_cmd("Network.enable", {})
        driver.execute_cdp_cmd("Network.emulateNetworkConditions", {"offline": True, "latency": 0,
                                                                     "downloadThroughput": 0, "uploadThroughput": 0})
        driver.get((root / "first" / "index.html").as_uri())
        severe = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert not severe, severe
        points = driver.execute_script("return Object.fromEntries(Array.from(document.querySelectorAll('div.plot'))"
                                       ".map(d => [d.id, d.data.map(t => t.x.length)]))")
        assert sorted(points["plot-classify-epoch"]) == [1, 1, 3]
        # the inputs table, read from the DOM, against the record
        mean = json.loads((vgg19 / "result.json").read_text())["inference"]["mean_ms"]
        cells = [td.text for td in driver.find_elements(By.CSS_SELECTOR, "table.sortable td")]
        assert f"{mean:.3f}" in cells
        # sorting: the first table's first column, ascending then descending
        first_table = driver.find_elements(By.CSS_SELECTOR, "table.sortable")[0]
        header = first_table.find_element(By.CSS_SELECTOR, "th")

        def column():
            return [r.find_elements(By.TAG_NAME, "td")[0].text for r in
                    first_table.find_elements(By.CSS_SELECTOR, "tbody tr")]

        header.click()
        assert column() == sorted(column(), key=str.lower)
        header.click()
        assert column() == sorted(column(), key=str.lower, reverse=True)
        # a filter: only rows that hold every word stay
        box = driver.find_element(By.ID, "filter")
        box.send_keys("lenet")
        shown = [r for r in driver.find_elements(By.CSS_SELECTOR, "table.sortable tbody tr") if r.is_displayed()]
        assert shown and all("lenet" in r.text.lower() for r in shown)
        box.clear()
        box.send_keys(" ")
        _check_the_selects(driver, _figures((root / "first" / "index.html").read_text()))
        SCREENSHOTS.mkdir(exist_ok=True)
        driver.save_screenshot(str(SCREENSHOTS / "report-page.png"))
        driver.execute_script("document.getElementById('plot-classify-epoch').scrollIntoView()")
        driver.save_screenshot(str(SCREENSHOTS / "report-page-plots.png"))
        assert all((SCREENSHOTS / name).stat().st_size > 10_000 for name in ("report-page.png", "report-page-plots.png"))
        # a click on a plot's point opens the record it came from
        driver.execute_script("document.getElementById('plot-classify-epoch')"
                              ".emit('plotly_click', {points: [{curveNumber: 0, pointNumber: 0}]})")
        assert driver.current_url == (vgg19 / "result.json").resolve().as_uri()
    finally:
        driver.quit()


def _check_the_selects(driver, figures: dict):
    """Model, machine and task filters on table rows, a machine's columns and plot points."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    def points(plot):
        return driver.execute_script(f"return document.getElementById('{plot}').data.map(t => t.x.length)")

    def shown(css):
        return [e for e in driver.find_elements(By.CSS_SELECTOR, css) if e.is_displayed()]

    model, machine, task = (Select(driver.find_element(By.ID, name)) for name in ("model", "machine", "task"))
    model.select_by_value("vgg19")
    assert sum(points("plot-classify-epoch")) == 3  # the two tiny runs and the L40S study's vgg19
    rows = [r for r in shown('table[data-task="classify"] tbody tr')  # the tables with a row per base (the run's
            if r.find_element(By.XPATH, "ancestor::table//th[1]").text == "base"]  # runtime table: a row per runtime)
    assert rows and all(r.find_elements(By.TAG_NAME, "td")[0].text.startswith("vgg19") for r in rows)
    model.select_by_value("")
    slower = next(t["meta"] for t in figures["plot-classify-epoch"]["data"] if "half speed" in t["meta"])
    machine.select_by_value(slower)
    assert sum(points("plot-classify-epoch")) == 1
    heads = shown('table[data-task="classify"] th[data-machine]')
    assert heads and {h.get_attribute("data-machine") for h in heads} == {slower}
    machine.select_by_value("")
    task.select_by_value("synthetic")
    assert not shown('section[data-task="classify"]') and shown('section[data-task="synthetic"]')
    assert sum(points("plot-classify-epoch")) == 0 and sum(points("plot-sweep")) > 0
    task.select_by_value("")
    assert sum(points("plot-classify-epoch")) == sum(len(t["x"]) for t in figures["plot-classify-epoch"]["data"])


def test_older_records_and_several_kinds_in_one_file_are_shown_and_an_empty_set_is_refused(page, tiny_runs, tmp_path):
    root, vgg19, _ = page
    older = _older_run(vgg19, tmp_path / "older")
    kinds = tmp_path / "kinds.json"  # a classify run and a sweep in one file
    kinds.write_text(json.dumps([json.loads((vgg19 / "result.json").read_text()),
                                 json.loads((root / "sweep" / "result.json").read_text())]))
    result = cli_in_process("report", older, kinds, "--output-dir", tmp_path / "out", "--html")
    assert result.returncode == 0, result.stderr[-2000:]
    text = (tmp_path / "out" / "index.html").read_text()
    assert "no interval in this record (a run from before intervals were recorded)" in text
    calibration = json.loads((older / "result.json").read_text())["env"]["calibration"]["matmul_gflops"]
    assert f"<td>{calibration:,.1f}</td>" in text  # the migrated peak, in the machines' table
    figures = _figures(text)
    assert "plot-sweep" in figures and sorted(len(t["x"]) for t in figures["plot-classify-epoch"]["data"]) == [1, 1]
    (tmp_path / "empty.json").write_text("[]")
    empty = cli_in_process("report", tmp_path / "empty.json", "--output-dir", tmp_path / "none", "--html")
    assert_one_line_exit_2(empty, "is not an l40sbench result")
    assert not (tmp_path / "none").exists() or not any((tmp_path / "none").iterdir())


def test_a_truncated_record_is_one_line_and_writes_no_page(tiny_runs, tmp_path):
    bad = tmp_path / "bad"
    bad.mkdir()
    text = (tiny_runs["vgg19"] / "result.json").read_text()
    (bad / "result.json").write_text(text[: len(text) // 2])
    result = cli_in_process("report", bad, tiny_runs["vgg19"], "--output-dir", tmp_path / "out", "--html")
    assert_one_line_exit_2(result, "cannot read result")
    assert not (tmp_path / "out" / "index.html").exists() and not (tmp_path / "out" / "report.md").exists()


def test_html_without_plotly_is_one_line_and_the_report_md_stays(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "plotly", None)  # as where plotly is not installed
    monkeypatch.setitem(sys.modules, "plotly.offline", None)
    result = cli_in_process("report", "l40s", "--output-dir", tmp_path / "r", "--html")
    assert_one_line_exit_2(result, "--html: no report page: plotly does not import here (")
    assert f"{tmp_path / 'r' / 'report.md'} is written" in result.stderr
    assert (tmp_path / "r" / "report.md").exists() and not (tmp_path / "r" / "index.html").exists()
