"""`infer --scenario`: each measured runtime under LoadGen in a child process, one ScenarioResult per test.

The runtime rows measured just before (export and one-image probe) give each child its model file and
LoadGen its generation hints. A runtime without figures (not installed, failed) is skipped, saying so.
Each runtime's finished tests are kept even when a later one crashes or the user stops the run.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable
from pathlib import Path

from l40sbench.core import child
from l40sbench.core.env import host_threads as threads
from l40sbench.core.records import write_atomic
from l40sbench.core.results import RuntimeResult, ScenarioResult
from l40sbench.core.text import Log
from l40sbench.errors import UserError
from l40sbench.loadgen import audits, mlperf_conf, rules
from l40sbench.loadgen.audit_runs import (
    audit_entry,
    audit_said,
    check_audits,
    remove_audit_configs,
    working_directory_audit,
)
from l40sbench.loadgen.child import PROGRESS_FILE, RESULT_FILE
from l40sbench.loadgen.config import LoadConfig, Probe, jobs
from l40sbench.runtimes.child import write_images
from l40sbench.runtimes.measure import Workload, crash_reason
from l40sbench.runtimes.responses import ACCURACY_LOG, Answers, read_accuracy_log

FOLDER = "loadgen"
PROGRESS_EVERY_S = 10.0
CHILD_TIMEOUT_S = 6 * 3600.0


def entry_key(entry: dict) -> tuple:
    """What makes two entries the same test: runtime, requested precision and the settings a user chose."""
    settings = entry["settings"]
    chosen = tuple(settings.get(name) for name in ("batch", "batch_timeout_ms", "workers", "latency_bound_ms",
                                                   "target_qps", "samples_per_query", "find_max_qps"))
    return entry["runtime"], entry.get("precision_requested"), entry["scenario"], chosen, entry.get("mode",
                                                                                                   "performance")


def scenario_utilisation(samples_per_second: float | None, record: dict, precision: str) -> dict:
    """Achieved GFLOP/s (forward GFLOP per image x samples/s) over the peak of the precision that ran."""
    from l40sbench.core.utilisation import peak_for, utilisation

    per_image = (record.get("utilisation") or {}).get("forward_gflops_per_image")
    run_precision = {"fp32": "fp32", "bf16": "mixed_bfloat16", "fp16": "mixed_float16"}.get(precision, "fp32")
    name, peak_gflops = peak_for((record.get("env") or {}).get("peak"), run_precision)
    achieved = per_image * samples_per_second if per_image and samples_per_second else None
    return {"peak": name, "peak_gflops": peak_gflops, "forward_gflops_per_image": per_image,
            "achieved_gflops": achieved, "share": utilisation(achieved, peak_gflops)}


# What an accuracy run's score must equal: the same runtime's answers to the library's samples, each called alone
# before LoadGen started (the probe of this library), exactly for a classifier's top-1 (the same
# outputs give the same argmax); within 0.001 mAP for a detector (COCO's evaluation of the same boxes).
ACCURACY_FIGURE = {"classify": ("test_accuracy", 0.0), "detect": ("map_50_95", 0.001)}
# A given model (infer --model) whose outputs are not the data's classes: its agreement with the reference, or
# for one score per image, the largest gap from the reference's outputs (within float32 rounding of the probe's).
GIVEN_MODEL_FIGURES = (("agreement_with_tf", 0.0), ("max_abs_diff_vs_tf", 1e-4))


def score_accuracy_log(row: RuntimeResult, figures: dict, task: str, score: Callable[[list], dict]) -> tuple[dict, str]:
    """The accuracy run's entry block (LoadGen's accuracy log, MLPerf's responses, scored as MLPerf's scripts score
    them, beside the same runtime's answer to each library sample called alone before LoadGen started: the probe of
    this library) and why it fails, or ''."""
    log_path = Path(figures["log_dir"]) / ACCURACY_LOG
    name, tolerance = ACCURACY_FIGURE[task]
    for fallback, bound in GIVEN_MODEL_FIGURES:
        if task == "classify" and (row.accuracy or {}).get(name) is None:
            name, tolerance = fallback, bound
    block = {"log": str(log_path), "figure": name, "probe": None}
    try:
        direct = [bytes.fromhex(data) for data in json.loads(Path(figures["direct_answers"]).read_text())]
        block["probe"] = score(direct).get(name)
        samples, logged = read_accuracy_log(log_path)
        scored = score(samples)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return block, f"LoadGen's accuracy log or the library's direct answers unreadable: {exc}"
    value, probe = scored.get(name), block["probe"]
    matches = value is not None and probe is not None and abs(value - probe) <= tolerance
    block = {**block, "samples_logged": logged, "value": value, "tolerance": tolerance, "matches_probe": matches,
             "scored": scored}
    why = "" if matches else (f"accuracy from LoadGen's log {name} {value} differs from {probe}, each sample answered alone "
                              f"(tolerance {tolerance:g})")
    return block, why


def to_entry(row: RuntimeResult, figures: dict, record: dict,
             score: Callable[[list], dict] | None = None) -> ScenarioResult:
    """One test's figures (the child's scenario.json) as the record's entry; an accuracy run's log scored
    with `score` (the workload's, as the runtime rows were)."""
    job = figures["job"]
    mode, accuracy = job.get("mode", "performance"), None
    if mode == "accuracy":
        accuracy, why = score_accuracy_log(row, figures, record["task"], score) if score else (
            {}, "no scorer was given for the accuracy log")
        # LoadGen states no performance verdict in accuracy mode: the entry's is the accuracy check's.
        figures = {**figures, "result": "INVALID" if why else "VALID",
                   "reasons": [why, *figures["reasons"]] if why else figures["reasons"]}
    rate = figures["samples_per_second"]
    if rate is None and figures["latency_ms"].get("mean"):  # multi-stream states none: samples per query over latency
        rate = (figures["samples_per_query"] or 1) * 1000 / figures["latency_ms"]["mean"]
    settings = {key: value for key, value in job.items() if value is not None and key not in ("scenario",)}
    if figures.get("search"):
        settings["target_qps"] = figures["search"]["confirmed_at_qps"]
    precision = str(figures["precision"]).split(" ")[0]
    return ScenarioResult(
        runtime=row.runtime, scenario=job["scenario"], result=figures["result"] or "INVALID", settings=settings,
        reasons=tuple(figures["reasons"]), precision_requested=row.precision_requested,
        precision=row.precision or figures["precision"], threads_per_worker=figures["threads_per_worker"],
        samples_per_second=rate, scheduled_samples_per_second=figures["scheduled_samples_per_second"],
        completed_samples_per_second=figures["completed_samples_per_second"], headline=figures["headline"],
        latency_ms=figures["latency_ms"], early_stopping=figures["early_stopping"], queries=figures["queries"],
        samples_per_query=figures["samples_per_query"], sut=figures["sut"],
        utilisation=scenario_utilisation(rate, record, precision), search=figures.get("search"),
        log_dir=figures["log_dir"], loadgen_version=figures["loadgen_version"], wall_seconds=figures["wall_seconds"],
        mlperf=rules.check(job["scenario"], figures["mlperf_conf"]["mlperf"], figures["mlperf_conf"]["model"],
                           result=figures["result"] or "INVALID",
                           duration_s=job["duration_s"], queries=figures["queries"],
                           samples_per_query=figures["samples_per_query"],
                           performance_sample_count=(figures.get("parameters") or {}).get("performance_sample_count"),
                           latency_bound_ms=job.get("latency_bound_ms")) if mode == "performance" else None,
        mode=mode, accuracy=accuracy, mlperf_conf=figures.get("mlperf_conf"), library=figures.get("library"),
    )


def with_accuracy_runs(entries: tuple[ScenarioResult, ...]) -> tuple[ScenarioResult, ...]:
    """Performance entries whose scenario and batch also had an accuracy run that matched the probe: MLPerf's
    accuracy-run rule holds for them."""
    matched = {(e.scenario, e.settings.get("batch")) for e in entries
               if e.mode == "accuracy" and (e.accuracy or {}).get("matches_probe")}
    out = []
    for entry in entries:
        if entry.mlperf and (entry.scenario, entry.settings.get("batch")) in matched:
            entry = dataclasses.replace(entry, mlperf=rules.with_accuracy_run(entry.mlperf))
        out.append(entry)
    return tuple(out)


def _progress(out: Path, runtime: str, log: Log) -> Callable[[], None]:
    def show() -> None:
        try:
            state = json.loads((out / PROGRESS_FILE).read_text())
        except (OSError, ValueError):
            return  # the child is still loading its model
        log(f"loadgen {runtime} {state['job']}: {state['elapsed_s']:.0f} s, {state['samples_answered']} samples "
            f"answered, {state['rate']:.1f}/s now ({state['total_elapsed_s']:.0f} s in all)")
    return show


def _finished(out: Path, names: list[str]) -> list[dict]:
    return [json.loads((out / name / RESULT_FILE).read_text()) for name in names
            if (out / name / RESULT_FILE).is_file()]


def run_runtime(row: RuntimeResult, load: LoadConfig, record: dict, inputs: Path, run_dir: Path, log: Log,
                on_entries: Callable[[tuple[ScenarioResult, ...], tuple[dict, ...]], None],
                answers: Answers | None = None, given_audit: tuple[Path, str] | None = None,
                library: dict | None = None, decoding: dict | None = None,
                ) -> tuple[tuple[ScenarioResult, ...], tuple[dict, ...]]:
    """Every test of `load` on one runtime, in one child (a detector file's host stages around each call where
    `decoding` names them: runtimes.staged); the entries of the tests that finished, and the audits
    (the suite's, checked; or every test, where an audit.config in the working directory made them audits)."""
    probe = Probe(p50_ms=row.inference.p50_ms, min_ms=row.inference.min_ms,
                  images_per_second=row.inference.images_per_second)
    todo = jobs(load, record["task"], probe, (record.get("model") or {}).get("detector_format"))
    out = run_dir / FOLDER / f"{row.runtime}-{row.precision_requested}"
    if given_audit is not None:  # MLCommons' own procedure: every test is that audit, its logs in the test's folder
        todo = [dataclasses.replace(job, audit=given_audit[1], turn=1) for job in todo]
    for job in todo:  # a test run again starts from an empty folder: no old log is read as new
        for stale in (out / job.tag / RESULT_FILE, out / job.tag / "mlperf_log_summary.txt", out / job.tag / ACCURACY_LOG):
            stale.unlink(missing_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    request = {"runtime": row.runtime, "artifact": row.artifact, "precision": row.precision_requested,
               "file_precision": row.precision.split(" ")[0],
               "threads": threads(), "xla": " (XLA)" in str(row.settings.get("compile", "")),
               "inputs": str(inputs), "out_dir": str(out), "jobs": [dataclasses.asdict(job) for job in todo],
               "responses": answers.form.to_dict() if answers else None,
               "audit_config": str(given_audit[0]) if given_audit else None, "library": library,
               # a library other than the rows' images: the child scales the hints to its own pass over it
               "probe": dataclasses.asdict(probe) if library and library.get("differs_from_rows") else None,
               "user_expected_qps": load.expected_qps is not None, "decoding": decoding}
    write_atomic(out / "request.json", json.dumps(request, indent=2))
    log(f"loadgen {row.runtime}: {len(todo)} test(s): {', '.join(job.tag for job in todo)}")
    try:
        outcome = child.run([sys.executable, "-m", "l40sbench.loadgen.child", str(out / "request.json")],
                            timeout_s=CHILD_TIMEOUT_S, memory_limit_mb=None,
                            tick=(PROGRESS_EVERY_S, _progress(out, row.runtime, log)))
    finally:  # a stop or a crash keeps the tests that finished
        remove_audit_configs(out)
        score = answers.score if answers else None
        finished = _finished(out, [job.tag for job in todo])
        entries = with_accuracy_runs(tuple(to_entry(row, figures, record, score) for figures in finished
                                           if not figures["job"].get("audit")))
        done = tuple(to_entry(row, figures, record, score) for figures in finished if figures["job"].get("audit"))
        checked = (tuple(audit_entry(row, entry, given_audit) for entry in done) if given_audit
                   else check_audits(row, load, out, [job for job in todo if job.audit]))
        on_entries(entries, checked)
    if outcome.returncode != 0:
        log(f"loadgen {row.runtime}: stopped after {len(finished)} of {len(todo)} test(s): "
            f"{crash_reason(row.runtime, outcome, CHILD_TIMEOUT_S)}")
    for entry in entries:
        log(describe(entry))
    for audit in checked:
        log(f"loadgen {row.runtime} {audits.line(audit) if 'verdict' in audit else audit_said(audit)}")
    return entries, checked


def run_scenarios(rows: tuple[RuntimeResult, ...], load: LoadConfig, record: dict, work: Workload, run_dir: Path,
                  log: Log, on_entries: Callable[[tuple[ScenarioResult, ...], tuple[dict, ...]], None],
                  ) -> tuple[tuple[ScenarioResult, ...], tuple[dict, ...]]:
    """Each runtime with figures under every test of `load` on the workload's library; on_entries(all entries so
    far, all audits so far) after each. The library's map in MLPerf's form goes beside the logs, for MLPerf's
    accuracy scripts."""
    (run_dir / FOLDER).mkdir(parents=True, exist_ok=True)
    given_audit = working_directory_audit(log)
    if given_audit and load.audits:
        raise UserError(f"--audit writes the audit.config each test needs, and {given_audit[0]} is there already: "
                        "remove it, or leave out --audit to run it as MLCommons' procedure does")
    answers = work.answers
    if answers is not None:
        answers.write_map(run_dir / FOLDER)
    images = work.library() if work.library else work.images
    sizes = {tuple(image.shape[1:3]) for image in images}
    library = {"samples": len(images), "size_hw": list(next(iter(sizes))) if len(sizes) == 1 else None,
               "made": work.library_note, "differs_from_rows": work.library is not None}
    inputs = run_dir / FOLDER / "inputs.npz"  # decoded once; every child holds them in memory
    write_images(inputs, images)
    done: tuple[ScenarioResult, ...] = ()
    checked: tuple[dict, ...] = ()
    try:
        for row in rows:
            if row.inference is None or not row.artifact:
                log(f"loadgen {row.runtime}: skipped ({row.status}: {row.reason})")
                continue
            entries, audited = run_runtime(
                row, load, record, inputs, run_dir, log,
                lambda entries, audited, before=done, earlier=checked: on_entries(before + entries, earlier + audited),
                answers, given_audit, library, work.decoding)
            done, checked = done + entries, checked + audited
    finally:
        inputs.unlink(missing_ok=True)
    return done, checked


def describe(entry: ScenarioResult) -> str:
    """One progress line for a finished test."""
    rate = f"{entry.samples_per_second:.1f} samples/s" if entry.samples_per_second else "no rate"
    p99 = entry.latency_ms.get("p99")
    latency = f", p99 {p99:.1f} ms" if p99 is not None else ""
    why = f" ({'; '.join(entry.reasons[:2])})" if entry.result != "VALID" and entry.reasons else ""
    shorter = mlperf_conf.shorter_note(entry.settings.get("duration_s"), entry.mlperf_conf)
    verdict = f"{entry.result} for LoadGen; {shorter}" if shorter and entry.result == "VALID" else entry.result
    if entry.mode == "accuracy" and entry.accuracy:
        return (f"loadgen {entry.runtime} {entry.scenario} accuracy: {entry.accuracy['figure']} "
                f"{entry.accuracy.get('value')} from LoadGen's log, {entry.accuracy['probe']} answered alone: "
                f"{'the same' if entry.accuracy.get('matches_probe') else 'DIFFERENT'}{why}")
    search = ""
    if entry.search is not None:
        search = f", max VALID rate {entry.search['max_valid_qps']:g}/s"
    return f"loadgen {entry.runtime} {entry.scenario}: {verdict}{why}, {rate}{latency}{search}"
