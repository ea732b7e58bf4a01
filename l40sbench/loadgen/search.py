"""--find-max-qps: the highest server rate LoadGen calls VALID, found as MLPerf submitters find it by hand.

Short runs bracket the rate (doubling from the probe's rate while they pass, halving while they
fail), then bisect the bracket until it is narrower than `resolution` or the step budget is spent;
the caller then confirms the rate found with one run of the full duration, which alone gets
LoadGen's full verdict. A short run passes when LoadGen finds its latency constraint met (the
bound at the 99th percentile); early stopping, which needs about 460 queries at that percentile,
is left to the confirming run, so a step at a low rate stays short.

Halving stops, with the answer 0, once a failing run kept the SUT busy less than a tenth of the time
(rate x median latency < 0.1): with so little queueing a lower rate cannot shorten the latency.
A model whose median single-image latency already exceeds the bound is not searched at all.

The confirming run (`confirm`) can fail two ways, and each has its own remedy: the bound missed at
its percentile means the rate is too high (try 90 % of it; a short step that passed near capacity
can overshoot by more than that, so up to CONFIRM_RUNS runs in all); the bound met but early stopping not
satisfied means too few queries for LoadGen to be sure (LoadGen names how many more it needs:
run the same rate again that much longer, as a submitter would).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

CONFIRM_RUNS = 4  # full-duration runs of the confirming step at most (a search stays bounded)

RunAt = Callable[[float], dict]  # rate -> LoadGen's figures for a short server run at that rate
RunConfirm = Callable[[float, int | None], dict]  # (rate, query floor) -> LoadGen's figures for a full run
_MORE_QUERIES = re.compile(r"Would need to run at least (\d+) more queries")
EXTRA_QUERY_MARGIN = 1.25  # LoadGen's count assumes every further query meets the bound; some will not
IDLE_BUSY_SHARE = 0.1  # a failing run this little busy is not failing for queueing
RESOLUTION = 1.05


def latency_met(figures: dict) -> bool:
    """A short run passes when LoadGen found the latency bound met at its percentile."""
    return bool(figures["constraints"].get("Performance constraints"))


def find_max_qps(run_at: RunAt, start_qps: float, *, max_steps: int, resolution: float = RESOLUTION) -> tuple[
        float, list[dict]]:
    """(highest rate whose short run met the bound, or 0.0; every step as {qps, latency_met, p99_ms, ...})."""
    steps: list[dict] = []

    def valid(rate: float) -> bool:
        figures = run_at(rate)
        steps.append({"qps": rate, "latency_met": latency_met(figures), "result": figures["result"],
                      "p50_ms": figures["latency_ms"].get("p50"), "p99_ms": figures["latency_ms"].get("p99"),
                      "completed_samples_per_second": figures.get("completed_samples_per_second"),
                      "reasons": figures["reasons"][:3]})
        return steps[-1]["latency_met"]

    low, high, rate = 0.0, None, start_qps
    while len(steps) < max_steps:  # bracket: [low passes, high fails]
        if valid(rate):
            low = rate
            if high is not None:
                break
            rate *= 2
        else:
            high = rate
            busy = rate * (steps[-1]["p50_ms"] or 0) / 1000
            if low or busy < IDLE_BUSY_SHARE:
                break
            rate /= 2
    while low and high and high / low > resolution and len(steps) < max_steps:
        middle = (low + high) / 2
        if valid(middle):
            low = middle
        else:
            high = middle
    return round(low, 3), steps


def more_queries_needed(figures: dict) -> int | None:
    """The further queries LoadGen's early stopping asked for, when that alone made the run INVALID."""
    constraints = figures["constraints"]
    if figures["result"] == "VALID" or constraints.get("Early stopping", True):
        return None
    if not all(ok for name, ok in constraints.items() if name != "Early stopping"):
        return None
    match = _MORE_QUERIES.search(" ".join(figures["early_stopping"].get("lines", ())))
    return int(match.group(1)) if match else None


def confirm(run: RunConfirm, rate: float, min_queries: int) -> tuple[float, dict, list[dict]]:
    """(the rate LoadGen called VALID at full duration or 0.0, the last run's figures, every try).

    First at `rate` with `min_queries`; if only early stopping failed, again at the same rate with the
    queries LoadGen asked for (and a margin); if the bound itself was missed, again at 90 % of the rate;
    CONFIRM_RUNS runs at most.
    """
    tries: list[dict] = []
    queries: int | None = min_queries
    while True:
        figures = run(rate, queries)
        tries.append({"qps": rate, "min_queries": queries, "result": figures["result"],
                      "queries": figures.get("queries"), "reasons": figures["reasons"][:4]})
        if figures["result"] == "VALID" or len(tries) == CONFIRM_RUNS:
            break
        more = more_queries_needed(figures)
        if more:
            queries = math.ceil(((figures.get("queries") or queries or 0) + more) * EXTRA_QUERY_MARGIN)
        else:
            rate *= 0.9
    return (rate if figures["result"] == "VALID" else 0.0), figures, tries
