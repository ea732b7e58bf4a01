"""`report --html`: one page that opens offline, holds the records' figures, sorts and filters, and draws the
plots with their points; checked in the page's text and in headless Chromium (Debian's chromium and
chromium-driver, which ./run.sh test installs where it can; the browser test skips, saying why, elsewhere)."""

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import REPO, assert_one_line_exit_2, run_cli

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
    (target / "result.json").write_text(json.dumps(record))
    return target


@pytest.fixture(scope="module")
def page(tiny_runs, tmp_path_factory):
    root = tmp_path_factory.mktemp("page")
    sweep = run_cli("synthetic", "--models", "lenet", "--batch-sizes", "2,4", "--devices", "1", "--steps", "2",
                    "--warmup-steps", "1", "--output-dir", root / "sweep")
    assert sweep.returncode == 0, sweep.stderr[-2000:]
    slower = _slower_machine(tiny_runs["vgg19"], root / "slower")
    inputs = [tiny_runs["vgg19"], slower, root / "sweep", "l40s", "leadergpu-2017"]
    pages = []
    for name in ("first", "second"):  # the same records twice: the same page but for its generation time
        result = run_cli("report", *inputs, "--out", root / name, "--html")
        assert result.returncode == 0, result.stderr[-2000:]
        pages.append((root / name / "index.html").read_text())
    return root, tiny_runs["vgg19"], pages


def test_the_page_is_one_file_that_names_no_network_and_is_stable(page):
    root, _, (first, second) = page
    assert (root / "first" / "index.html").stat().st_size < 10 * 2**20
    assert not re.findall(r"<(?:script|link|img|iframe)[^>]*(?:src|href)=\"(?:https?:)?//", first)
    without = [re.sub(r'<meta name="generated" content="[^"]*">', "", text) for text in (first, second)]
    assert without[0] == without[1] and first != "" and "Plotly.newPlot" in first


def test_the_page_holds_both_machines_and_the_records_figures(page):
    root, vgg19, (first, _) = page
    record = json.loads((vgg19 / "result.json").read_text())
    assert f"{record['inference']['mean_ms']:.3f}" in first and f"{2 * record['inference']['mean_ms']:.3f}" in first
    assert '<option value="a stand-in at half speed (' in first  # the second machine, by name, in the filter
    peak = record["env"]["peak"]["matmul"]["float32"]["gflops"]  # the machines side by side, each with its peak
    assert f"<td>{peak:,.1f}</td>" in first and f"<td>{peak / 2:,.1f}</td>" in first
    figures = json.loads(re.search(r'<script type="application/json" id="figures">(.*?)</script>', first,
                                   re.S).group(1).replace("<\\/", "</"))
    epoch = figures["plot-classify-epoch"]["data"]
    assert sorted(len(t["x"]) for t in epoch) == [1, 1, 3]  # each tiny run's vgg19, the L40S study's three bases
    cost = figures["plot-cost"]["data"]  # the LeaderGPU study's own table, repriced, as report.md's cost section
    assert cost and all(len(t["x"]) == len(t["y"]) > 0 and min(t["x"]) > 0 for t in cost)
    sweep = [t for t in figures["plot-sweep"]["data"] if t["name"].startswith("lenet x1 ·")]
    assert sweep and sweep[0]["x"] == [2, 4]
    assert len(re.findall(r'<a href="[^"]*/result\.json">', first)) == 3  # the three run folders, linked


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
        SCREENSHOTS.mkdir(exist_ok=True)
        box.clear()
        box.send_keys(" ")
        driver.save_screenshot(str(SCREENSHOTS / "report-page.png"))
        driver.execute_script("document.getElementById('plot-classify-epoch').scrollIntoView()")
        driver.save_screenshot(str(SCREENSHOTS / "report-page-plots.png"))
        assert all((SCREENSHOTS / name).stat().st_size > 10_000 for name in ("report-page.png", "report-page-plots.png"))
    finally:
        driver.quit()


def test_a_truncated_record_is_one_line_and_writes_no_page(tiny_runs, tmp_path):
    bad = tmp_path / "bad"
    bad.mkdir()
    text = (tiny_runs["vgg19"] / "result.json").read_text()
    (bad / "result.json").write_text(text[: len(text) // 2])
    result = run_cli("report", bad, tiny_runs["vgg19"], "--out", tmp_path / "out", "--html")
    assert_one_line_exit_2(result, "cannot read result")
    assert not (tmp_path / "out" / "index.html").exists() and not (tmp_path / "out" / "report.md").exists()
