"""The types of the flags that take values: comma-separated whole numbers, names and numbers, each named once,
and finite numbers; argparse turns their errors into one line (cli.common.Parser)."""

from __future__ import annotations

import argparse
import math


def int_list(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated whole numbers, got {text!r}") from None
    if not values:
        raise argparse.ArgumentTypeError("expected at least one number")
    return distinct(values)



def name_list(text: str) -> tuple[str, ...]:
    values = tuple(v.strip() for v in text.split(",") if v.strip())
    if not values:
        raise argparse.ArgumentTypeError(f"expected at least one comma-separated name, got {text!r}")
    return distinct(values)



def distinct(values: tuple) -> tuple:
    """A list flag names each value once: a repeat would measure the same configuration twice."""
    repeated = sorted({str(v) for v in values if values.count(v) > 1})
    if repeated:
        raise argparse.ArgumentTypeError(f"{', '.join(repeated)} given more than once")
    return values



def finite(text: str) -> float:
    """A float flag: a number, not nan or inf (an infinite limit or tolerance would never act)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value



def float_list(text: str) -> tuple[float, ...]:
    return distinct(tuple(finite(v) for v in text.split(",") if v.strip()) or (finite(text),))
