"""`infer`'s MLPerf LoadGen flags (--scenario and what goes with it, --mode, --audit) and the checked LoadConfig they
make."""

from __future__ import annotations

from l40sbench.cli.common import Renamed
from l40sbench.cli.values import finite, float_list, int_list, name_list
from l40sbench.errors import UserError


def add_scenario_flags(p) -> None:
    """The MLPerf LoadGen flags of `infer`."""
    from l40sbench.loadgen.config import AUDIT_ROUNDS, DURATION_S, SAMPLES_PER_QUERY, SCENARIOS

    g = p.add_argument_group(
        "load (MLPerf LoadGen)",
        "With --scenario, each runtime measured above then runs under MLPerf's LoadGen: the test images, decoded "
        "once and held in memory, are the query sample library (a detector's each resized to one square size, as "
        "MLPerf's RetinaNet library is; a YOLO or torchvision file's each at its own size, letterboxed or resized "
        "inside each query, as MLPerf's YOLO harness hands each sample's own image); a queue feeds --workers callers, each gathering up "
        "to --max-batch-size queued samples into one call. LoadGen's logs go to RUN_DIR/loadgen/<runtime>-<precision>/<test>/, "
        "and inference.scenarios in result.json gets one entry per test. Defaults are MLPerf's where it has them; "
        "LoadGen's generation hints come from each runtime's own probe (scaled to a detector's library by one pass "
        "over it).")
    g.add_argument("--scenario", type=name_list, metavar="LIST",
                   help=f"LoadGen scenarios to run, from {','.join(SCENARIOS)}, or all")
    g.add_argument("--duration", type=finite, default=DURATION_S, metavar="S",
                   help=f"minimum seconds of each test (LoadGen's min_duration; default {DURATION_S:g}; MLPerf "
                        "submissions run 600)")
    g.add_argument("--min-queries", type=int, metavar="N", help="minimum queries of each test (default: LoadGen's, 100)")
    g.add_argument("--batch", type=int_list, dest="batch", action=Renamed, new="--max-batch-size")
    g.add_argument("--max-batch-size", type=int_list, dest="batch", default=(1,), metavar="LIST",
                   help="most samples one call takes (dynamic batching); a list runs one test per batch "
                        "(default: 1; single-stream is always 1)")
    g.add_argument("--batch-timeout-ms", type=finite, default=0.0, metavar="T",
                   help="how long a call waits for more samples after its first (default: 0, what is queued)")
    g.add_argument("--workers", type=int, default=1, metavar="K",
                   help="callers running at once, each with its own copy of the model and cores/K threads "
                        "(tf and savedmodel share one model and TensorFlow's pool) (default: 1)")
    g.add_argument("--latency-bound-ms", type=finite, metavar="MS",
                   help="server: the bound 99%% of queries must meet (default: MLPerf's, 15 for classify "
                        "(ResNet-50), 100 for detect (RetinaNet))")
    g.add_argument("--target-qps", type=float_list, metavar="LIST",
                   help="server: Poisson arrival rates to offer, one test each (default: half the runtime's "
                        "one-image rate)")
    g.add_argument("--find-max-qps", action="store_true",
                   help="server: search the highest rate LoadGen calls VALID (short runs doubling or halving from "
                        "the one-image rate, then bisection, at most 10), then confirm it with one full run")
    g.add_argument("--samples-per-query", type=int, default=SAMPLES_PER_QUERY, metavar="N",
                   help=f"multi-stream: samples in each query (default: MLPerf's, {SAMPLES_PER_QUERY})")
    g.add_argument("--expected-qps", type=finite, metavar="QPS",
                   help="offline: the rate LoadGen sizes its one query for (default: 1.5x the one-image rate, twice "
                        "that with --max-batch-size or --workers above 1); too low ends early and INVALID")
    g.add_argument("--audit", type=name_list, metavar="LIST",
                   help="MLPerf's compliance tests to run and check beside each performance test, from TEST01 (the "
                        "responses of performance mode equal the accuracy run's; speed within 10%%), TEST04 (the same "
                        "sample every query is not over 10%% faster), TEST05 (LoadGen's alternate seeds: speed within "
                        "5%%), or all; the baseline and the audit run in turns, three times each; one PASS or FAIL line per "
                        "test, exit 1 on a FAIL; never recorded as results (default scenarios: single-stream,offline)")
    g.add_argument("--audit-rounds", type=int, default=AUDIT_ROUNDS, metavar="N",
                   help=f"with --audit: turns of the baseline and each test (default {AUDIT_ROUNDS}: A B A B A B); the "
                        "verdict is on the median of the paired ratios, so more rounds steady it on a host whose speed "
                        "moves")
    g.add_argument("--mode", choices=("performance", "accuracy", "both"), default="performance",
                   help="LoadGen's test mode: performance (default), accuracy (every sample once, LoadGen's accuracy "
                        "log scored and checked against each sample answered alone), or both, as MLPerf submissions run")


def load_config(args):
    """The --scenario flags as a checked loadgen LoadConfig, or None without --scenario."""
    from l40sbench.loadgen.config import AUDIT_SCENARIOS, AUDITS, SCENARIOS, LoadConfig

    defaults = LoadConfig(scenarios=())
    given = [flag for flag, value in (
        ("--min-queries", args.min_queries), ("--latency-bound-ms", args.latency_bound_ms),
        ("--target-qps", args.target_qps), ("--expected-qps", args.expected_qps), ("--find-max-qps", args.find_max_qps),
        ("--max-batch-size", args.batch != defaults.batches), ("--workers", args.workers != defaults.workers),
        ("--batch-timeout-ms", args.batch_timeout_ms != defaults.batch_timeout_ms),
        ("--duration", args.duration != defaults.duration_s),
        ("--samples-per-query", args.samples_per_query != defaults.samples_per_query),
        ("--mode", args.mode != "performance"), ("--audit-rounds", args.audit_rounds != defaults.audit_rounds)) if value]
    audits = tuple(AUDITS) if args.audit == ("all",) else tuple(name.upper() for name in args.audit or ())
    if args.audit is not None and args.scenario is None:
        args.scenario = AUDIT_SCENARIOS
    if args.scenario is None:
        if given:
            raise UserError(f"{given[0]} goes with --scenario")
        return None
    scenarios = tuple(SCENARIOS) if args.scenario == ("all",) else args.scenario
    config = LoadConfig(scenarios=scenarios, batches=args.batch, batch_timeout_ms=args.batch_timeout_ms,
                        workers=args.workers, duration_s=args.duration, min_queries=args.min_queries,
                        latency_bound_ms=args.latency_bound_ms, target_qps=args.target_qps or (),
                        samples_per_query=args.samples_per_query, expected_qps=args.expected_qps,
                        find_max_qps=args.find_max_qps,
                        modes=("performance", "accuracy") if args.mode == "both" else (args.mode,), audits=audits,
                        audit_rounds=args.audit_rounds)
    config.check()
    return config
