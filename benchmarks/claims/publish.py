"""`python -m benchmarks publish`: docs/PERFORMANCE.md's claims table, written from the records of each
registered claim (benchmarks/results/claims/<device>/<name>.json, one row a claim and device) between two marker
lines; the prose around it stays as it is written, and each row's words are claims.toml's now.

A record is refused (one line, naming the claim and device, and the command that measures it again) where it is
--quick or not quiet, of another schema, of another version of its claim (its body's source or sizes changed
since: claims.Claim.version), or measured on a tree with uncommitted changes (its commit ends `-dirty`), which
`--allow-dirty` publishes with the row marked "uncommitted code". Every claim has a `cpu` record (the home
device of the suite's claims); a GPU's records publish beside the CPU's, where there are any. No figure of the
table is typed by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.claims import SCHEMA, load_all
from benchmarks.claims.runner import REPO, RESULTS, dirty, record_path
from l40sbench.errors import UserError

PAGE = REPO / "docs" / "PERFORMANCE.md"
BEGIN = "<!-- claims: written by `python -m benchmarks publish` from benchmarks/results/claims/; not by hand -->"
END = "<!-- end of the claims written from records -->"
HEADER = ("| topic | claim | device | figure | 95 % interval | command | date | machine's rate (GFLOP/s) | commit | "
          "log entry |\n|---|---|---|---|---|---|---|---|---|---|")
HOME = "cpu"  # the device every claim has a record on
UNCOMMITTED = "uncommitted code"


def _value(value: float, unit: str) -> str:
    if unit == "s" and value < 1:
        return f"{1000 * value:.2f} ms"
    if unit == "s":
        return f"{value:.2f} s"
    return f"{value:.3f}" if unit == "x" else f"{value:.1f} {unit}"


def _commit(record: dict) -> str:
    commit = record["env"].get("suite_commit")
    return f"{(commit or '-')[:7]}, {UNCOMMITTED}" if dirty(commit) else commit[:7]


def _row(record: dict, claim) -> str:
    figure = record["figures"][claim.headline]
    low, high = figure["interval"]
    interval = (f"{_value(low, figure['unit'])} - {_value(high, figure['unit'])} (n {figure['n']})"
                if low is not None else f"none (n {figure['n']})")
    matmul = record["peak"]["matmul"]
    rate = f"peak fp32 {matmul['float32']['gflops']:.1f}" + (
        f", bf16 {matmul['bfloat16']['gflops']:.1f}" if "bfloat16" in matmul else "")
    return (f"| {claim.topic} | {claim.sentence} | {record['device']} | {claim.describe(record['figures'], strict=True)} "
            f"| {interval} | `{record['command']}` | {record['date_utc']} | {rate} | {_commit(record)} | "
            f"\"{claim.log_entry}\" |")


def refusal(record: dict, claim, allow_dirty: bool = False) -> str | None:
    """Why `record` may not be published for `claim` (None where it may)."""
    if record.get("schema") != SCHEMA:
        return f"is of schema {record.get('schema', 1)}, not {SCHEMA} (an older runner's)"
    if record["quick"] or record["quiet"]["verdict"] != "quiet":
        return "is --quick" if record["quick"] else "is not quiet"
    if record.get("claim_version") != claim.version(claim.sizes):
        return (f"is of another version of the claim (its body's source or sizes changed since "
                f"{(record['env'].get('suite_commit') or 'its commit')[:7]})")
    if dirty(record["env"].get("suite_commit")) and not allow_dirty:
        return (f"was measured on {UNCOMMITTED} ({record['env'].get('suite_commit') or 'no commit'}; "
                "--allow-dirty publishes it marked so)")
    return None


def _records(results: Path, name: str) -> list[dict]:
    """The claim's records, the home device's first (empty where it has none there)."""
    home = record_path(results, HOME, name)
    if not home.is_file():
        return []
    others = sorted(path for path in results.glob(f"*/{name}.json") if path != home)
    return [json.loads(path.read_text()) for path in (home, *others)]


def table(results: Path = RESULTS, allow_dirty: bool = False) -> str:
    """The table's lines, markers included.

    Raises:
      UserError: a claim without a record on the home device, or a record refused (see refusal).
    """
    rows = []
    claims = load_all()
    for claim in (claims.get(name) for name in claims.names()):
        records = _records(results, claim.name)
        if not records:
            raise UserError(f"claim {claim.name} has no {HOME} record: python -m benchmarks run {claim.name}")
        for record in records:
            why = refusal(record, claim, allow_dirty)
            if why:
                raise UserError(f"claim {claim.name}'s {record.get('device', HOME)} record {why}: measure it "
                                f"again, python -m benchmarks run {claim.name}")
            try:
                rows.append(((claim.topic, claim.name, record["device"] != HOME, record["device"]),
                             _row(record, claim)))
            except KeyError as missing:
                raise UserError(f"claim {claim.name}'s record has no figure {missing}, which its text names: "
                                f"measure it again, python -m benchmarks run {claim.name}") from None
    return "\n".join([BEGIN, HEADER, *(row for _, row in sorted(rows)), END])


def published(page: Path = PAGE) -> str:
    """The table as the page holds it now, markers included ('' where the page has none)."""
    text = page.read_text()
    if BEGIN not in text or END not in text:
        return ""
    return text[text.index(BEGIN):text.index(END) + len(END)]


def publish(page: Path = PAGE, results: Path = RESULTS, allow_dirty: bool = False) -> bool:
    """Writes the table into the page; True where that changed it."""
    text, new = page.read_text(), table(results, allow_dirty)
    old = published(page)
    if not old:
        raise UserError(f"{page} holds no claims table's markers ({BEGIN})")
    page.write_text(text.replace(old, new))
    return old != new
