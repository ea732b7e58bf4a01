"""`cost`: time and money per N images from a result and a price per minute, or the offers that meet a target."""

from __future__ import annotations

from pathlib import Path

from l40sbench.cli.common import Renamed
from l40sbench.cli.values import finite
from l40sbench.errors import UserError


def add(subparsers) -> None:
    from l40sbench.cost import CURRENCY_SIGNS, UNIT_SECONDS

    p = subparsers.add_parser(
        "cost",
        help="time and money to process N images on an offer (the LeaderGPU study's cost table)",
        description=(
            "Time for N images = N / (images/s); cost = the billed time x the price. The billed time is "
            "rounded up to --billing and at least --minimum is charged; each row says which rule priced it. "
            "--reference leadergpu-2017 reprices the study's nine rows from its own throughputs and prices."
        ),
    )
    p.add_argument("--reference", choices=("leadergpu-2017",), help="reprice a study's cost table")
    p.add_argument("--images", type=int, default=500_000, help="images to process (default: 500000, the study's)")
    p.add_argument("--throughput", type=finite, metavar="IMAGES_PER_S", help="measured images/s")
    p.add_argument("--results", nargs="+", metavar="RESULT",
                   help="result files, run folders or references (l40s, leadergpu-2017) of classify, detect or "
                        "synthetic runs to take images/s from, one row per figure")
    p.add_argument("--catalog", type=Path, metavar="FILE",
                   help="offers to price at once, TOML ([[offer]] tables) or JSON ({\"offers\": [...]}), each with "
                        "name, price, and optionally devices, unit, currency, billing, minimum, machine; with --results "
                        "an offer prices the figures measured on as many devices (and on its machine, if named)")
    p.add_argument("--target", type=finite, metavar="FRACTION",
                   help="cost to accuracy (DAWNBench): with --results, the training time until the per-epoch test "
                        "metric first reached FRACTION (e.g. 0.9), times the price")
    p.add_argument("--price", type=finite, help="price per --per")
    p.add_argument("--per", choices=tuple(UNIT_SECONDS), default="minute", help="the price's time unit (default: minute)")
    p.add_argument("--currency", choices=tuple(CURRENCY_SIGNS), default="EUR", help="default: EUR")
    p.add_argument("--billing", choices=tuple(UNIT_SECONDS), default="second",
                   help="granularity the billed time is rounded up to (default: second)")
    p.add_argument("--minimum", type=finite, default=0.0, help="minimum charge per run (default: 0)")
    p.add_argument("--label", default="-", help="the model's name in the table, with --throughput (default: -)")
    p.add_argument("--model", dest="label", action=Renamed, new="--label")  # --model is a model file elsewhere
    p.add_argument("--offer", default="offer", help="offer name for the table (default: offer)")
    p.add_argument("--devices", type=int, default=1, help="devices the price buys (for the table; default: 1)")
    p.add_argument("--energy-price", type=finite, metavar="PER_KWH",
                   help="with --results: add the energy cost of the N images at this price per kWh (in --currency), "
                        "from the energy each run measured while it was timed (telemetry); a record without it "
                        "says why")
    p.set_defaults(func=run)


def _offers(args) -> list:
    """The offers to price: a --catalog, or the one the price flags describe."""
    from l40sbench import cost
    from l40sbench.report.inputs import read_catalog

    if (args.catalog is None) == (args.price is None):
        raise UserError("give --price (with --per, --currency, ...) or --catalog FILE, not both")
    if args.catalog is not None:
        return read_catalog(args.catalog)
    try:
        return [cost.Offer(args.offer, args.devices, args.price, args.per, args.currency, args.billing, args.minimum)]
    except ValueError as exc:
        raise UserError(str(exc)) from None


def _energy_cells(row, figure, price_per_kwh: float) -> list[str]:
    from l40sbench import cost

    if figure.j_per_image is None:
        return ["-", figure.energy_note or "energy unavailable"]
    kwh, amount = cost.energy_cost(row.images, figure.j_per_image, price_per_kwh)
    return [f"{kwh:.4g} kWh", cost.money(amount, row.offer.currency)]


def _print_priced(rows, checked=(), figures=(), energy_price: float | None = None) -> None:
    from l40sbench import cost
    from l40sbench.core.text import format_table
    from l40sbench.report.cells import offer_rate

    body = []
    for index, row in enumerate(rows):
        cells = [row.model, f"{row.offer.devices}x", row.offer.name, f"{row.images:,}", cost.duration(row.seconds),
                 offer_rate(row.offer),
                 cost.money(row.cost, row.offer.currency), row.rule]
        if checked:
            _, study_time, study_cost = checked[index]
            cells += [study_time, f"€{study_cost:.2f}"]
        if energy_price is not None:
            cells += _energy_cells(row, figures[index], energy_price)
        body.append(cells)
    headers = ["model", "devices", "offer", "images", "time", "price", "total cost", "priced by"]
    headers += ["study's time", "study's cost"] if checked else []
    headers += ["energy", f"energy cost at {energy_price:g}/kWh"] if energy_price is not None else []
    print(format_table(headers, body))
    comparisons = [c for c in cost.compare(rows) if c.times_as_fast >= 1]
    if comparisons:
        print()
    for c in comparisons:
        print(f"{c.model}: {c.offer} is {c.times_as_fast:.2f}x as fast as {c.other} "
              f"and {abs(c.percent_cheaper):.1f} % {'cheaper' if c.percent_cheaper >= 0 else 'dearer'}")


def run(args) -> int:
    from l40sbench import cost
    from l40sbench.report.inputs import load_all, machine

    if args.reference:
        if args.throughput is not None or args.price is not None or args.catalog or args.results or args.target:
            raise UserError("--reference reprices the study's own rows; drop --throughput, --results, --price, "
                            "--catalog and --target")
        checked = cost.reference_rows()
        _print_priced([row for row, _, _ in checked], checked)
        return 0
    if args.target is not None:
        if args.results is None or args.throughput is not None:
            raise UserError("--target reads the per-epoch test metric of --results files; give --results")
        if not 0 < args.target <= 1:
            raise UserError(f"--target is a fraction of 1 (0.9 for 90 %). Received: {args.target}")
        return _cost_to_target(args, load_all(args.results), _offers(args))
    if (args.throughput is None) == (args.results is None):
        raise UserError("give one of --throughput or --results (or --reference leadergpu-2017)")
    offers = _offers(args)
    if args.results is None:
        figures = [(cost.Figure(args.label, args.throughput, args.devices), "")]
    else:
        figures = [(figure, machine(item.record)) for item in load_all(args.results)
                   for figure in cost.throughputs(item.record)]
        if not figures:
            raise UserError(f"no images/s figure in {', '.join(args.results)}")
    if args.energy_price is not None and (args.results is None or args.energy_price < 0):
        raise UserError("--energy-price takes a price per kWh >= 0 and --results (the energy a run measured)")
    pairs = [(figure, offer) for figure, on in figures for offer in offers
             if args.catalog is None or args.results is None or offer.rents(on, figure.devices)]
    try:
        rows = [cost.price(figure.label, args.images, figure.images_per_second, offer) for figure, offer in pairs]
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if not rows:
        raise UserError(f"no offer of {args.catalog} rents as many devices as a figure of "
                        f"{', '.join(args.results)} was measured on (or its machine differs)")
    _print_priced(rows, figures=[figure for figure, _ in pairs], energy_price=args.energy_price)
    return 0


def _cost_to_target(args, loaded, offers) -> int:
    from l40sbench import cost
    from l40sbench.core.text import format_duration, format_table
    from l40sbench.report.inputs import machine

    body, without = [], []
    for item in loaded:
        reached = cost.time_to_target(item.record, args.target)
        if reached is None:
            off = (item.record.get("config") or {}).get("epoch_scoring") is False
            without.append(f"{item.origin} ({item.record.get('base')}"
                           + (", trained with --epoch-scoring off" if off else "") + ")")
            continue
        for offer in offers:
            if reached.seconds is None:
                cells = ["not reached", f"in {reached.epochs} epochs", "-", "-"]
            else:
                _, money, rule = cost.charge(reached.seconds, offer)
                cells = [f"epoch {reached.epoch}/{reached.epochs}", f"{format_duration(reached.seconds)} ({reached.clock})",
                         cost.money(money, offer.currency), rule]
            body.append([item.record.get("base"), machine(item.record), f"{reached.metric} >= {args.target:g}",
                         cells[0], cells[1], offer.name, *cells[2:]])
    if not body:
        raise UserError(f"no per-epoch test metric in {', '.join(without)} (classify runs record one unless "
                        f"trained with --epoch-scoring off; detect runs and the studies' tables do not)")
    print(format_table(["model", "machine", "target", "reached", "training time", "offer", "total cost",
                        "priced by"], body))
    if without:
        print(f"\nno per-epoch test metric, not priced: {', '.join(without)}")
    return 0
