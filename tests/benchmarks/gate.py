"""The CI speed gate: verdicts on the figures tests/benchmarks/ put in pytest-benchmark's JSON.

pytest-benchmark times and writes the JSON (`--benchmark-json`); this adds
what it lacks: figures that hold across machines of one kind. Each gated
benchmark records, in `extra_info["gates"]`, figures of three kinds
(tests/benchmarks/conftest.py):

- a same-run ratio with fixed bounds (`max`, `min`): fails outside them;
- a normalised time (`baseline: true`): the product's time over a reference
  timed in the same rounds; fails when it is more than THRESHOLD times the
  figure in tests/benchmarks/baseline.json, or less than 1 / THRESHOLD times it (a
  product that got much faster than its reference skips work, or the
  reference slowed). docs/performance-log.md, "The CI speed gate" has the measured
  run-to-run spread behind the threshold;
- an exact structural figure (`exact: true`): a model's parameter count or
  forward FLOPs; fails unless it equals its baseline. The suite's own are
  computed once, in the merge tier (tests/test_structure_figures.py), not here.

A figure the baseline holds that the results lack fails too: a benchmark that
was removed, renamed or deselected with -k does not pass by its absence.

A timed figure (a ratio or a normalised time) that fails is measured once more
before it counts: `--retry-list` names the benchmarks to run again, and
`--retry AGAIN.json` judges the figures of those that failed in RESULTS by both
runs: a figure fails only if both tries do (a neighbour's moment on a shared
host slows one try, a regression both). Exact figures are never retried. Every
line says how far its figure sits from its bound.

Usage:
  python tests/benchmarks/gate.py RESULTS.json [--retry AGAIN.json]  # verdicts; exit 1 on a regression
  python tests/benchmarks/gate.py --retry-list RESULTS.json          # the benchmarks whose timed figures failed
  python tests/benchmarks/gate.py --update RESULTS.json [...]        # new baseline: per figure the median of the runs
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

BASELINE = Path(__file__).resolve().parent / "baseline.json"
SCHEMA = "l40sbench.bench-baseline/1"
# A normalised figure fails past this multiple of its baseline: above the widest
# spread measured between runs (AVX2 cap included), below the 1.5x it must catch.
THRESHOLD = 1.30


@dataclass(frozen=True)
class Verdict:
    name: str
    ok: bool
    line: str


def gated_figures(results: dict) -> dict[str, dict]:
    """{figure name: its gate entry} over every benchmark of a pytest-benchmark JSON."""
    figures = {}
    for bench in results.get("benchmarks", []):
        for name, entry in (bench.get("extra_info") or {}).get("gates", {}).items():
            figures[name] = {**entry, "benchmark": bench["name"]}
    return figures


def calibration_rates(results: dict) -> list[float]:
    """The calibration convolution's GFLOP/s that benchmarks recorded beside their figures."""
    return [b["extra_info"]["calibration_conv_gflops"] for b in results.get("benchmarks", [])
            if "calibration_conv_gflops" in b.get("extra_info", {})]


def _same(value: float, expected: float) -> bool:
    """Exact for counts; floats (profiler GFLOP) to the last few bits of a double."""
    return value == expected or abs(value - expected) <= 1e-12 * max(abs(expected), 1.0)


def margin(value: float, bound: float, upper: bool) -> str:
    """How far `value` sits inside (or past) `bound`, as a share of the bound."""
    room = (bound - value if upper else value - bound) / abs(bound) if bound else 0.0
    return f"{100 * abs(room):.1f} % {'inside' if room >= 0 else 'past'} the bound"


def _bounded(name: str, entry: dict) -> list[Verdict]:
    value, out = entry["value"], []
    for key, ok_when, word in (("max", lambda v, b: v <= b, "<="), ("min", lambda v, b: v >= b, ">=")):
        if entry.get(key) is not None:
            ok = ok_when(value, entry[key])
            out.append(Verdict(name, ok, f"{'ok  ' if ok else 'FAIL'}  {name} = {value:.4g} "
                                         f"(bound {word} {entry[key]:.4g}, {margin(value, entry[key], key == 'max')}: "
                                         f"{entry['what']})"))
    return out


def verdicts(results: dict, baseline: dict) -> list[Verdict]:
    """One verdict per bound, per baseline comparison and per exact figure, in figure-name order;
    then one failure per baseline figure the results lack."""
    threshold = baseline.get("threshold", THRESHOLD)
    known, exact = baseline.get("figures", {}), baseline.get("exact", {})
    figures = gated_figures(results)
    out = []
    for name, entry in sorted(figures.items()):
        value = entry["value"]
        if entry.get("exact"):
            if name not in exact:
                out.append(Verdict(name, False, f"FAIL  {name} = {value:.10g}: no baseline for it in {BASELINE.name}"))
            else:
                ok = _same(value, exact[name])
                out.append(Verdict(name, ok, f"{'ok  ' if ok else 'FAIL'}  {name} = {value:.10g}"
                                             + ("" if ok else f", the baseline holds {exact[name]:.10g}: "
                                                f"{entry['what']} changed (if deliberate, update the baseline)")))
            continue
        out += _bounded(name, entry)
        if entry.get("baseline"):
            if name not in known:
                out.append(Verdict(name, False, f"FAIL  {name} = {value:.4g}: no baseline for it in "
                                                 f"{BASELINE.name} (update it: see docs/PERFORMANCE.md)"))
                continue
            times = value / known[name]
            ok = 1 / threshold <= times <= threshold
            nearer = margin(times, threshold, True) if times >= 1 else margin(times, 1 / threshold, False)
            out.append(Verdict(name, ok, f"{'ok  ' if ok else 'FAIL'}  {name} = {value:.4g}, {times:.2f}x the "
                                         f"baseline {known[name]:.4g} (fails outside {1 / threshold:.2f}x.."
                                         f"{threshold:.2f}x, {nearer}: {entry['what']})"))
    # The exact structure figures are tests/test_structure_figures.py's to require (it builds every model once, in
    # the merge tier); a timed figure the results lack fails here.
    for name in sorted(known.keys() - figures.keys()):
        out.append(Verdict(name, False, f"FAIL  {name}: in {BASELINE.name} but missing from the results "
                                         "(a benchmark removed, renamed, failed or deselected)"))
    return out


def timed_failures(results: dict, baseline: dict) -> list[str]:
    """The benchmarks (pytest node ids) with a timed figure that failed: the ones to measure once more."""
    failed = {v.name for v in verdicts(results, baseline) if not v.ok}
    return sorted({bench["fullname"] for bench in results.get("benchmarks", [])
                   for name, entry in (bench.get("extra_info") or {}).get("gates", {}).items()
                   if name in failed and not entry.get("exact")})


def judged_twice(results: dict, again: dict, baseline: dict) -> list[Verdict]:
    """The verdicts of `results`, where a timed figure that failed there is judged again on `again` (the retry of
    its benchmark): it fails only if it fails in both, and its line gives both tries."""
    first = verdicts(results, baseline)
    retried = {}
    for verdict in verdicts(again, baseline):
        retried.setdefault(verdict.name, []).append(verdict)
    exact = {name for name, entry in gated_figures(results).items() if entry.get("exact")}
    out = []
    for verdict in first:
        second = retried.get(verdict.name)
        if verdict.ok or verdict.name in exact or not second:
            out.append(verdict)
            continue
        ok = all(v.ok for v in second)
        word = "ok  " if ok else "FAIL"
        out.append(Verdict(verdict.name, ok, f"{word}  retried: {' / '.join(v.line[6:] for v in second)}; "
                                             f"first try: {verdict.line[6:]}"))
    return out


def new_baseline(runs: list[dict], threshold: float = THRESHOLD) -> dict:
    """Per baseline figure, the median over the runs; the machine and pytest-benchmark's own machine_info."""
    values: dict[str, list[float]] = {}
    exact: dict[str, set] = {}
    for results in runs:
        for name, entry in gated_figures(results).items():
            if entry.get("baseline"):
                values.setdefault(name, []).append(entry["value"])
            if entry.get("exact"):
                exact.setdefault(name, set()).add(entry["value"])
    differing = sorted(name for name, found in exact.items() if len(found) > 1)
    if differing:
        raise ValueError(f"exact figures differ between the runs: {', '.join(differing)}")
    machine = runs[-1].get("machine_info", {})
    cpu = machine.get("cpu", {})
    conv_rates = [rate for results in runs for rate in calibration_rates(results)]
    return {
        "schema": SCHEMA,
        "threshold": threshold,
        "figures": {name: statistics.median(v) for name, v in sorted(values.items())},
        "exact": {name: found.pop() for name, found in sorted(exact.items())},
        "spread": {name: [min(v), max(v)] for name, v in sorted(values.items())},
        "runs": len(runs),
        "machine": {
            "cpu": cpu.get("brand_raw"), "family": cpu.get("family"), "model": cpu.get("model"),
            "cores": cpu.get("count"), "avx512": "avx512f" in cpu.get("flags", []),
            "python": machine.get("python_version"),
            "calibration_conv_gflops": statistics.median(conv_rates) if conv_rates else None,
        },
        "commit": runs[-1].get("commit_info", {}).get("id"),
        "datetime": runs[-1].get("datetime"),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="CI speed gate over pytest-benchmark JSON files.")
    parser.add_argument("results", nargs="+", type=Path, help="pytest-benchmark --benchmark-json file(s)")
    parser.add_argument("--update", action="store_true", help=f"write {BASELINE.name} from these runs instead")
    parser.add_argument("--baseline", type=Path, default=BASELINE)
    parser.add_argument("--retry-list", action="store_true",
                        help="print the benchmarks whose timed figures failed (one node id a line), to run again")
    parser.add_argument("--retry", type=Path, metavar="AGAIN.json",
                        help="the failed benchmarks run once more: a timed figure fails only if both tries do")
    args = parser.parse_args(argv)
    try:
        runs = [json.loads(path.read_text()) for path in args.results]
    except (OSError, ValueError) as exc:
        print(f"gate: error: cannot read results: {exc}", file=sys.stderr)
        return 2
    if args.update:
        try:
            baseline = new_baseline(runs)
        except ValueError as exc:
            print(f"gate: error: {exc}", file=sys.stderr)
            return 2
        if not baseline["exact"] and args.baseline.is_file():  # the structure figures: tests.structure_figures'
            baseline["exact"] = json.loads(args.baseline.read_text()).get("exact", {})
        args.baseline.write_text(json.dumps(baseline, indent=2, sort_keys=True) + "\n")
        print(f"gate: wrote {args.baseline} from {len(runs)} run(s): "
              + ", ".join(f"{k} {v:.4g}" for k, v in baseline["figures"].items())
              + f"; {len(baseline['exact'])} exact structural figures")
        return 0
    if len(runs) != 1:
        print("gate: error: give one results file to judge (several only with --update)", file=sys.stderr)
        return 2
    baseline = json.loads(args.baseline.read_text()) if args.baseline.is_file() else {}
    if args.retry_list:
        for name in timed_failures(runs[0], baseline):
            print(name)
        return 0
    if args.retry is not None:
        try:
            again = json.loads(args.retry.read_text())
        except (OSError, ValueError) as exc:
            print(f"gate: error: cannot read the retry's results: {exc}", file=sys.stderr)
            return 2
        found = judged_twice(runs[0], again, baseline)
    else:
        found = verdicts(runs[0], baseline)
    for verdict in found:
        print(verdict.line)
    failed = [v.name for v in found if not v.ok]
    if not found:
        print("gate: error: the results hold no gated figure (were the benchmarks disabled?)", file=sys.stderr)
        return 1
    if failed:
        print(f"gate: FAILED on {', '.join(sorted(set(failed)))}")
    print(f"gate: {len(found) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
