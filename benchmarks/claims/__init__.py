"""The suite's speed claims as one registry: each a function that measures and returns its figures, with the
sentence it supports, its topic and log entry in docs/PERFORMANCE.md, and its default and --quick sizes.

`python -m benchmarks list | run NAME... | run --all [--quick] | publish` (benchmarks/__main__.py) runs each
claim in a process of its own and writes its record under benchmarks/results/claims/ (benchmarks/claims/runner.py);
`publish` writes PERFORMANCE.md's table from the newest records (benchmarks/claims/publish.py).

A claim's body takes its sizes and returns {figure name: figures.figure(...)}; `text` turns those into the
table's cell. Shared pieces (a figure with its interval, turns of A and B, a fresh process timed) are in
benchmarks/claims/figures.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from l40sbench.core.registry import Registry


@dataclass(frozen=True)
class Claim:
    """One claim of docs/PERFORMANCE.md.

    Attributes:
      topic, sentence, log_entry: the table's topic, claim and performance-log.md entry.
      body: sizes -> {figure name: figure}, and under "labels" any words the text names (a model's name);
        runs in the claim's own process.
      text: figures -> the table's figure cell.
      sizes, quick: the default sizes and --quick's (seconds each, to find a claim whose code broke).
      headline: the figure whose 95 % interval the table shows.
    """

    name: str
    topic: str
    sentence: str
    log_entry: str
    body: Callable[[dict], dict]
    text: Callable[[dict], str]
    headline: str
    sizes: dict = field(default_factory=dict)
    quick: dict = field(default_factory=dict)


CLAIMS: Registry[Claim] = Registry("claim")
MODULES = ("backends", "classify", "detect", "devices", "install", "machine", "runs", "runtimes", "synthetic", "telemetry",
           "timing")


def claim(name: str, topic: str, sentence: str, log_entry: str, text: Callable[[dict], str], headline: str,
          sizes: dict | None = None, quick: dict | None = None):
    """Registers the decorated body as the claim `name`."""

    def register(body):
        CLAIMS.register(name, Claim(name, topic, sentence, log_entry, body, text, headline, sizes or {},
                                    quick or {}))
        return body

    return register


def load_all() -> Registry[Claim]:
    """The registry with every claim module imported (each registers its claims)."""
    import importlib

    for module in MODULES:
        importlib.import_module(f"benchmarks.claims.{module}")

    return CLAIMS
