"""LoadGen's own mlperf.conf for the nearest MLPerf benchmark, and the suite's shorter settings over it.

MLPerf runs LoadGen with its mlperf.conf (seeds, minimum durations and query counts, latency targets, the
performance sample count) and lets a submitter's user.conf change what the rules allow. Every test here loads
LoadGen's own mlperf.conf (compiled into LoadGen) for resnet50 (classify), retinanet (detect) or yolo (an
Ultralytics export: config.mlperf_model), then puts the suite's settings over it as a user.conf would (a 60 s
default duration, the probe's generation hints, the library's size); each value changed is recorded beside
MLPerf's, and the seeds LoadGen used are recorded from its log.
"""

from __future__ import annotations

# The settings recorded where the suite's differ from mlperf.conf's; one scenario's own are kept (by prefix).
RECORDED = ("min_duration_ms", "min_query_count", "max_query_count", "performance_sample_count_override",
            "single_stream_expected_latency_ns", "single_stream_target_latency_percentile",
            "multi_stream_samples_per_query", "multi_stream_expected_latency_ns",
            "multi_stream_target_latency_percentile", "offline_expected_qps", "server_target_qps",
            "server_target_latency_ns", "server_target_latency_percentile")
PREFIXES = {"SingleStream": "single_stream_", "MultiStream": "multi_stream_", "Offline": "offline_",
            "Server": "server_"}
SEEDS = ("qsl_rng_seed", "sample_index_rng_seed", "schedule_rng_seed")
CONF = "LoadGen's mlperf.conf"


def official(scenario: str, model: str):
    """LoadGen's TestSettings for `scenario` (LoadGen's name) as mlperf.conf sets them for `model`."""
    import mlperf_loadgen as lg

    settings = lg.TestSettings()
    settings.scenario = getattr(lg.TestScenario, scenario)
    settings.FromConfig("", model, scenario, 0)  # conf_type 0: mlperf.conf alone, no user.conf
    return settings


def values(settings, scenario: str) -> dict:
    """The recorded settings that bear on `scenario`."""
    others = [prefix for name, prefix in PREFIXES.items() if name != scenario]
    return {name: getattr(settings, name) for name in RECORDED if not name.startswith(tuple(others))}


def block(mlperf, ours, scenario: str, model: str) -> dict:
    """The record's word on the settings: mlperf.conf's model, each value the suite changed (MLPerf's beside the
    suite's), the seeds mlperf.conf gives, and MLPerf's minimum duration."""
    theirs, mine = values(mlperf, scenario), values(ours, scenario)
    changed = {name: {"mlperf": _plain(theirs[name]), "ours": _plain(mine[name])} for name in theirs
               if _plain(theirs[name]) != _plain(mine[name])}
    seeds = {name: getattr(ours, ("test05_" if ours.test05 else "") + name) for name in SEEDS}
    return {"conf": f"{CONF}, {model}", "model": model, "mlperf": {name: _plain(v) for name, v in theirs.items()},
            "overrides": changed, "seeds": seeds,
            "test05": bool(ours.test05), "mlperf_min_duration_s": mlperf.min_duration_ms / 1000}


def _plain(value):
    return round(value, 6) if isinstance(value, float) else value


def shorter_note(duration_s: float | None, conf: dict | None) -> str:
    """'shorter than MLPerf's 600 s minimum' where the test's minimum duration is, else ''."""
    minimum = (conf or {}).get("mlperf_min_duration_s")
    if not minimum or duration_s is None or duration_s >= minimum:
        return ""
    return f"shorter than MLPerf's {minimum:g} s minimum"
