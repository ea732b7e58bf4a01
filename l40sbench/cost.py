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

from l40sbench.core.validate import require_one_of

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
      machine: for a catalog, the machine the offer rents, matched (case-blind, as a part) against a
        result's machine label; empty: any machine.

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
    machine: str = ""

    def __post_init__(self):
        price_ok = isinstance(self.price, (int, float)) and not isinstance(self.price, bool)
        if not (price_ok and math.isfinite(self.price) and self.price > 0):
            raise ValueError(f"price must be a positive number. Received: price={self.price!r}")
        require_one_of(self, "per", tuple(UNIT_SECONDS))
        require_one_of(self, "billing", tuple(UNIT_SECONDS))
        require_one_of(self, "currency", tuple(CURRENCY_SIGNS))
        if not (isinstance(self.minimum, (int, float)) and math.isfinite(self.minimum) and self.minimum >= 0):
            raise ValueError(f"minimum must be >= 0. Received: minimum={self.minimum!r}")
        if not (isinstance(self.devices, int) and self.devices >= 1):
            raise ValueError(f"devices must be a whole number >= 1. Received: devices={self.devices!r}")

    def rents(self, machine: str, devices: int | None = None) -> bool:
        """Whether this offer rents `machine` (the offer's machine a case-blind part of its label, or none
        named) with `devices` devices (a figure measured on that many; any count where None)."""
        return (devices is None or devices == self.devices) and self.machine.lower() in machine.lower()


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
    billed, cost, rule = charge(seconds, offer)
    return Priced(model, offer, images, images_per_second, seconds, billed, cost, rule)


def charge(seconds: float, offer: Offer) -> tuple[float, float, str]:
    """(billed seconds, cost, the rule that priced it) for `seconds` of use of `offer`."""
    billed = billed_seconds(seconds, offer.billing)
    cost = billed / UNIT_SECONDS[offer.per] * offer.price
    rule = f"billed per {offer.billing} (time rounded up)"
    if cost < offer.minimum:
        cost, rule = offer.minimum, f"minimum charge {money(offer.minimum, offer.currency)}"
    return billed, cost, rule


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


@dataclass(frozen=True)
class Figure:
    """An images/s figure of a result, with the devices it was measured on."""

    label: str
    images_per_second: float
    devices: int = 1
    j_per_image: float | None = None  # the inference phase's measured energy per image, where the record has it
    energy_note: str = ""  # why there is none


def energy_cost(images: int, j_per_image: float, price_per_kwh: float) -> tuple[float, float]:
    """(kWh, cost) of `images` at a measured energy per image and a price per kWh.

    >>> energy_cost(3_600_000, 1.0, 0.25)
    (1.0, 0.25)
    """
    kwh = images * j_per_image / 3.6e6
    return kwh, kwh * price_per_kwh


def _inference_energy(record: dict) -> tuple[float | None, str]:
    telemetry = record.get("telemetry") or {}
    if not telemetry:
        return None, "no telemetry in this record"
    if telemetry.get("energy") == "unavailable":
        return None, f"energy unavailable: {telemetry.get('reason')}"
    phase = (telemetry.get("phases") or {}).get("inference") or {}
    if phase.get("j_per_image") is None:
        return None, f"energy unavailable: {phase.get('reason', 'no inference phase measured')}"
    return phase["j_per_image"], ""


def throughputs(record: dict) -> list[Figure]:
    """Each figure of a result record a price can apply to.

    A synthetic sweep gives one per configuration that ran (status ok); a classify
    or detect run gives its per-image inference rate (one device).
    """
    if record.get("task") == "synthetic":
        return [Figure(f"{r['model']} {r['mode']} b{r['per_device_batch']} x{r['devices']} {r['device_kind']}",
                       r["images_per_second"], r["devices"]) for r in record.get("rows", ())
                if r.get("status") == "ok" and r.get("images_per_second")]
    rate = (record.get("inference") or {}).get("images_per_second")
    energy, note = _inference_energy(record)
    return [Figure(f"{record.get('base')} {record.get('task')} inference", rate, 1, energy, note)] if rate else []


CATALOG_KEYS = {"name": "name", "devices": "devices", "price": "price", "unit": "per", "currency": "currency",
                "billing": "billing", "minimum": "minimum", "machine": "machine"}


def offers_from(catalog) -> list[Offer]:
    """Offers from a parsed catalog: a list of tables, or {"offer": [...]} (TOML's [[offer]]) / {"offers": [...]}.

    Each table: name and price (required); devices (1), unit (minute), currency (EUR),
    billing (second), minimum (0), machine ("").

    Raises:
      ValueError: no offers, an unknown or missing key, or a bad value (named with its offer).
    """
    entries = catalog.get("offer", catalog.get("offers")) if isinstance(catalog, dict) else catalog
    if not isinstance(entries, list) or not entries:
        raise ValueError("a catalog lists its offers as [[offer]] tables (TOML) or an \"offers\" list (JSON)")
    offers = []
    for number, entry in enumerate(entries, start=1):
        where = f"offer {number}" + (f" ({entry.get('name')})" if isinstance(entry, dict) and entry.get("name") else "")
        if not isinstance(entry, dict):
            raise ValueError(f"{where} is not a table of name, price, ...")
        unknown = sorted(set(entry) - set(CATALOG_KEYS))
        if unknown:
            raise ValueError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(CATALOG_KEYS)})")
        missing = [k for k in ("name", "price") if k not in entry]
        if missing:
            raise ValueError(f"{where}: missing {missing[0]!r}")
        try:
            offers.append(Offer(**{"devices": 1, **{CATALOG_KEYS[k]: v for k, v in entry.items()}}))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where}: {str(exc).replace('per must be', 'unit must be')}") from None
        if any(o.name == offers[-1].name for o in offers[:-1]):  # comparisons name offers: one name, one offer
            raise ValueError(f"{where}: the name {offers[-1].name!r} is taken by an earlier offer")
    return offers


@dataclass(frozen=True)
class TargetTime:
    """When a run's per-epoch test metric first reached a target (DAWNBench's time to accuracy).

    `epoch` (1-based) and `seconds` (training time through that epoch) are None when the target
    was not reached in the `epochs` the run trained. `seconds` is wall time (what a rented
    machine bills: epochs, per-epoch scoring and callbacks); `clock` says so, or that an older
    record without wall times gave the sum of its epoch clocks instead.
    """

    metric: str
    target: float
    epochs: int
    epoch: int | None
    seconds: float | None
    clock: str = "wall"


def time_to_target(record: dict, target: float) -> TargetTime | None:
    """None when the record has no per-epoch test metric (the studies' records, detect runs)."""
    train = record.get("train") or {}
    scores, times = train.get("test_metric_per_epoch") or (), train.get("epoch_seconds") or ()
    if not scores or len(scores) != len(times):
        return None
    walls = train.get("wall_seconds_at_epoch") or ()
    clock = "wall" if len(walls) == len(scores) else "epoch clocks (a record without wall times)"
    for epoch, score in enumerate(scores, start=1):
        if score is not None and score >= target:
            seconds = walls[epoch - 1] if clock == "wall" else sum(times[:epoch])
            return TargetTime(train["test_metric"], target, len(scores), epoch, float(seconds), clock)
    return TargetTime(train["test_metric"], target, len(scores), None, None, clock)


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
