"""A classify or detect run from the command line: its folder, results written as it goes, the summary
printed at the end, and a --devices list run once per count with the scaling of each."""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

from l40sbench.cli.common import EXIT_FAILED, EXIT_INTERRUPTED, log, output_dir_for, run_id
from l40sbench.errors import UserError


def run_device_counts(task: str, config, counts: tuple[int, ...]) -> int:
    """One run per device count: a single count is a plain run; a list gives each count its own run folder
    (OUTPUT_DIR/devices-N/), the scaling of each against the fewest, and OUTPUT_DIR/result.json holding
    every count's record. A worker other than the chief trains alongside and writes nothing of its own."""
    from l40sbench.core.records import to_json, write_atomic, write_result
    from l40sbench.core.scaling import scaling
    from l40sbench.report import tables

    if len(counts) > 1 and config.worker_hosts:
        raise UserError("--worker-hosts takes one --devices count")
    try:  # every count's settings checked before any count runs: a refusal is one line, not a later traceback
        for count in counts:
            dataclasses.replace(config, devices=count, devices_available=max(counts))
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if config.worker_hosts and config.task_index > 0:
        mine: list[dict] = []
        with tempfile.TemporaryDirectory(prefix="l40sbench-worker-") as scratch:
            code = run_and_report(task, dataclasses.replace(config, devices=counts[0], output_dir=Path(scratch),
                                                            runtimes=("tf",)), collect=mine)
        checksum = mine[0]["devices"].get("trained_weight_checksum") if mine else None
        log(f"worker {config.task_index}: trained with the others (weight checksum {checksum!r}); "
            "the chief (task 0) writes the record")
        return code
    if len(counts) == 1:
        return run_and_report(task, dataclasses.replace(config, devices=counts[0]))
    output_dir = config.output_dir or Path("results") / run_id(task, config.base)
    records: list[dict] = []
    code = 0
    with output_dir_for(output_dir):
        for count in counts:
            log(f"--- {count} device(s) ---")
            code = run_and_report(task, dataclasses.replace(config, devices=count, devices_available=max(counts),
                                                            output_dir=output_dir / f"devices-{count}"),
                                  collect=records)
            if code:
                break
    for record, block in zip(records, scaling(records)):
        record["scaling"] = block
        write_result(output_dir / f"devices-{block['devices']}", record)
    if records:
        write_atomic(output_dir / "result.json", to_json(records))
        print(f"Scaling over devices ({records[0]['base']}; {records[0]['scaling']['held_fixed']}):")
        print(tables.scaling_table(records))
        print(f"results: {output_dir / 'result.json'} (every count) and {output_dir}/devices-N/")
    return code


def run_and_report(task: str, config, collect: list | None = None) -> int:
    """Runs the task through the harness, writing results as it goes, then prints the summary; the finished
    record is appended to `collect` when one is given."""
    from l40sbench.core.bound import lines as bound_lines
    from l40sbench.core.records import write_result
    from l40sbench.core.stability import line as stability_line
    from l40sbench.core.telemetry import line as energy_line
    from l40sbench.harness.run import run_task
    from l40sbench.report import lines, tables

    output_dir = config.output_dir or Path("results") / run_id(task, config.base)
    config = dataclasses.replace(config, output_dir=output_dir)  # the runner may write files of its own there
    saved: dict = {}

    def save(record: dict) -> None:
        saved["path"] = write_result(output_dir, record)
        saved["record"] = record

    try:
        with output_dir_for(output_dir):
            result = run_task(task, config, log=log, save=save).to_dict()
        if collect is not None:
            collect.append(result)
    except OSError as exc:
        from l40sbench.core.records import disk_full, full_disk_line

        if not disk_full(exc):
            raise
        log(f"l40sbench: error: {full_disk_line(exc, output_dir)}")
        return EXIT_FAILED
    except KeyboardInterrupt:
        from l40sbench.core.stops import signal_name, what

        if "path" in saved:
            record = {**saved["record"], "stopped_by": signal_name()}
            save(record)
            rows = len((record.get("inference") or {}).get("runtimes") or ())
            if record.get("complete") and rows:  # training and tf's probe were done: a runtime was stopped
                log(f"{what()}: the run and {rows} runtime row(s) kept in {saved['path']}")
            else:
                log(f"{what()}: {record['train']['epochs']} finished epoch(s) kept in {saved['path']} "
                     "(complete: false)")
        else:
            log(f"{what()} before anything was measured")
        return EXIT_INTERRUPTED
    print()
    print(tables.environment_block(result["env"]))
    print()
    print(f"Data: {result['dataset']['source']}  weights: {result['weights']}  "
          f"input: {result['config']['image_size']}px  precision: {result['config']['precision']}")
    print()
    print(tables.training_table([result]))
    print()
    print(tables.inference_table([result]))
    if lines.file_to_label_line(result):
        print(lines.file_to_label_line(result))
    print()
    runtimes = tables.runtime_table(result)
    if runtimes:
        print("Inference by runtime (batch 1, fastest first; precision: what the runtime runs, and what it was "
              "asked for where that differs):")
        print(runtimes)
        print()
    print(lines.accuracy_lines(result))
    for line in bound_lines(result.get("bound")):
        print(line)
    print(lines.utilisation_line(result))
    if tables.first_step_line(result):
        print(tables.first_step_line(result))
    print(f"results: {saved['path']} and result.csv")
    print(energy_line(result.get("telemetry")))
    print(stability_line(result.get("stability")))
    return 0
