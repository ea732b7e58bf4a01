"""report.md's text as the page's HTML: headings, paragraphs, fenced blocks, its PNGs inlined, each `##` section
tagged with its task, and its tables sortable, each column told the machine it holds, each figure its interval
and sample count on hover (from the record, not the rounded text), and an unstable run's cells marked with the
guard's reasons."""

from __future__ import annotations

import base64
import html
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from l40sbench.report.inputs import Loaded, row_name

IMAGE = re.compile(r"^!\[(?P<alt>[^\]]*)\]\((?P<src>[^)]+)\)$")
INLINE = [(re.compile(r"\*\*(.+?)\*\*"), r"<b>\1</b>"), (re.compile(r"`([^`]+)`"), r"<code>\1</code>")]
LEGEND = re.compile(r"\*\*\[(?P<letter>[^\]]+)\]\*\* (?P<label>.+?)(?= · \*\*\[|$)")
LETTER = re.compile(r" \[(?P<letter>[^\]]+)\]$")
SECTION_TASKS = {"Classification": "classify", "Object detection": "detect", "Synthetic throughput": "synthetic"}
# side-by-side columns whose figure has an interval in the record: (block, its interval, unit)
INTERVALS = {"steady (2..N)": ("train", "steady_epoch_interval", "s"), "mean ms": ("inference", "interval_ms", "ms")}
NO_INTERVAL = {True: "a published figure: no samples, so no interval",
               False: "no interval in this record (a run from before intervals were recorded)"}


def record_link(origin: str, folder: Path) -> str:
    """The result file a record was read from, relative to the page's folder; '' for a reference name."""
    path = Path(origin)
    target = path / "result.json" if path.is_dir() else path
    return os.path.relpath(target.resolve(), folder.resolve()) if target.is_file() else ""


@dataclass(frozen=True)
class Records:
    """The records behind the tables, by (machine label, row name); their result files' links, by origin; and
    the machine labels."""

    by_row: dict[tuple[str, str], Loaded]
    links: dict[str, str]
    labels: tuple[str, ...]

    @classmethod
    def of(cls, loaded: Sequence[Loaded], labels: Sequence[str], links: dict[str, str]) -> Records:
        return cls({(label, row_name(item.record)): item for item, label in zip(loaded, labels)
                    if item.record.get("base")}, links, tuple(dict.fromkeys(labels)))


def inline(text: str) -> str:
    out = html.escape(text, quote=False)
    for pattern, replacement in INLINE:
        out = pattern.sub(replacement, out)
    return out


def _cells(line: str) -> list[str]:
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def interval_title(record: dict, block: dict | None, unit: str) -> str:
    """The hover text of a figure: its mean, 95 % interval, n, method and lag-1 autocorrelation."""
    if not block or block.get("mean") is None:
        return NO_INTERVAL[bool(record.get("source"))]
    ci = block.get("mean_ci95")
    text = f"mean {block['mean']:.4g} {unit}, n {block['n']}"
    if ci is None:
        return f"{text}: too few samples for an interval"
    text += f", 95 % interval {ci[0]:.4g} to {ci[1]:.4g} {unit} ({block.get('method')}"
    r1 = block.get("lag1_autocorrelation")
    return text + (f"; lag-1 autocorrelation {r1:.2f})" if r1 is not None else ")")


def _columns(headers: Sequence[str], letters: dict[str, str], labels: Sequence[str]) -> list[tuple[str, str]]:
    """(figure name, machine label or '') per column: "mean ms [A]" is machine A's mean ms; a column headed by a
    machine's label holds that machine's figures."""
    out = []
    for header in headers:
        letter = LETTER.search(header)
        if letter and letter["letter"] in letters:
            out.append((header[:letter.start()], letters[letter["letter"]]))
        else:
            out.append((header, header if header in labels else ""))
    return out


def _cell(row: list[str], i: int, columns: list[tuple[str, str]], records: Records) -> str:
    from l40sbench.core.stability import unstable

    text, (name, machine) = row[i], columns[i]
    classes, titles = [], []
    if text.upper().startswith("UNSTABLE"):
        classes.append("unstable")
    elif "WORSE" in text:
        classes.append("worse")
    item = records.by_row.get((machine, row[0])) if machine and text != "-" else None
    record = item.record if item is not None else None
    if record is not None and unstable(record):
        classes.append("unstable")
        titles.append("unstable run: " + "; ".join(record["stability"].get("reasons") or ()))
    if record is not None and name in INTERVALS:
        part, key, unit = INTERVALS[name]
        titles.append(interval_title(record, (record.get(part) or {}).get(key), unit))
    elif record is None and i + 1 < len(row) and "± 95 %" in columns[i + 1][0] and columns[i + 1][1] == machine:
        titles.append(f"95 % interval of the mean: {row[i + 1]}")
    attributes = (f' class="{" ".join(dict.fromkeys(classes))}"' if classes else "") + (
        f' title="{html.escape(" · ".join(titles))}"' if titles else "")
    link = records.links.get(item.origin) if item is not None else None
    shown = f'<a href="{html.escape(link)}">{inline(text)}</a>' if link else inline(text)
    return f"<td{attributes}>{shown}</td>"


def table(lines: list[str], records: Records, letters: dict[str, str], task: str) -> str:
    headers, body = _cells(lines[0]), [_cells(line) for line in lines[2:]]
    columns = _columns(headers, letters, records.labels)
    head = "".join((f'<th data-machine="{html.escape(machine)}">' if machine else "<th>") + f"{inline(h)}</th>"
                   for h, (_, machine) in zip(headers, columns))
    rows = "\n".join("<tr>" + "".join(_cell(row, i, columns, records) for i in range(len(row))) + "</tr>"
                     for row in body)
    return (f'<table class="sortable" data-task="{task}"><thead><tr>{head}</tr></thead><tbody>\n{rows}\n'
            "</tbody></table>")


def body_from_markdown(markdown: str, folder: Path, records: Records) -> str:
    """report.md as HTML: each `##` section a <section> with its task, tables as above, fenced blocks,
    paragraphs, and its PNGs inlined."""
    out, lines, i, letters, task, open_section = [], markdown.splitlines(), 0, {}, "", False
    while i < len(lines):
        line = lines[i]
        if line.startswith("|"):
            block = []
            while i < len(lines) and lines[i].startswith("|"):
                block.append(lines[i])
                i += 1
            out.append(table(block, records, letters, task))
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
            if level == 2:
                task = next((t for title, t in SECTION_TASKS.items() if heading.group(2).startswith(title)), "")
                out.append(("</section>\n" if open_section else "") + f'<section data-task="{task}">')
                open_section = True
            out.append(f"<h{level}>{inline(heading.group(2))}</h{level}>")
        elif image and (folder / image["src"]).is_file():
            data = base64.b64encode((folder / image["src"]).read_bytes()).decode()
            out.append(f'<img alt="{html.escape(image["alt"])}" src="data:image/png;base64,{data}">')
        elif line.strip():
            if line.startswith("Machines: **["):
                letters = {m["letter"]: m["label"] for m in LEGEND.finditer(line.removeprefix("Machines: "))}
            out.append(f"<p>{inline(line)}</p>")
        i += 1
    return "\n".join(out + (["</section>"] if open_section else []))
