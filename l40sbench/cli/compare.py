"""`compare`: two sets of results side by side, exit 1 when the new one regressed."""

from __future__ import annotations

from l40sbench.cli.common import figure
from l40sbench.cli.values import finite
from l40sbench.errors import UserError

EXIT_NOT_COMPARABLE = 3  # every figure shown, none judged: different kinds of device or GPU models


def add(subparsers) -> None:
    p = subparsers.add_parser(
        "compare",
        help="two results side by side; exit 1 when the new one got slower or less accurate",
        description=(
            "Matches the rows of BASELINE and NEW on task, model, batch, devices, precision and image size, "
            "prints every timing, images/s and accuracy figure of each pair with its ratio new/baseline and, "
            "where both records keep the samples, the ratio's 95 % interval (each side at its effective "
            "sample size: latencies and epochs are serial), and lists the rows "
            "without a partner. Every figure is judged as measured: a time or rate counts as worse only when "
            "its whole interval lies beyond --tolerance and Holm's method over all the figures judged on "
            "samples keeps it (else 'within noise'); a figure without samples (references, older records) is "
            "judged on its two values. Another machine is named only on evidence beyond noise: separately "
            "measured peaks of the row's precision that differ, confirmed by the runs' own matmul bursts "
            "beyond the device's stability limit; a worse figure is then 'explained by the machine' only if, "
            "divided by the machine's factor, it falls back within the tolerance. Each row is judged on the "
            "device it ran on (a runtime on the host's CPU by the CPU's evidence, never a GPU's); a "
            "precision's peak only against the same precision's; and a peak explains only a figure whose work "
            "ran at 25 % of it or more (docs/trust.md). Bursts that differ while "
            "the peaks do not mean a busier host: said, and the raw verdicts stand. Rows from a run the "
            "stability guard called unstable are marked. Exit codes: 0 no regression; 1 a figure got "
            "significantly worse beyond the tolerance (and the machine does not explain it), an accuracy fell "
            "beyond --accuracy-tolerance, or a configuration that ran now fails; 2 bad input; 3 not "
            "comparable: some rows ran on different kinds of device or GPU models (an L40S and an H100, a MIG "
            "instance and its board): their figures and statuses are shown, not judged, and no row judged "
            "elsewhere (on the same kind of device on both sides) regressed. Each side is a result file, a run folder or a "
            "reference (l40s, leadergpu-2017, mlperf-v6.0)."
        ),
    )
    p.add_argument("baseline", metavar="BASELINE", help="result file, run folder or reference name")
    p.add_argument("new", metavar="NEW", help="result file, run folder or reference name")
    p.add_argument("--tolerance", type=finite, default=10.0, metavar="PERCENT",
                   help="how much slower a time may get before it counts as a regression (default: 10)")
    p.add_argument("--accuracy-tolerance", type=finite, default=2.0, metavar="POINTS",
                   help="how many points accuracy or mAP may fall (2 = 0.02) (default: 2)")
    p.add_argument("--raw", action="store_true",
                   help="explain nothing by another machine: every worse figure counts (default: off)")
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
                                 args.tolerance, args.accuracy_tolerance, raw=args.raw)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    for text in result.machines:
        print(text)
    if result.rows:
        print()
        print(format_table(("row", "figure", "baseline", "new", "new/baseline", "95 % interval", "verdict"),
                           [(r.line, r.figure, figure(r.baseline), figure(r.new), _ratio(r),
                             "-" if r.interval is None else f"{r.interval[0]:.3f}-{r.interval[1]:.3f}", r.verdict)
                            for r in result.rows]))
        print(f"\nrule: {compare.RULE}")
        unstable = sorted({r.unstable for r in result.rows if r.unstable})
        if unstable:
            print(f"note: rows marked [unstable] rest on a record the stability guard called unstable "
                  f"({'; '.join(unstable)}): their verdicts hold only as far as that run does")
    for title, labels in (("only in the baseline", result.only_baseline), ("only in the new", result.only_new)):
        if labels:
            print(f"\nrows {title} (no partner):")
            for label in labels:
                print(f"  {label}")
    if not result.rows:
        raise UserError(f"no row of {args.baseline} matches a row of {args.new}: nothing to compare")
    print()
    print(closing_line(result))
    if result.regressions:
        print(f"REGRESSION: {len(result.regressions)} figure(s) got worse beyond the tolerance: "
              + "; ".join(f"{r.line} {r.figure}" for r in result.regressions))
        return 1
    if result.not_comparable:
        judged = sum(r.basis != compare.SHOWN for r in result.rows)
        print("NOT COMPARABLE: rows ran on different kinds of device or GPU models; their figures are shown, "
              "not judged (exit 3)" + (f"; the {judged} figure(s) judged ran on the same kind of device on both "
                                       "sides" if judged else ""))
        return EXIT_NOT_COMPARABLE
    noise = sum(r.verdict.startswith("within noise") for r in result.rows)
    print(f"no regression: none significantly worse beyond {args.tolerance:g} % (accuracy "
          f"{args.accuracy_tolerance:g} points)" + (f"; {noise} within noise" if noise else ""))
    return 0


def closing_line(result) -> str:
    """What was judged: figures judged as measured, explained by the machine, and shown only (with why)."""
    from l40sbench.report.compare import EXPLAINED, JUDGED

    counts = result.counts()
    shown = [f"{count} {why}" for why, count in counts.items() if why not in (JUDGED, EXPLAINED)]
    return (f"judged: {counts[JUDGED] + counts[EXPLAINED]} figure(s) as measured, {counts[EXPLAINED]} of them "
            "explained by the machine" + (f"; {', '.join(shown)}" if shown else "; none shown only"))


def _ratio(row) -> str:
    if row.ratio is None:
        return "-"
    return f"{row.ratio:.3f}"
