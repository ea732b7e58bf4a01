"""The cells tables print: a number, a figure's 95 % interval, an offer's price, a p99 with the warning its
sample count needs, the input path a training figure used."""

from __future__ import annotations

from l40sbench.settings import DETECT_INPUT, STUDY_INPUT


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


def input_path(record: dict) -> str:
    """The input path a record's training figure used: a study's is not stated; a run's is in its bound block,
    else its config (classify's runs before --input were all cached); detect's is Model Garden's parser."""
    if record.get("source"):
        return STUDY_INPUT
    named = (record.get("bound") or {}).get("input_path")
    if named:
        return named
    if record.get("task") == "detect":
        return DETECT_INPUT
    return (record.get("config") or {}).get("input") or "cached"
