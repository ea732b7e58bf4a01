"""`python -m benchmarks run`: each claim measured in a process of its own, into one record per claim.

The machine's peak is measured once per run, as every result record measures it (peak.measure.measure_env);
before each claim the host is watched until 2 s pass quietly, a minute at most, then refused (busy: another
process over a tenth of the machine's CPU, or the hypervisor's steal: core.neighbours, the stability guard's
rule), and the claim's own run is watched the same way, its verdict in the record. A record holds the claim's
sentence, the command that reproduces it, the sizes, the env (versions, CPU, the whole commit, `-dirty` where the
tree had changes), the peak and each figure with its n and 95 % interval (benchmarks/claims/figures.py); and what
publish checks it by: the record's `schema`, the claim's version (claims.Claim.version: its body's source and the
sizes) and the `device` it measured, whose folder holds it (RESULTS/<device>/<claim>.json, so a GPU's records sit
beside the CPU's). The suite commands a claim runs read the run's peak (figures.suite), and a claim that fails
is said in one line while the others are still measured.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.claims import SCHEMA, Claim, load_all
from benchmarks.claims.figures import PEAK_VARIABLE
from l40sbench.core.records import write_atomic
from l40sbench.errors import UserError
from l40sbench.paths import REPO


class ClaimFailed(Exception):
    """A claim's body failed; its line names it."""

RESULTS = REPO / "benchmarks" / "results" / "claims"
WATCH_S, WATCH_TRIES = 2.0, 30


def device_key(devices) -> str:
    """The device a run's claims measure, as their folder names it: `cpu` where the CUDA driver shows no GPU, else
    `gpu-` and the GPUs' names as CUDA gives them (a MIG slice's whole name), each after its count where there
    are several ("gpu-NVIDIA-L40S", "gpu-8x-NVIDIA-H100-80GB-HBM3")."""
    names = [device.name for device in devices]
    if not names:
        return "cpu"
    kinds = [(names.count(name), name) for name in dict.fromkeys(names)]
    text = "+".join(name if count == 1 else f"{count}x-{name}" for count, name in kinds)
    return "gpu-" + re.sub(r"[^A-Za-z0-9._+-]+", "-", text).strip("-")


DIRTY = "-dirty"  # core.env's mark on a commit whose tree had changes


def dirty(commit: str | None) -> bool:
    """Whether a record's commit was measured on uncommitted code (no commit at all counts as such)."""
    return (commit or DIRTY).endswith(DIRTY)


def record_path(results: Path, device: str, name: str) -> Path:
    return results / device / f"{name}.json"


def command(name: str, quick: bool) -> str:
    return f"python -m benchmarks run {name}" + (" --quick" if quick else "")


def _watched(seconds: float | None = None, work=None) -> dict:
    """The neighbours of `seconds` of waiting, or of `work()`: core.neighbours' block (its `reasons`)."""
    from l40sbench.core.neighbours import Watch

    watch = Watch()
    start = watch.snapshot(time.monotonic())
    if work is None:
        time.sleep(seconds)
    else:
        work()
    return watch.between(start, watch.snapshot(time.monotonic()))


def _quiet(anyway: bool, log) -> dict:
    """The host watched until a WATCH_S window is quiet (WATCH_TRIES windows at most): that window's block.

    Raises:
      UserError: still busy (without `anyway`, which takes the first window whatever it saw).
    """
    for attempt in range(WATCH_TRIES):
        before = _watched(WATCH_S)
        if not before["reasons"] or anyway:
            return before
        if attempt == 0:
            log(f"  waiting for the host to go quiet ({'; '.join(before['reasons'])}) ...")
    raise UserError(f"the host is not quiet ({'; '.join(before['reasons'])}) after {WATCH_S * WATCH_TRIES:.0f} s: no "
                    "claim is timed beside other work (--anyway times it and records it as not quiet)")


def _child(claim: Claim, sizes: dict, peak: dict) -> dict:
    """The claim's figures, measured in a fresh interpreter; the suite commands it runs read `peak`.

    Raises:
      RuntimeError: the claim's body failed (its last line), or took more than its limit_s (ended with its
        children).
    """
    from l40sbench.core import child

    with tempfile.TemporaryDirectory() as folder:
        out, kept = Path(folder) / "figures.json", Path(folder) / "peak.json"
        kept.write_text(json.dumps(peak))
        done = child.run([sys.executable, "-m", "benchmarks", "_one", claim.name, json.dumps(sizes), str(out)],
                         timeout_s=claim.limit_s, memory_limit_mb=None, env={**os.environ, PEAK_VARIABLE: str(kept)},
                         cwd=REPO)
        if done.timed_out:
            raise RuntimeError(f"{claim.name}: no answer within its limit of {claim.limit_s:g} s: ended, with the "
                               "processes it started")
        if done.returncode != 0 or not out.is_file():
            lines = done.stderr.strip().splitlines() or [f"exit {done.returncode}"]
            raise RuntimeError(f"{claim.name}: {lines[-1]}")
        return json.loads(out.read_text())


def run(names: list[str], quick: bool, output_dir: Path, anyway: bool, log) -> list[Path]:
    """Measures the claims `names` into output_dir/<device>/<name>.json; returns the records written.

    Raises:
      UserError: an unknown claim, or a busy host (without `anyway`).
      ClaimFailed: a claim's body failed (after every other claim was measured).
    """
    from l40sbench.backends import cuda_driver
    from l40sbench.backends.gpu_gate import TF_LOG_DEFAULT, TF_LOG_VARIABLE
    from l40sbench.core.env import fingerprint
    from l40sbench.peak.measure import measure_env

    claims = [load_all().get(name) for name in names]
    device = device_key(cuda_driver.devices())
    if device == "cpu" and os.environ.get(TF_LOG_VARIABLE, TF_LOG_DEFAULT) == TF_LOG_DEFAULT:
        os.environ[TF_LOG_VARIABLE] = "3"  # as the gate's CPU choice: no "E ... failed call to cuInit" line
    log("measuring the machine's peak (as every run does) ...")
    peak = measure_env(log=log)
    env = fingerprint()
    if dirty(env["suite_commit"]):
        log(f"the tree has uncommitted changes ({env['suite_commit'] or 'no git commit'}): publish refuses these "
            "records (or marks their rows with --allow-dirty)")
    (output_dir / device).mkdir(parents=True, exist_ok=True)
    written, failed = [], []
    for index, claim in enumerate(claims, start=1):
        before = _quiet(anyway, log)
        sizes = claim.quick if quick else claim.sizes
        log(f"[{index}/{len(claims)}] {claim.name}: {claim.sentence} ({json.dumps(sizes)}) ...")
        started = time.perf_counter()
        figures: dict = {}
        try:
            during = _watched(work=lambda c=claim, s=sizes, f=figures: f.update(_child(c, s, peak)))
        except RuntimeError as exc:  # the others are still measured; the run ends in error
            log(f"  failed: {exc}")
            failed.append(claim.name)
            continue
        seconds = time.perf_counter() - started
        record = {"schema": SCHEMA, "claim": claim.name, "claim_version": claim.version(sizes), "device": device,
                  "topic": claim.topic, "sentence": claim.sentence,
                  "log_entry": claim.log_entry, "command": command(claim.name, quick), "quick": quick,
                  "sizes": sizes, "date_utc": env["timestamp_utc"][:10], "env": env, "peak": peak,
                  "quiet": {"before": before["reasons"], "during": during["reasons"],
                            "verdict": "quiet" if not (before["reasons"] or during["reasons"]) else "not quiet"},
                  "seconds": seconds, "figures": figures, "text": claim.describe(figures)}
        path = record_path(output_dir, device, claim.name)
        write_atomic(path, json.dumps(record, indent=1, sort_keys=True) + "\n")
        log(f"  {record['text']} ({seconds:.0f} s, {record['quiet']['verdict']}) -> {path}")
        written.append(path)
    if failed:
        raise ClaimFailed(f"{len(failed)} of {len(claims)} claims failed ({', '.join(failed)}); the others' records "
                          f"are written")
    return written


def one(name: str, sizes_json: str, out: str) -> None:
    """The child: one claim's body, its figures to `out`."""
    figures = load_all().get(name).measure(json.loads(sizes_json))
    Path(out).write_text(json.dumps(figures))
