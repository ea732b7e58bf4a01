"""The cells tables print: a number, a figure's 95 % interval, an offer's price, a p99 with the warning its
sample count needs."""

from __future__ import annotations


def number(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def spread(block: dict | None) -> str:
    """"± 4.2 % (n 9)": the 95 % interval of a figure's mean as a share of it, from its record block."""
    from l40sbench.core.intervals import half_width_percent

    if not block or block.get("mean") is None:
        return "-"
    half = half_width_percent(block)
    return f"n {block['n']}, no interval" if half is None else f"± {half:.1f} % (n {block['n']})"


def offer_rate(offer) -> str:
    """An offer's price as tables print it: "€0.11/minute"."""
    from l40sbench.cost import CURRENCY_SIGNS

    return f"{CURRENCY_SIGNS[offer.currency]}{offer.price:g}/{offer.per}"


def p99(inference: dict) -> str:
    """The p99, marked * where fewer than 100 samples make it one of the top few (SMALL_P99_NOTE)."""
    from l40sbench.core.intervals import SMALL_P99

    value = number(inference.get("p99_ms"))
    count = (inference.get("interval_ms") or {}).get("n")
    return f"{value}*" if count is not None and count < SMALL_P99 and value != "-" else value


SMALL_P99_NOTE = "* p99 of fewer than 100 samples: one of the few slowest calls, not a stable tail estimate"
