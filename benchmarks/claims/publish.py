"""`python -m benchmarks publish`: docs/PERFORMANCE.md's claims table, written from the newest record of each
registered claim (benchmarks/results/claims/<name>.json) between two marker lines; the prose around it stays as
it is written. A claim without a record, or with only a --quick or not-quiet one, is refused: no figure of the
table is typed by hand."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.claims import load_all
from benchmarks.claims.runner import REPO, RESULTS
from l40sbench.errors import UserError

PAGE = REPO / "docs" / "PERFORMANCE.md"
BEGIN = "<!-- claims: written by `python -m benchmarks publish` from benchmarks/results/claims/; not by hand -->"
END = "<!-- end of the claims written from records -->"
HEADER = ("| topic | claim | figure | 95 % interval | command | date | machine's rate (GFLOP/s) | commit | log entry |\n"
          "|---|---|---|---|---|---|---|---|---|")


def _value(value: float, unit: str) -> str:
    if unit == "s" and value < 1:
        return f"{1000 * value:.2f} ms"
    if unit == "s":
        return f"{value:.2f} s"
    return f"{value:.3f}" if unit == "x" else f"{value:.1f} {unit}"


def _row(record: dict, claim) -> str:
    figure = record["figures"][claim.headline]
    low, high = figure["interval"]
    interval = (f"{_value(low, figure['unit'])} - {_value(high, figure['unit'])} (n {figure['n']})"
                if low is not None else f"none (n {figure['n']})")
    matmul = record["peak"]["matmul"]
    rate = f"peak fp32 {matmul['float32']['gflops']:.1f}" + (
        f", bf16 {matmul['bfloat16']['gflops']:.1f}" if "bfloat16" in matmul else "")
    return (f"| {claim.topic} | {claim.sentence} | {claim.describe(record['figures'], strict=True)} | {interval} | "
            f"`{record['command']}` | "
            f"{record['date_utc']} | {rate} | {(record['env'].get('suite_commit') or '-')[:7]} | "
            f"\"{claim.log_entry}\" |")


def table(results: Path = RESULTS) -> str:
    """The table's lines, markers included.

    Raises:
      UserError: a claim without a record fit to publish.
    """
    rows = []
    claims = load_all()
    for claim in (claims.get(name) for name in claims.names()):
        path = results / f"{claim.name}.json"
        if not path.is_file():
            raise UserError(f"claim {claim.name} has no record: python -m benchmarks run {claim.name}")
        record = json.loads(path.read_text())
        if record["quick"] or record["quiet"]["verdict"] != "quiet":
            raise UserError(f"claim {claim.name}'s record is {'--quick' if record['quick'] else 'not quiet'}: "
                            f"measure it again, python -m benchmarks run {claim.name}")
        try:
            rows.append((claim.topic, claim.name, _row(record, claim)))
        except KeyError as missing:
            raise UserError(f"claim {claim.name}'s record has no figure {missing}, which its text names: measure it "
                            f"again, python -m benchmarks run {claim.name}") from None
    return "\n".join([BEGIN, HEADER, *(row for _, _, row in sorted(rows)), END])


def published(page: Path = PAGE) -> str:
    """The table as the page holds it now, markers included ('' where the page has none)."""
    text = page.read_text()
    if BEGIN not in text or END not in text:
        return ""
    return text[text.index(BEGIN):text.index(END) + len(END)]


def publish(page: Path = PAGE, results: Path = RESULTS) -> bool:
    """Writes the table into the page; True where that changed it."""
    text, new = page.read_text(), table(results)
    old = published(page)
    if not old:
        raise UserError(f"{page} holds no claims table's markers ({BEGIN})")
    page.write_text(text.replace(old, new))
    return old != new
