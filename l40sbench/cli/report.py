"""`report`: report.md with the studies' tables and plots from result files, run folders and references."""

from __future__ import annotations

from pathlib import Path

from l40sbench.cli.common import Renamed, prepare_output_dir, run_id
from l40sbench.errors import UserError


def add(subparsers) -> None:
    p = subparsers.add_parser(
        "report",
        help="report.md with plots from results, run folders and the studies' published figures",
        description=(
            "Writes OUTPUT_DIR/report.md: the studies' tables for whatever the inputs hold (classification and "
            "detection training and inference; the synthetic GPU-count and batch-size tables; cost), one column "
            "group per machine so several machines sit side by side, each machine's environment block, and "
            "PNG plots: time per epoch (first against steady), the per-image latency distribution with "
            "p50/p90/p99, images/s against batch size and device count with ideal scaling, cost per N images. "
            "Inputs are result files, run folders, or the references l40s, leadergpu-2017 and mlperf-v6.0 (MLPerf "
            "Inference v6.0's YOLO11 rows for the L40S: a YOLO run of `infer --model` is set beside them, in "
            "MLPerf's terms, with what differs between the two)."
        ),
    )
    p.add_argument("inputs", nargs="+", metavar="RESULT", help="result file, run folder, or l40s / leadergpu-2017 / mlperf-v6.0")
    p.add_argument("--output-dir", type=Path, metavar="DIR",
                   help="folder for report.md and its PNGs (default: results/<UTC time>-report-<first input>/)")
    p.add_argument("--out", type=Path, dest="output_dir", action=Renamed, new="--output-dir")
    p.add_argument("--catalog", type=Path, metavar="FILE",
                   help="offers (TOML/JSON, as for cost --catalog) to price every images/s figure on")
    p.add_argument("--images", type=int, default=500_000, help="images the cost section prices (default: 500000)")
    p.add_argument("--html", action="store_true",
                   help="also OUTPUT_DIR/index.html: the machines side by side, the same tables sortable, each figure's "
                        "interval and n on hover, filters by words, task, model, machine and precision, interactive "
                        "plots with their intervals (cost to accuracy on --catalog's offers), a link to each record; "
                        "one file that opens offline (plotly inlined)")
    p.set_defaults(func=run)


def run(args) -> int:
    from l40sbench.report.inputs import load_all, read_catalog

    loaded = load_all(args.inputs)
    offers = read_catalog(args.catalog) if args.catalog else []
    if args.images < 1:
        raise UserError(f"--images must be >= 1. Received: {args.images}")
    out = args.output_dir or Path("results") / run_id("report", Path(args.inputs[0]).name or "inputs")
    prepare_output_dir(out)
    from l40sbench.report.document import write_report
    from l40sbench.report.page import missing_library

    path = write_report(loaded, out, offers=offers, images=args.images)
    pngs = sorted(p.name for p in out.glob("*.png"))
    print(f"report: {path} ({len(loaded)} record(s); plots: {', '.join(pngs) or 'none'})")
    if args.html:
        from l40sbench.report.page import write_html

        if missing_library():
            raise UserError(f"--html: {missing_library()}; {path} is written")
        page = write_html(loaded, out, offers, args.images)
        print(f"report: {page} ({page.stat().st_size / 2**20:.1f} MiB, opens offline)")
    return 0
