"""The suite's speed claims as one registry: benchmarks/claims/claims.toml names each claim, its topic and the
sentence it supports in docs/PERFORMANCE.md, its performance-log.md entry, the function that measures it
(benchmarks/claims/<module>.py), the figure whose interval the table shows, the table's text as a template of
the figures, and its default and --quick sizes.

`python -m benchmarks list | run NAME... | run --all [--quick] | publish` (benchmarks/__main__.py) runs each
claim in a process of its own and writes its record under benchmarks/results/claims/ (benchmarks/claims/runner.py);
`publish` writes PERFORMANCE.md's table from the newest records, each row's words from claims.toml now and its
figures from the record (benchmarks/claims/publish.py). A body takes its sizes and returns {figure name:
figures.figure(...)}, and under "labels" any words the text names (a model's name). Shared pieces (a figure with its interval, turns of A and B, a command run as a user runs it, a function
in a fresh interpreter) are in benchmarks/claims/figures.py.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import json
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from l40sbench.core.registry import Registry

TABLE = Path(__file__).with_name("claims.toml")
SCHEMA = 2  # a claim record's layout (1: before `schema`, `claim_version` and `device`); publish takes this one


def body_version(module_text: str, function: str, sizes: dict) -> str | None:
    """A claim's version, as asv keeps a benchmark's: the body function's source (as its module's text holds
    it) and the sizes it ran at, hashed; None where the module defines no such function."""
    tree = ast.parse(module_text)
    found = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == function]
    if not found:
        return None
    source = ast.get_source_segment(module_text, found[-1])
    return hashlib.sha256(f"{source}\n{json.dumps(sizes, sort_keys=True)}".encode()).hexdigest()[:16]


class Shown:
    """One figure as a text's template reads it: `{name:.2f}` its value, and `.n`, `.ms`, `.percent`,
    `.minutes`, `.lowest`, `.highest`, `.total` (of its samples)."""

    def __init__(self, block: dict):
        self.value, self.n, self.samples = block["value"], block["n"], block.get("samples") or [block["value"]]

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    def _scaled(self, factor: float) -> Shown:
        return Shown({"value": factor * self.value, "n": self.n})

    @property
    def ms(self) -> Shown:
        return self._scaled(1000)

    @property
    def percent(self) -> Shown:
        return self._scaled(100)

    @property
    def minutes(self) -> Shown:
        return self._scaled(1 / 60)

    @property
    def lowest(self) -> float:
        return min(self.samples)

    @property
    def highest(self) -> float:
        return max(self.samples)

    @property
    def total(self) -> float:
        return sum(self.samples)


class _Absent:
    """A figure a --quick run does not measure: shown as '-'."""

    def __format__(self, spec: str) -> str:
        return "-"

    def __getattr__(self, name: str) -> _Absent:
        return self


class _Fields(dict):
    def __missing__(self, key: str) -> _Absent:
        return _Absent()


@dataclass(frozen=True)
class Claim:
    """One claim of docs/PERFORMANCE.md, as claims.toml declares it.

    Attributes:
      topic, sentence, log_entry: the table's topic, claim and performance-log.md entry.
      body: "module:function" in benchmarks/claims/: sizes -> {figure name: figure}; runs in the claim's own
        process.
      headline: the figure whose 95 % interval the table shows.
      text: the table's figure cell, a str.format template of the figures (see Shown) and the labels.
      sizes, quick: the default sizes and --quick's (seconds to minutes each, to find a claim whose code broke).
      limit_s: the seconds its process may take; past them it is ended with its children, said in one line, and
        the other claims run (the longest measured today, loadgen, takes about 18 minutes).
    """

    name: str
    topic: str
    sentence: str
    log_entry: str
    body: str
    headline: str
    text: str
    sizes: dict = field(default_factory=dict)
    quick: dict = field(default_factory=dict)
    limit_s: float = 3600.0

    def function(self) -> Callable[[dict], dict]:
        """The body (its module imported now)."""
        module, function = self.body.split(":")
        return getattr(importlib.import_module(f"benchmarks.claims.{module}"), function)

    def version(self, sizes: dict) -> str | None:
        """This claim's version at `sizes` (body_version of its body as the tree holds it now)."""
        module, function = self.body.split(":")
        return body_version((TABLE.parent / f"{module}.py").read_text(), function, sizes)

    def measure(self, sizes: dict) -> dict:
        """The body's figures at `sizes`."""
        return self.function()(sizes)

    def describe(self, figures: dict, strict: bool = False) -> str:
        """The table's figure cell for these figures; a figure the text names and the figures lack shows as '-'
        (a --quick run measures less), or, `strict`, raises KeyError."""
        fields = (dict if strict else _Fields)(figures.get("labels", {}))
        fields.update({name: Shown(block) for name, block in figures.items() if name != "labels"})
        return self.text.format_map(fields)


def load_all() -> Registry[Claim]:
    """Every claim claims.toml declares (no body imported until it runs)."""
    claims: Registry[Claim] = Registry("claim")
    for name, declared in tomllib.loads(TABLE.read_text()).items():
        claims.register(name, Claim(name, **declared))
    return claims
