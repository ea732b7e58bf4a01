"""`compare`: two sets of results side by side, exit 1 when the new one regressed."""

from __future__ import annotations

from l40sbench.cli.common import figure, finite
from l40sbench.errors import UserError


def add(subparsers) -> None:
    p = subparsers.add_parser(
        "compare",
        help="two results side by side; exit 1 when the new one got slower or less accurate",
        description=(
            "Matches the rows of BASELINE and NEW on task, model, batch, devices, precision and image size, "
            "prints every timing, images/s and accuracy figure of each pair with its ratio new/baseline, and "
            "lists the rows without a partner. Exit 1 when a time grew (or images/s fell) beyond --tolerance "
            "or an accuracy fell beyond --accuracy-tolerance, or a configuration that ran now fails; 0 "
            "otherwise; 2 on bad input. Each side is a result file, a run folder or a reference "
            "(l40s, leadergpu-2017)."
        ),
    )
    p.add_argument("baseline", metavar="BASELINE", help="result file, run folder or reference name")
    p.add_argument("new", metavar="NEW", help="result file, run folder or reference name")
    p.add_argument("--tolerance", type=finite, default=10.0, metavar="PERCENT",
                   help="how much slower a time may get before it counts as a regression (default: 10)")
    p.add_argument("--accuracy-tolerance", type=finite, default=2.0, metavar="POINTS",
                   help="how many points accuracy or mAP may fall (2 = 0.02) (default: 2)")
    p.set_defaults(func=run)


def run(args) -> int:
    from l40sbench.core.text import format_table
    from l40sbench.core.utilisation import rates as machine_rates
    from l40sbench.report import compare
    from l40sbench.report.inputs import load_all, machine

    sides = {"baseline": load_all([args.baseline]), "new": load_all([args.new])}  # both readable before any output
    for name, item in (("baseline", args.baseline), ("new", args.new)):
        machines = ", ".join(dict.fromkeys(machine(loaded.record) for loaded in sides[name]))
        rates = [rate for loaded in sides[name] if (rate := machine_rates(loaded.record.get("env") or {})[0])]
        calibration = f"; float32 matmul peak {rates[0]:.1f} GFLOP/s" if rates else ""
        print(f"{name}: {item} ({machines}{calibration})")
    try:
        result = compare.compare([x.record for x in sides["baseline"]], [x.record for x in sides["new"]],
                                 args.tolerance, args.accuracy_tolerance)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if result.rows:
        print()
        print(format_table(("row", "figure", "baseline", "new", "new/baseline", "verdict"),
                           [(r.line, r.figure, figure(r.baseline), figure(r.new),
                             "-" if r.ratio is None else f"{r.ratio:.3f}", r.verdict) for r in result.rows]))
    for title, labels in (("only in the baseline", result.only_baseline), ("only in the new", result.only_new)):
        if labels:
            print(f"\nrows {title} (no partner):")
            for label in labels:
                print(f"  {label}")
    if not result.rows:
        raise UserError(f"no row of {args.baseline} matches a row of {args.new}: nothing to compare")
    print()
    if result.regressions:
        print(f"REGRESSION: {len(result.regressions)} figure(s) got worse beyond the tolerance: "
              + "; ".join(f"{r.line} {r.figure}" for r in result.regressions))
        return 1
    print(f"no regression: {len(result.rows)} figure(s) within {args.tolerance:g} % "
          f"(accuracy {args.accuracy_tolerance:g} points)")
    return 0
