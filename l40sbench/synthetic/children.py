"""The sweep's child processes: one configuration a child (its row, however the child ended), and the
children that measure the peak and read the environment the way a configuration's child sees it."""

from __future__ import annotations

import dataclasses
import json
import os
import sys

from l40sbench.core import child
from l40sbench.core.results import Row
from l40sbench.core.text import Log
from l40sbench.synthetic.config import SweepConfig
from l40sbench.synthetic.job import Job, failed_row
from l40sbench.synthetic.worker import ROW_MARKER


def child_env(config: SweepConfig) -> dict:
    """A child's environment: its Keras backend, jax's host devices for the largest count, the cluster."""
    backend = config.settings.backend
    env = {**os.environ, "KERAS_BACKEND": backend}
    if backend == "jax":
        from l40sbench.backends.jax import host_devices_env

        env = host_devices_env(max(config.devices), env)
    if config.worker_hosts:
        from l40sbench.backends.tf_device import cluster_env

        env["TF_CONFIG"] = cluster_env(config.worker_hosts, config.task_index)
    return env


def _child_result(outcome: child.Outcome) -> dict | None:
    lines = [line for line in outcome.stdout.splitlines() if line.startswith(ROW_MARKER)]
    return json.loads(lines[-1][len(ROW_MARKER):]) if lines else None


def _crash_line(outcome: child.Outcome) -> str:
    """The first line of the error a child died of: its last 'SomethingError: ...' line, else its exit."""
    error = child.error_line(outcome)
    if error:
        return error
    code = outcome.returncode
    return f"child exited with {'signal ' + str(-code) if code and code < 0 else 'code ' + str(code)}"


def run_job(job: Job, config: SweepConfig, gpu: bool) -> Row:
    """Runs one configuration in a child and turns however it ended into a row."""
    command = [sys.executable, "-m", "l40sbench.synthetic.worker", json.dumps(job.to_dict())]
    # On a GPU the cap is the child's logical-device memory limit; on the CPU the child's resident set.
    cap_mb = None if gpu or not job.settings.memory_limit_gb else job.settings.memory_limit_gb * 1024
    outcome = child.run(command, timeout_s=config.timeout_s, memory_limit_mb=cap_mb, env=child_env(config))
    kind = "GPU" if gpu else "CPU"
    workers = max(len(config.worker_hosts), 1)
    extra = {"memory_cap": outcome.enforcement, "child_peak_rss_mb": round(outcome.peak_rss_mb, 1)}
    values = _child_result(outcome)
    if values and (outcome.over_memory or outcome.timed_out):
        # The row was measured and printed; the child only failed to exit in time (teardown).
        extra["after_its_row"] = "passed the memory cap" if outcome.over_memory else "passed --timeout"
        return dataclasses.replace(Row.from_dict(values), extra={**values.get("extra", {}), **extra})
    if outcome.over_memory:
        row = failed_row(job, "oom", f"resident memory passed the {job.settings.memory_limit_gb:g} GiB cap "
                                     f"(--memory-limit, enforced by {outcome.enforcement})",
                         device_kind=kind, workers=workers, seconds=outcome.seconds)
    elif outcome.timed_out:
        row = failed_row(job, "timeout", f"no result within {config.timeout_s:g} s (--timeout)",
                         device_kind=kind, workers=workers, seconds=outcome.seconds)
    else:
        row = Row.from_dict(values) if values else failed_row(
            job, "error", _crash_line(outcome), device_kind=kind, workers=workers, seconds=outcome.seconds)
    return dataclasses.replace(row, extra={**row.extra, **extra})


def _worker_child(flag: str, what: str, env: dict) -> dict:
    """The result a worker child prints for `flag` (--measure-peak, --fingerprint); RuntimeError naming `what`."""
    outcome = child.run([sys.executable, "-m", "l40sbench.synthetic.worker", flag], timeout_s=600, env=env,
                        memory_limit_mb=None)
    result = _child_result(outcome)
    if result is None:
        raise RuntimeError(f"{what} failed: {_crash_line(outcome)}")
    return result


def measure_peak(config: SweepConfig, log: Log) -> dict:
    """The device's peaks and the environment, measured in a child at the start of the sweep."""
    log(f"measuring this device's peak on {config.settings.backend}: matmul per precision and a 3x3 convolution ...")
    return _worker_child("--measure-peak", "measuring the peak", child_env(config))


def child_fingerprint(config: SweepConfig) -> dict:
    """This machine's environment block as a sweep's child sees it (the backend's devices included)."""
    return _worker_child("--fingerprint", "reading the environment", child_env(config))["env"]
