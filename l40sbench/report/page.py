"""index.html beside report.md: the same tables, sortable and filterable, and interactive plots, in one file.

The page reads report.md itself (one source for both: headings, tables, text, the PNGs inlined) and the
records for its plots (plotly, its offline bundle inlined: the page opens from disk with no network). The
same records give the same bytes but for the `generated` meta line, so a page can be kept and diffed.
"""

from __future__ import annotations

import base64
import html
import json
import os
import re
from collections.abc import Sequence
from pathlib import Path

from l40sbench.core.records import write_atomic
from l40sbench.report.inputs import Loaded, machine_labels
from l40sbench.report.tables import wall_epoch_seconds

IMAGE = re.compile(r"^!\[(?P<alt>[^\]]*)\]\((?P<src>[^)]+)\)$")
INLINE = [(re.compile(r"\*\*(.+?)\*\*"), r"<b>\1</b>"), (re.compile(r"`([^`]+)`"), r"<code>\1</code>")]

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:1.5em auto;max-width:1200px;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.2em;font-size:13px}th,td{border:1px solid #ccc;padding:3px 7px}
th{background:#f3f3f3;cursor:pointer;user-select:none;white-space:nowrap}th[data-order=asc]:after{content:" \\25B2"}
th[data-order=desc]:after{content:" \\25BC"}tr:nth-child(even) td{background:#fafafa}
td.unstable,td.worse{color:#a00;font-weight:600}pre{background:#f6f6f6;padding:.6em;overflow-x:auto;font-size:12px}
#filters{position:sticky;top:0;background:#fff;padding:.5em 0;border-bottom:1px solid #ddd;z-index:2}
#filters input,#filters select{margin-right:1em}.plot{height:420px;margin:.5em 0 1.5em}img{max-width:100%}
"""

SCRIPT = """
function cellKey(text){const t=text.trim();
  const m=t.replace(/,/g,"").match(/^[-+]?[0-9]*[.]?[0-9]+(e[-+]?[0-9]+)?(x| ?%)?$/i);
  return m?parseFloat(m[0]):t.toLowerCase();}
function sortBy(th){const table=th.closest("table"),col=th.cellIndex,body=table.tBodies[0];
  const asc=th.dataset.order!=="asc";const rows=Array.from(body.rows);
  rows.sort((a,b)=>{const x=cellKey(a.cells[col].textContent),y=cellKey(b.cells[col].textContent);
    if(typeof x!==typeof y)return(typeof x==="number"?-1:1)*(asc?1:-1);return(x<y?-1:x>y?1:0)*(asc?1:-1);});
  rows.forEach(r=>body.appendChild(r));table.querySelectorAll("th").forEach(h=>delete h.dataset.order);
  th.dataset.order=asc?"asc":"desc";}
function applyFilters(){const words=document.getElementById("filter").value.toLowerCase().split(/\\s+/)
    .filter(w=>w);const machine=document.getElementById("machine").value;
  document.querySelectorAll("table.sortable tbody tr").forEach(tr=>{const text=tr.textContent.toLowerCase();
    tr.hidden=!(words.every(w=>text.includes(w))&&(!machine||tr.textContent.includes(machine)));});
  document.querySelectorAll("div.plot").forEach(div=>{if(!div.data)return;
    Plotly.restyle(div,{visible:div.data.map(t=>(!machine||!t.meta||t.meta===machine)&&
      words.every(w=>(t.name+" "+(t.meta||"")).toLowerCase().includes(w)||!w)?true:"legendonly")});});}
document.querySelectorAll("table.sortable th").forEach(th=>th.addEventListener("click",()=>sortBy(th)));
document.getElementById("filter").addEventListener("input",applyFilters);
document.getElementById("machine").addEventListener("change",applyFilters);
for(const [id,figure] of Object.entries(JSON.parse(document.getElementById("figures").textContent))){
  Plotly.newPlot(id,figure.data,figure.layout,{responsive:true,displaylogo:false});}
"""


def _inline(text: str) -> str:
    out = html.escape(text, quote=False)
    for pattern, replacement in INLINE:
        out = pattern.sub(replacement, out)
    return out


def _cells(line: str) -> list[str]:
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def _table(lines: list[str]) -> str:
    headers, body = _cells(lines[0]), [_cells(line) for line in lines[2:]]
    head = "".join(f"<th>{_inline(h)}</th>" for h in headers)
    rows = []
    for row in body:
        tds = []
        for cell in row:
            flag = "unstable" if cell.upper().startswith("UNSTABLE") else "worse" if "WORSE" in cell else ""
            tds.append(f'<td class="{flag}">{_inline(cell)}</td>' if flag else f"<td>{_inline(cell)}</td>")
        rows.append(f"<tr>{''.join(tds)}</tr>")
    return f'<table class="sortable"><thead><tr>{head}</tr></thead><tbody>\n' + "\n".join(rows) + "\n</tbody></table>"


def body_from_markdown(markdown: str, folder: Path) -> str:
    """report.md as HTML: headings, sortable tables, fenced blocks, paragraphs, and its PNGs inlined."""
    out, lines, i = [], markdown.splitlines(), 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("|"):
            block = []
            while i < len(lines) and lines[i].startswith("|"):
                block.append(lines[i])
                i += 1
            out.append(_table(block))
            continue
        if line.startswith("```"):
            end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("```")), len(lines))
            out.append(f"<pre>{html.escape(chr(10).join(lines[i + 1:end]), quote=False)}</pre>")
            i = end + 1
            continue
        heading = re.match(r"^(#{1,4}) (.*)$", line)
        image = IMAGE.match(line.strip())
        if heading:
            level = len(heading.group(1))
            out.append(f"<h{level}>{_inline(heading.group(2))}</h{level}>")
        elif image and (folder / image["src"]).is_file():
            data = base64.b64encode((folder / image["src"]).read_bytes()).decode()
            out.append(f'<img alt="{html.escape(image["alt"])}" src="data:image/png;base64,{data}">')
        elif line.strip():
            out.append(f"<p>{_inline(line)}</p>")
        i += 1
    return "\n".join(out)


def _ci(interval: dict | None, value: float | None) -> list[float] | None:
    """(plus, minus) error bar lengths from an interval's mean_ci95, where it has one."""
    ci = (interval or {}).get("mean_ci95")
    if not ci or value is None:
        return None
    return [max(ci[1] - value, 0.0), max(value - ci[0], 0.0)]


def _bars(points: list[tuple[str, str, float, list | None, str]], title: str, y: str) -> dict:
    """Grouped bars: points (machine, base, value, error bars or None, origin), one trace per machine."""
    traces = []
    for machine in dict.fromkeys(p[0] for p in points):
        mine = [p for p in points if p[0] == machine]
        trace = {"type": "bar", "name": machine, "meta": machine, "x": [p[1] for p in mine],
                 "y": [p[2] for p in mine], "customdata": [p[4] for p in mine],
                 "hovertemplate": "%{x}: %{y:.4g}<br>%{customdata}<extra>%{meta}</extra>"}
        if any(p[3] for p in mine):
            trace["error_y"] = {"type": "data", "symmetric": False, "array": [p[3][0] if p[3] else 0 for p in mine],
                                "arrayminus": [p[3][1] if p[3] else 0 for p in mine]}
        traces.append(trace)
    return {"data": traces, "layout": {"title": {"text": title}, "barmode": "group", "yaxis": {"title": {"text": y}}}}


def _cost(priced: Sequence[tuple[str, object]], images: int) -> dict:
    """Cost of N images per model and machine, one trace per offer (report.series.priced's rows)."""
    traces = {}
    for label, row in priced:
        trace = traces.setdefault(row.offer.name, {"type": "bar", "orientation": "h", "name": row.offer.name,
                                                    "meta": "", "x": [], "y": [], "customdata": []})
        trace["y"].append(f"{row.model} · {label}")
        trace["x"].append(row.cost)
        trace["customdata"].append(row.offer.currency)
    for trace in traces.values():
        trace["hovertemplate"] = "%{y}: %{x:.4g} %{customdata}<extra>%{fullData.name}</extra>"
    return {"data": list(traces.values()), "layout": {"title": {"text": f"cost of {images:,} images"},
                                                      "barmode": "group", "margin": {"l": 300}}}


def figures(loaded: Sequence[Loaded], labels: Sequence[str], priced: Sequence = (), images: int = 0
            ) -> dict[str, dict]:
    """The page's plots, by the id of the element each is drawn in."""
    out = {"plot-cost": _cost(priced, images)} if priced else {}
    for task in ("classify", "detect"):
        runs = [(label, item) for item, label in zip(loaded, labels) if item.record.get("task") == task]
        epochs = []
        for label, item in runs:  # the steady epoch where measured; a published row's wall / epochs
            train = item.record.get("train") or {}
            steady = train.get("steady_epoch_seconds")
            value = steady if steady else wall_epoch_seconds(train) if train.get("epochs") else None
            if value:
                epochs.append((label, item.record["base"], value,
                               _ci(train.get("steady_epoch_interval"), steady) if steady else None, item.origin))
        if epochs:
            out[f"plot-{task}-epoch"] = _bars(epochs, f"{task}: time per epoch, s (steady epochs with their 95 % "
                                                      "interval; published rows: wall / epochs)", "seconds")
        latency = [(label, item.record["base"], inf["mean_ms"], _ci(inf.get("interval_ms"), inf["mean_ms"]),
                    item.origin)
                   for label, item in runs if (inf := item.record.get("inference") or {}).get("mean_ms")]
        if latency:
            out[f"plot-{task}-latency"] = _bars(latency, f"{task}: inference, ms/image (95 % interval)", "ms")
    first = [(f"{item.record.get('task')} {item.record.get('base')} · {label}", item.record["time_to_first_step"])
             for item, label in zip(loaded, labels) if (item.record.get("time_to_first_step") or {}).get("parts_seconds")]
    if first:
        parts = list(dict.fromkeys(name for _, t in first for name in t["parts_seconds"]))
        out["plot-first-step"] = {"data": [
            {"type": "bar", "name": part, "orientation": "h", "y": [run for run, _ in first],
             "x": [t["parts_seconds"].get(part, 0.0) for _, t in first], "meta": "",
             "hovertemplate": "%{y}: %{x:.2f} s<extra>" + part + "</extra>"} for part in parts],
            "layout": {"title": {"text": "time to the first training step, s, by part"}, "barmode": "stack",
                       "margin": {"l": 260}, "xaxis": {"title": {"text": "seconds"}}}}
    grid = []
    for item, label in zip(loaded, labels):
        if item.record.get("task") != "synthetic":
            continue
        series: dict[tuple, list] = {}
        for row in item.record.get("rows") or []:
            if row.get("status", "ok") == "ok" and row.get("images_per_second"):
                series.setdefault((row["model"], row.get("devices", 1)), []).append(
                    (row["per_device_batch"], row["images_per_second"]))
        for (model, devices), points in sorted(series.items()):
            points.sort()
            grid.append({"type": "scatter", "mode": "lines+markers", "name": f"{model} x{devices} · {label}",
                         "meta": label, "x": [p[0] for p in points], "y": [p[1] for p in points],
                         "customdata": [item.origin] * len(points),
                         "hovertemplate": "batch %{x}: %{y:.4g} images/s<br>%{customdata}<extra>%{fullData.name}"
                                          "</extra>"})
    if grid:
        out["plot-sweep"] = {"data": grid, "layout": {
            "title": {"text": "images/s against batch size, per model and device count"},
            "xaxis": {"title": {"text": "batch per device"}, "type": "log"},
            "yaxis": {"title": {"text": "images/s"}, "type": "log"}}}
    return out


PRECISIONS = ("float32", "tf32", "bfloat16", "float16")


def _machines(loaded: Sequence[Loaded], labels: Sequence[str]) -> str:
    """The machines as rows side by side: GPU, driver, CPU, backend, and the measured matmul peak per precision
    (the figure compare and utilisation divide by; published records have none)."""
    from collections import Counter

    from l40sbench.core.env import gpu_models

    rows = {}
    for item, label in zip(loaded, labels):
        env = item.record.get("env") or {}
        matmul = (env.get("peak") or {}).get("matmul") or {}
        gpus = Counter(gpu_models(env))
        cells = [label, ", ".join(f"{n}x {model}" for model, n in gpus.items()) or "none", (env.get("device_power") or {}).get("driver") or "-",
                 env.get("cpu") or "-", env.get("backend") or "-"]
        cells += [f"{matmul[p]['gflops']:,.1f}" if (matmul.get(p) or {}).get("gflops") else "-" for p in PRECISIONS]
        rows.setdefault(label, cells)
    head = "".join(f"<th>{html.escape(h)}</th>" for h in ["machine", "GPU", "driver", "CPU", "backend",
                                                           *(f"peak {p}, GFLOP/s" for p in PRECISIONS)])
    body = "\n".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>"
                     for cells in rows.values())
    return ("<h2>The machines side by side</h2>\n<p>Throughput figures are compared across machines only within "
            "one kind of device and GPU model, by the peak of the run's precision (compare; docs/trust.md); latencies are not "
            "normalised.</p>\n" f'<table class="sortable"><thead><tr>{head}</tr></thead><tbody>\n{body}\n'
            "</tbody></table>")


def _links(loaded: Sequence[Loaded], labels: Sequence[str], folder: Path) -> str:
    rows = []
    for item, label in zip(loaded, labels):
        path = Path(item.origin)
        target = path / "result.json" if path.is_dir() else path
        link = (f'<a href="{html.escape(os.path.relpath(target.resolve(), folder.resolve()))}">'
                f"{html.escape(item.origin)}</a>" if target.is_file() else html.escape(item.origin))
        rows.append(f"<tr><td>{html.escape(label)}</td><td>{html.escape(str(item.record.get('task')))}</td>"
                    f"<td>{html.escape(str(item.record.get('base')))}</td><td>{link}</td></tr>")
    return ('<h2>Where each figure comes from</h2>\n<table class="sortable"><thead><tr><th>machine</th><th>task</th>'
            "<th>base</th><th>record</th></tr></thead><tbody>\n" + "\n".join(rows) + "\n</tbody></table>")


def write_page(loaded: Sequence[Loaded], labels: Sequence[str], folder: Path, markdown: str, generated: str,
               priced: Sequence = (), images: int = 0) -> Path:
    """Writes folder/index.html; returns its path."""
    from plotly.offline import get_plotlyjs

    plots = figures(loaded, labels, priced, images)
    title, _, rest = markdown.partition("\n") if markdown.startswith("# ") else ("", "", markdown)
    machines = "".join(f'<option value="{html.escape(m)}">{html.escape(m)}</option>' for m in dict.fromkeys(labels))
    page = "\n".join([
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f'<meta name="generated" content="{html.escape(generated)}">',
        "<title>l40sbench report</title>", f"<style>{STYLE}</style>", f"<script>{get_plotlyjs()}</script>",
        "</head><body>",
        '<div id="filters"><label>filter <input id="filter" type="search" placeholder="task, model, precision ...">'
        f'</label><label>machine <select id="machine"><option value="">every machine</option>{machines}</select>'
        "</label></div>",
        body_from_markdown(title, folder), _machines(loaded, labels), body_from_markdown(rest, folder),
        "<h2>Interactive plots</h2>" if plots else "",
        "\n".join(f'<div class="plot" id="{name}"></div>' for name in plots),
        _links(loaded, labels, folder),
        '<script type="application/json" id="figures">'
        + json.dumps(plots, sort_keys=True).replace("</", "<\\/") + "</script>",
        f"<script>{SCRIPT}</script>", "</body></html>", ""])
    path = folder / "index.html"
    write_atomic(path, page)
    return path


def write_html(loaded: Sequence[Loaded], folder: Path, offers: Sequence = (), images: int = 500_000) -> Path:
    """index.html beside the report.md that report.document.write_report wrote in `folder` from `loaded` (with
    the same offers and image count, for its cost plot)."""
    import time

    from l40sbench.report.series import priced

    labels = machine_labels(loaded)
    generated = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    rows, _ = priced(loaded, labels, offers, images)
    return write_page(loaded, labels, folder, (folder / "report.md").read_text(), generated, rows, images)
