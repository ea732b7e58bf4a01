"""What processing N images costs on an offer: pure arithmetic, no I/O, no framework import.

The LeaderGPU study's rule: time for N images = N / (images/s); cost = the
billed time in the price's unit x the price. Billing rounds the time up to
the offer's granularity (a second, a minute, an hour) and applies its minimum
charge; each row says which rule priced it.

Money is shown rounded half-up to the cent, times to the second. Repricing
the study's nine 500,000-image rows this way agrees with every time it prints
to 1 s and every cost to 0.01 EUR, but the study itself is not consistent
against the exact figures: it cuts five costs to the cent below (Google's
three, AWS Inception V3 3.8768 -> 3.87, LeaderGPU ResNet-50 0.9652 -> 0.96)
and one time to the second below (AWS ResNet-152, 55m 55.7s -> 55m 55s), and
rounds the others (LeaderGPU Inception V3 1.337 -> 1.34, the other times).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

from l40sbench.core.validate import require_at_least, require_one_of

UNIT_SECONDS = {"second": 1, "minute": 60, "hour": 3600}
CURRENCY_SIGNS = {"EUR": "€", "USD": "$", "GBP": "£", "JPY": "¥", "CHF": "CHF "}


@dataclass(frozen=True)
class Offer:
    """A rentable machine and how it is billed.

    Attributes:
      name: the offer as the user names it ("8x GTX 1080 LeaderGPU").
      devices: GPUs (or devices) the price buys.
      price: money per `per`.
      per: "second", "minute" or "hour".
      currency: ISO code, one of CURRENCY_SIGNS.
      billing: granularity the billed time is rounded up to ("second", "minute", "hour").
      minimum: the least one run is charged, in `currency`.

    Raises:
      ValueError: a price that is not a positive finite number, an unknown unit or currency.
    """

    name: str
    devices: int
    price: float
    per: str = "minute"
    currency: str = "EUR"
    billing: str = "second"
    minimum: float = 0.0

    def __post_init__(self):
        if not (isinstance(self.price, (int, float)) and math.isfinite(self.price) and self.price > 0):
            raise ValueError(f"price must be a positive number. Received: price={self.price!r}")
        require_one_of(self, "per", tuple(UNIT_SECONDS))
        require_one_of(self, "billing", tuple(UNIT_SECONDS))
        require_one_of(self, "currency", tuple(CURRENCY_SIGNS))
        if not (math.isfinite(self.minimum) and self.minimum >= 0):
            raise ValueError(f"minimum must be >= 0. Received: minimum={self.minimum!r}")
        require_at_least(self, ("devices",), 1)


@dataclass(frozen=True)
class Priced:
    """One row of the study's cost table."""

    model: str
    offer: Offer
    images: int
    images_per_second: float
    seconds: float
    billed_seconds: float
    cost: float
    rule: str


def billed_seconds(seconds: float, billing: str) -> float:
    """The time rounded up to the billing granularity (a second, a minute, an hour)."""
    step = UNIT_SECONDS[billing]
    return math.ceil(seconds / step - 1e-9) * step


def price(model: str, images: int, images_per_second: float, offer: Offer) -> Priced:
    """Time and money for `images` images at `images_per_second` on `offer`.

    >>> round(price("Inception V3", 500_000, 685.59, Offer("LeaderGPU", 8, 0.11)).cost, 4)
    1.3383
    """
    if not (math.isfinite(images_per_second) and images_per_second > 0):
        raise ValueError(f"throughput must be a positive number of images/s. Received: {images_per_second!r}")
    if images < 1:
        raise ValueError(f"images must be >= 1. Received: images={images}")
    seconds = images / images_per_second
    billed = billed_seconds(seconds, offer.billing)
    cost = billed / UNIT_SECONDS[offer.per] * offer.price
    rule = f"billed per {offer.billing} (time rounded up)"
    if cost < offer.minimum:
        cost, rule = offer.minimum, f"minimum charge {money(offer.minimum, offer.currency)}"
    return Priced(model, offer, images, images_per_second, seconds, billed, cost, rule)


def money(amount: float, currency: str) -> str:
    """Rounded half-up to the cent: money(1.337, "EUR") == '€1.34'."""
    cents = Decimal(repr(amount)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    return f"{CURRENCY_SIGNS[currency]}{cents}"


def duration(seconds: float) -> str:
    """The study's style, to the nearest second: '36m 43s', '1h 02m 05s'."""
    total = int(Decimal(repr(seconds)).quantize(Decimal("1"), rounding=ROUND_HALF_UP))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h {minutes:02d}m {secs:02d}s" if hours else f"{minutes}m {secs:02d}s"


@dataclass(frozen=True)
class Comparison:
    """How one offer stands against another for the same model (the study's "plus rapide", "plus rentable")."""

    model: str
    offer: str
    other: str
    times_as_fast: float
    percent_cheaper: float


def compare(rows: list[Priced]) -> list[Comparison]:
    """Each offer against every other one priced for the same model."""
    out = []
    for row in rows:
        for other in rows:
            if other is not row and other.model == row.model:
                out.append(Comparison(row.model, row.offer.name, other.offer.name,
                                      other.seconds / row.seconds, 100 * (1 - row.cost / other.cost)))
    return out


def throughputs(record: dict) -> list[tuple[str, float]]:
    """(label, images/s) for each figure of a result record a price can apply to.

    A synthetic sweep gives one per configuration that ran (status ok); a classify
    or detect run gives its per-image inference rate.
    """
    if record.get("task") == "synthetic":
        return [(f"{r['model']} {r['mode']} b{r['per_device_batch']} x{r['devices']} {r['device_kind']}",
                 r["images_per_second"]) for r in record.get("rows", ())
                if r.get("status") == "ok" and r.get("images_per_second")]
    rate = (record.get("inference") or {}).get("images_per_second")
    return [(f"{record.get('base')} {record.get('task')} inference", rate)] if rate else []


# The study's cost table (leadergpu_tf_cnn_benchmarks_fr.txt, last table): its 8-GPU throughputs
# from its own GPU-count tables, its per-minute prices (Google's derived from an hourly price),
# and what it printed, to check the repricing against.
LEADERGPU_2017_OFFERS = {
    "Google cloud": Offer("8x K80 Google cloud", 8, 0.0825),
    "AWS": Offer("8x K80 AWS", 8, 0.107),
    "LeaderGPU": Offer("8x GTX 1080 LeaderGPU", 8, 0.11),
}
LEADERGPU_2017 = (
    # model, offer, images/s at 8 GPUs, printed time, printed cost
    ("Inception V3", "Google cloud", 227.0, "36m 43s", 3.02),
    ("Inception V3", "AWS", 230.0, "36m 14s", 3.87),
    ("Inception V3", "LeaderGPU", 685.59, "12m 09s", 1.34),
    ("ResNet-50", "Google cloud", 387.0, "21m 32s", 1.77),
    ("ResNet-50", "AWS", 384.0, "21m 42s", 2.32),
    ("ResNet-50", "LeaderGPU", 949.72, "8m 46s", 0.96),
    ("ResNet-152", "Google cloud", 148.0, "56m 18s", 4.64),
    ("ResNet-152", "AWS", 149.0, "55m 55s", 5.98),
    ("ResNet-152", "LeaderGPU", 369.02, "22m 35s", 2.48),
)
REFERENCE_IMAGES = 500_000


def reference_rows() -> list[tuple[Priced, str, float]]:
    """The study's nine rows repriced: (our row, the study's printed time, its printed cost)."""
    return [(price(model, REFERENCE_IMAGES, rate, LEADERGPU_2017_OFFERS[offer]), time, cost)
            for model, offer, rate, time, cost in LEADERGPU_2017]
