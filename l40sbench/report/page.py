"""index.html beside report.md: the same tables, sortable and filterable, and interactive plots, in one file.

The page reads report.md itself (one source for both: headings, tables, text, the PNGs inlined; page_tables)
and the records for its plots (page_figures; plotly, its offline bundle inlined: the page opens from disk with
no network). Filters by words, task, model, machine and precision act on table rows, on a machine's columns
and on plot points alike. The same records give the same bytes but for the `generated` meta line, so a page
can be kept and diffed.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from pathlib import Path

from l40sbench.core.records import write_atomic
from l40sbench.report.cells import offer_rate
from l40sbench.report.inputs import Loaded, machine_labels, precision
from l40sbench.report.page_figures import figures
from l40sbench.report.page_tables import Records, body_from_markdown, record_link

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
const FIGURES=JSON.parse(document.getElementById("figures").textContent),CONFIG={responsive:true,displaylogo:false};
function cellKey(text){const t=text.trim();
  const m=t.replace(/,/g,"").match(/^[-+]?[0-9]*[.]?[0-9]+(e[-+]?[0-9]+)?(x| ?%)?$/i);
  return m?parseFloat(m[0]):t.toLowerCase();}
function sortBy(th){const table=th.closest("table"),col=th.cellIndex,body=table.tBodies[0];
  const asc=th.dataset.order!=="asc";const rows=Array.from(body.rows);
  rows.sort((a,b)=>{const x=cellKey(a.cells[col].textContent),y=cellKey(b.cells[col].textContent);
    if(typeof x!==typeof y)return(typeof x==="number"?-1:1)*(asc?1:-1);return(x<y?-1:x>y?1:0)*(asc?1:-1);});
  rows.forEach(r=>body.appendChild(r));table.querySelectorAll("th").forEach(h=>delete h.dataset.order);
  th.dataset.order=asc?"asc":"desc";}
function norm(s){return s.toLowerCase().replace(/[^a-z0-9]/g,"");}
function isModel(text,model){const t=text.trim().toLowerCase();return norm(t)===norm(model)||t.startsWith(model.toLowerCase()+" ");}
function choice(){const v=id=>document.getElementById(id).value;
  return {words:v("filter").toLowerCase().split(/\\s+/).filter(w=>w),machine:v("machine"),task:v("task"),
          model:v("model"),precision:v("precision")};}
function filterTable(table,f){const heads=Array.from(table.tHead.rows[0].cells);
  const off=heads.map(h=>!!f.machine&&!!h.dataset.machine&&h.dataset.machine!==f.machine);
  heads.forEach((h,i)=>{h.hidden=off[i];});
  const named=(...names)=>heads.map((h,i)=>names.includes(h.textContent.replace(/ \\[[^\\]]+\\]$/,""))&&!off[i]?i:-1)
    .filter(i=>i>=0);
  const machines=named("machine","measured on"),tasks=named("task"),models=named("base","model"),
    precisions=named("precision");
  for(const tr of table.tBodies[0].rows){const cells=Array.from(tr.cells);cells.forEach((td,i)=>{td.hidden=off[i];});
    const text=cells.filter((td,i)=>!off[i]).map(td=>td.textContent).join(" ").toLowerCase();
    const has=(columns,test)=>!columns.length||columns.some(i=>test(cells[i].textContent.trim()));
    tr.hidden=!(f.words.every(w=>text.includes(w))&&(!f.machine||has(machines,t=>t===f.machine))&&
      (!f.task||has(tasks,t=>t===f.task))&&(!f.model||has(models,t=>isModel(t,f.model)))&&
      (!f.precision||has(precisions,t=>t===f.precision)));}}
function keep(tag,name,f){const text=[name,tag.machine,tag.task,tag.model,tag.precision].join(" ").toLowerCase();
  return(!f.machine||!tag.machine||tag.machine===f.machine)&&(!f.task||!tag.task||tag.task===f.task)&&
    (!f.model||!tag.model||isModel(tag.model,f.model))&&(!f.precision||!tag.precision||tag.precision===f.precision)&&
    f.words.every(w=>text.includes(w));}
function subset(trace,kept){const out=Object.assign({},trace);
  for(const k of ["x","y","customdata"])if(Array.isArray(trace[k]))out[k]=kept.map(i=>trace[k][i]);
  if(trace.error_y){out.error_y=Object.assign({},trace.error_y);
    for(const k of ["array","arrayminus"])out.error_y[k]=kept.map(i=>trace.error_y[k][i]);}
  return out;}
const SHOWN={};
function applyFilters(){const f=choice();
  document.querySelectorAll("section[data-task]").forEach(s=>{s.hidden=!!f.task&&!!s.dataset.task&&s.dataset.task!==f.task;});
  document.querySelectorAll("table.sortable").forEach(t=>filterTable(t,f));
  for(const [id,figure] of Object.entries(FIGURES)){
    const kept=figure.data.map((t,j)=>figure.tags[j].map((g,i)=>keep(g,t.name||"",f)?i:-1).filter(i=>i>=0));
    SHOWN[id]=kept.map((indices,j)=>indices.map(i=>figure.tags[j][i]));
    Plotly.react(id,figure.data.map((t,j)=>subset(t,kept[j])),JSON.parse(JSON.stringify(figure.layout)),CONFIG);}}
document.querySelectorAll("table.sortable th").forEach(th=>th.addEventListener("click",()=>sortBy(th)));
document.getElementById("filter").addEventListener("input",applyFilters);
for(const id of ["machine","task","model","precision"])document.getElementById(id).addEventListener("change",applyFilters);
applyFilters();
for(const id of Object.keys(FIGURES))document.getElementById(id).on("plotly_click",e=>{const p=e.points[0];
  const tag=(SHOWN[id][p.curveNumber]||[])[p.pointNumber];if(tag&&tag.link)window.location.href=tag.link;});
"""


PRECISIONS = ("float32", "tf32", "bfloat16", "float16")


def _price(label: str, offers: Sequence) -> str:
    """The catalog's offers that rent this machine, at any device count."""
    return "; ".join(f"{o.name}: {offer_rate(o)} ({o.devices} device{'s' if o.devices > 1 else ''})"
                     for o in offers if o.rents(label)) or "-"


def _machines(loaded: Sequence[Loaded], labels: Sequence[str], offers: Sequence = ()) -> str:
    """The machines as columns side by side: GPU, driver, CPU, backend, the measured matmul peak per precision
    (the figure compare and utilisation divide by; published records have none), price, and where the figures
    come from."""
    from collections import Counter

    from l40sbench.core.env import gpu_models

    columns = {}
    for item, label in zip(loaded, labels):
        env = item.record.get("env") or {}
        matmul = (env.get("peak") or {}).get("matmul") or {}
        gpus = Counter(gpu_models(env))
        columns.setdefault(label, [
            ", ".join(f"{n}x {model}" for model, n in gpus.items()) or "none",
            (env.get("device_power") or {}).get("driver") or "-", env.get("cpu") or "-", env.get("backend") or "-",
            *(f"{matmul[p]['gflops']:,.1f}" if (matmul.get(p) or {}).get("gflops") else "-" for p in PRECISIONS),
            _price(label, offers),
            f"published: {item.record['source']}" if item.record.get("source") else "measured by l40sbench"])
    names = ["GPU", "driver", "CPU", "backend", *(f"peak {p}, GFLOP/s" for p in PRECISIONS), "price", "source"]
    head = "<th>machine</th>" + "".join(f'<th data-machine="{html.escape(m)}">{html.escape(m)}</th>' for m in columns)
    body = "\n".join(f"<tr><td>{html.escape(name)}</td>" + "".join(f"<td>{html.escape(str(cells[i]))}</td>"
                                                                   for cells in columns.values()) + "</tr>"
                     for i, name in enumerate(names))
    return ("<h2>The machines side by side</h2>\n<p>Figures are shown as measured. compare judges them as measured "
            "too, within one kind of device and GPU model, and names another machine only on evidence (separately "
            "measured peaks confirmed by the runs' own matmul bursts; docs/trust.md). Published figures come from "
            "the studies' articles, as labelled.</p>\n"
            f'<table class="sortable"><thead><tr>{head}</tr></thead><tbody>\n{body}\n</tbody></table>')


def _options(name: str, values, every: str) -> str:
    options = "".join(f'<option value="{html.escape(v)}">{html.escape(v)}</option>' for v in values)
    return f'<label>{name} <select id="{name}"><option value="">{every}</option>{options}</select></label>'


def _filters(loaded: Sequence[Loaded], labels: Sequence[str]) -> str:
    records = [item.record for item in loaded]
    models = dict.fromkeys(r["base"] for r in records if r.get("base") and r.get("task") != "synthetic")
    models |= dict.fromkeys(row["model"] for r in records for row in r.get("rows") or () if row.get("model"))
    precisions = dict.fromkeys(p for r in records for p in [precision(r), *(row.get("precision") for row in
                                                                           r.get("rows") or ())] if p)
    return ('<div id="filters"><label>filter <input id="filter" type="search" placeholder="words ..."></label>'
            + _options("task", dict.fromkeys(r["task"] for r in records if r.get("task")), "every task")
            + _options("model", models, "every model") + _options("machine", dict.fromkeys(labels), "every machine")
            + _options("precision", precisions, "every precision") + "</div>")


def _links(loaded: Sequence[Loaded], labels: Sequence[str], links: dict[str, str]) -> str:
    rows = []
    for item, label in zip(loaded, labels):
        link = links[item.origin]
        origin = f'<a href="{html.escape(link)}">{html.escape(item.origin)}</a>' if link else html.escape(item.origin)
        rows.append(f"<tr><td>{html.escape(label)}</td><td>{html.escape(str(item.record.get('task')))}</td>"
                    f"<td>{html.escape(str(item.record.get('base')))}</td><td>{origin}</td></tr>")
    return ('<h2>Where each figure comes from</h2>\n<table class="sortable"><thead><tr><th>machine</th><th>task</th>'
            "<th>base</th><th>record</th></tr></thead><tbody>\n" + "\n".join(rows) + "\n</tbody></table>")


def write_page(loaded: Sequence[Loaded], labels: Sequence[str], folder: Path, markdown: str, generated: str,
               priced: Sequence = (), images: int = 0, offers: Sequence = ()) -> Path:
    """Writes folder/index.html; returns its path."""
    from plotly.offline import get_plotlyjs

    links = {item.origin: record_link(item.origin, folder) for item in loaded}  # '' for a reference name
    plots = figures(loaded, labels, priced, images, offers, links)
    records = Records.of(loaded, labels, links)
    title, _, rest = markdown.partition("\n") if markdown.startswith("# ") else ("", "", markdown)
    page = "\n".join([
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f'<meta name="generated" content="{html.escape(generated)}">',
        "<title>l40sbench report</title>", f"<style>{STYLE}</style>", f"<script>{get_plotlyjs()}</script>",
        "</head><body>",
        _filters(loaded, labels),
        body_from_markdown(title, folder, records), _machines(loaded, labels, offers),
        body_from_markdown(rest, folder, records),
        "<h2>Interactive plots</h2>" if plots else "",
        "\n".join(f'<div class="plot" id="{name}"></div>' for name in plots),
        _links(loaded, labels, links),
        '<script type="application/json" id="figures">'
        + json.dumps(plots, sort_keys=True).replace("</", "<\\/") + "</script>",
        f"<script>{SCRIPT}</script>", "</body></html>", ""])
    path = folder / "index.html"
    write_atomic(path, page)
    return path


def missing_library() -> str | None:
    """Why the page cannot be drawn here (plotly, which draws its plots, does not import), else None."""
    try:
        import plotly.offline  # noqa: F401
    except ImportError as exc:
        return f"no report page: plotly does not import here ({exc}); report.md holds every table and plot"
    return None


def write_html(loaded: Sequence[Loaded], folder: Path, offers: Sequence = (), images: int = 500_000) -> Path:
    """index.html beside the report.md that report.document.write_report wrote in `folder` from `loaded` (with
    the same offers and image count, for its cost plot)."""
    import time

    from l40sbench.report.series import priced

    labels = machine_labels(loaded)
    generated = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    rows, _ = priced(loaded, labels, offers, images)
    return write_page(loaded, labels, folder, (folder / "report.md").read_text(), generated, rows, images, offers)
