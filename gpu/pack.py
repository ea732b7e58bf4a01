"""What a GPU run brings back: one Markdown table, one JSON, the run's records in one archive.

    python gpu/pack.py --work WORK_DIR --out OUT_DIR [--seconds N]

Reads what gpu/run.sh left in WORK_DIR (parts.tsv, preflight.txt, env.txt, peer/*.json,
study-<backend>/, the peaks) and writes OUT_DIR/gpu.md (the machine, how each part ended, timm beside the
suite, each study's table beside the published rows, published figures with what differs, and path by path
what the GPU-only code saw), OUT_DIR/gpu.json (the same, structured: gpu/runs/ keeps it) and
OUT_DIR/records.tar.gz (every record, report, plot and log under WORK_DIR). Runs with what is there: a part
that was stopped or failed is named, never hidden.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tarfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's l40sbench

from l40sbench.core.stability import line as stability_line  # noqa: E402
from l40sbench.core.telemetry import line as energy_line  # noqa: E402

SCHEMA = "l40sbench.gpu-run/1"
KEPT = (".json", ".jsonl", ".md", ".csv", ".txt", ".tsv", ".png")
LARGEST_KEPT = 4 * 2**20
PEAK_KEYS = {"bf16": ("bfloat16",), "fp32": ("tf32", "float32")}  # a float32 row runs as TF32 where it is on
PUBLISHED = [
    ("timm's table, RTX 4090, PyTorch 2.9.1, AMP, NCHW, eager, batch 256-1024", "resnet50", 4303, "img/s",
     "another GPU (RTX 4090), AMP float16, timm's own batch"),
    ("timm's table, RTX 4090 (as above)", "inception_v3", 3636, "img/s", "another GPU, AMP float16"),
    ("timm's table, RTX 4090 (as above)", "legacy_xception", 2262, "img/s", "another GPU, AMP float16"),
    ("timm's table, RTX 4090 (as above)", "vgg19", 2045, "img/s", "another GPU, AMP float16"),
    ("MLPerf Inference v5.0 closed, H200 SXM, offline", "resnet50", 95089, "samples/s",
     "TensorRT int8 with a tuned harness: a ceiling, not a like-for-like row"),
    ("Lambda, H200, training, AMP", "resnet50", 3079, "img/s", "training, not inference"),
]


def study_rows() -> list[tuple]:
    """The L40S study's inference rows, as l40sbench.reference holds them (its classifiers at batch 1)."""
    from l40sbench.reference import load

    return [("The L40S study (reference l40s), inference", r["base"], r["inference"]["mean_ms"], "ms/image",
             "batch 1, another GPU") for r in load("l40s")
            if r["task"] == "classify" and (r.get("inference") or {}).get("mean_ms") is not None]


def _json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def machine() -> dict:
    facts = {"host_cpu": platform.processor() or platform.machine(), "python": platform.python_version()}
    from l40sbench.backends.nvml_boards import read

    nvml = read()  # a CPU rehearsal, or a driver NVML cannot read: why, instead of the boards
    keys = ("name", "uuid", "memory_gib", "power_limit_w", "max_sm_clock_mhz", "max_memory_clock_mhz")
    if nvml.said:
        facts["nvml"] = f"unavailable ({nvml.said})"
    else:
        facts.update(driver=nvml.driver, boards=[{k: b[k] for k in keys} for b in nvml.boards])
    return facts


def parts(work: Path) -> list[dict]:
    out = []
    for line in (work / "parts.tsv").read_text().splitlines() if (work / "parts.tsv").exists() else []:
        name, code, seconds, limit = line.split("\t")
        how = {"0": "finished", "124": "stopped at its share (SIGINT)", "137": "killed 15 s after its share",
               "deadline": "not started: the command's deadline left no time"}
        out.append({"part": name, "exit": int(code) if code.isdigit() else None, "seconds": int(seconds),
                    "share_s": int(limit), "ended": how.get(code, f"failed (exit {code})")})
    return out


def peer(work: Path) -> tuple[dict, list[dict]]:
    sides, rows = {}, []
    for path in sorted((work / "peer").glob("*.json")):
        data = _json(path) or {}
        rows += data.pop("rows", [])
        sides[path.stem] = data
    return sides, rows


def _peak(work: Path, backend: str, precision: str) -> float | None:
    kept = _json(work / f"peak.{backend}.json") or {}
    for key in PEAK_KEYS[precision]:
        gflops = ((kept.get("matmul") or {}).get(key) or {}).get("gflops")
        if gflops:
            return gflops / 1e3
    return None


def pairs(work: Path, rows: list[dict]) -> list[dict]:
    """One line per model, batch and precision: timm's layouts and the suite's backends side by side."""
    table = {}
    for row in rows:
        key = (row["model"], row["batch"], row["precision"])
        side = row["side"] + ("-cl" if row["layout"] == "channels-last" else "")
        table.setdefault(key, {})[side] = row
    out = []
    for (model, batch, precision), got in sorted(table.items(), key=lambda kv: (kv[0][0], -kv[0][1], kv[0][2])):
        def rate(side, got=got):
            return (got.get(side) or {}).get("images_per_second")
        line = {"model": model, "batch": batch, "precision": precision,
                **{f"{side}_images_per_second": rate(side) for side in ("timm", "timm-cl", "keras-torch", "keras-jax")},
                "status": {side: row["status"] for side, row in got.items() if row["status"] != "ok"}}
        for side in ("keras-torch", "keras-jax"):
            line[f"{side}_over_timm"] = rate(side) / rate("timm") if rate(side) and rate("timm") else None
        line["gflops_per_image"] = {side: row.get("gflops_per_image") for side, row in got.items()}
        line["utilisation"] = {}
        for side, row in got.items():
            peak = _peak(work, "jax" if side == "keras-jax" else "torch", precision)
            if peak and row.get("achieved_tflops"):
                line["utilisation"][side] = row["achieved_tflops"] / peak
        out.append(line)
    return out


def studies(work: Path) -> dict:
    out = {}
    started = {p["part"] for p in parts(work) if p["part"].startswith("study-")}  # a study may have left no folder
    for folder in sorted({work / name for name in started} | set(work.glob("study-*"))):
        report = (folder / "report.md").read_text() if (folder / "report.md").exists() else ""
        section = report.split("## This machine beside the study", 1)[-1].split("The studies' tables", 1)[0]
        steps = []
        for result in sorted(folder.glob("[0-9][0-9]-*/result.json")):
            record = _json(result) or {}
            steps.append({"step": result.parent.name, "complete": record.get("complete"),
                          "stability": stability_line(record.get("stability")),
                          "energy": energy_line(record.get("telemetry")) if "telemetry" in record else None})
        out[folder.name.removeprefix("study-")] = {
            "summary_md": section.strip() if report else "", "steps": steps,
            "budget": (_json(folder / "study.json") or {}).get("budget"),
            "note": "" if report else "no report.md: the study was stopped before its end (" + (
                "its records are kept)" if folder.exists() else "before it wrote anything)")}
    return out


def paths(work: Path) -> dict[str, list[str]]:
    """Path by path, what the GPU-only code recorded in this run's records."""
    seen = {k: [] for k in ("devices and NVML boards", "power cap and slowdowns", "the guard", "FLOP counts",
                            "sweep step windows", "peak memory", "TF32", "energy per image")}
    for result in sorted(work.glob("study-*/[0-9][0-9]-*/result.json")):
        record, name = _json(result) or {}, f"{result.parent.parent.name}/{result.parent.name}"
        used = [(d.get("name"), d.get("uuid")) for d in (record.get("devices") or {}).get("used") or []]
        phases = (record.get("telemetry") or {}).get("phases") or {}
        boards = sorted({uuid for p in phases.values() for uuid in (p.get("boards") or {})})
        if used:
            seen["devices and NVML boards"].append(f"{name}: used {used}; NVML boards {boards or 'none'}")
        for phase, s in phases.items():
            seen["power cap and slowdowns"].append(
                f"{name} {phase}: power cap {s.get('power_cap_share')}, slowdowns {s.get('slowdowns')}, "
                f"median clock {s.get('clock_mhz_median')} MHz")
        bursts = ((record.get("stability") or {}).get("speed") or {}).get("bursts") or []
        if bursts:
            seen["the guard"].append(f"{name}: {[round(b['gflops']) for b in bursts]} GFLOP/s, {bursts[0].get('form')}")
        flops = record.get("utilisation") or {}
        if flops.get("flop_counter"):
            seen["FLOP counts"].append(f"{name}: {flops.get('forward_gflops_per_image')} GFLOP/image, "
                                       f"{flops['flop_counter']}")
        peak = (record.get("env") or {}).get("peak") or {}
        if peak:
            seen["TF32"].append(f"{name}: {peak.get('backend')} float32 runs as {peak.get('float32_runs_as')}, "
                                f"TF32 {peak.get('tf32_enabled')} {peak.get('tf32_allowed') or ''}".rstrip())
        if "telemetry" in record:
            seen["energy per image"].append(f"{name}: {energy_line(record['telemetry'])}")
        for row in record.get("rows", []):
            label, extra = f"{name} {row['model']} b{row['per_device_batch']}", row.get("extra") or {}
            seen["sweep step windows"].append(f"{label}: windows of {extra.get('window_steps')} steps")
            seen["peak memory"].append(f"{label}: {row.get('peak_memory_mb')} MB ({extra.get('peak_memory')})")
            seen["FLOP counts"].append(f"{label}: {row.get('gflops_per_image')} GFLOP/image, {extra.get('flop_counter')}")
            if row.get("telemetry"):
                seen["energy per image"].append(f"{label}: {energy_line(row['telemetry'])}")
    return {k: v or ["not seen in this run's records"] for k, v in seen.items()}


def _f(value, spec: str = ",.1f", none: str = "-") -> str:
    return none if value is None else format(value, spec)


def markdown(run: dict) -> str:
    m = run["machine"]
    boards = m.get("boards") or []
    gpu = ", ".join(b["name"] for b in boards) or f"no GPU seen ({m.get('nvml')})"
    lines = [f"# GPU run {run['utc']}: {gpu}", ""]
    for b in boards:
        lines.append(f"- {b['name']} ({b['uuid']}): {b['memory_gib']:.0f} GiB, power limit {b['power_limit_w']:.0f} W, "
                     f"max clocks SM {b['max_sm_clock_mhz']} / memory {b['max_memory_clock_mhz']} MHz")
    lines += [f"- driver {m.get('driver', '-')}; host {m['host_cpu']}; Python {m['python']}; "
              + "; ".join(f"{side}: " + ", ".join(f"{k} {meta[k]}" for k in ("torch", "timm", "backend_version", "keras")
                                                 if meta.get(k)) for side, meta in run["peer_sides"].items()),
              "- host calibration (NumPy float32 1024 matmul, GFLOP/s): " + ", ".join(
                  f"{side} {meta['host_matmul_gflops']:.0f}" for side, meta in run["peer_sides"].items()
                  if meta.get("host_matmul_gflops")),
              f"- the whole command: {run['seconds']} s", "", "## How each part ended", "",
              "| part | ended | seconds | share (s) |", "|---|---|---|---|"]
    lines += [f"| {p['part']} | {p['ended']} | {p['seconds']} | {p['share_s']} |" for p in run["parts"]]
    lines += ["", "## The suite beside timm (inference, images/s; same device, same command)", "",
              "timm: torch.utils.benchmark blocked_autorange; the suite: its own clock (core.timing.time_batches). "
              "fp32 rows run TF32 where the device has it (torch's flags on; XLA's default precision). GFLOP per "
              "image by one convention on both sides (2 x MACs of convolutions and matmuls): Keras' xception is not "
              "timm's legacy_xception line for line, so compare images/s and utilisation, not time alone.", "",
              "| model | batch | precision | timm NCHW | timm channels-last | Keras on torch | Keras on jax | "
              "torch / timm | jax / timm | GFLOP/image (timm, Keras) | utilisation of the precision's matmul peak |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for p in run["pairs"]:
        g = p["gflops_per_image"]
        keras_g = g.get("keras-jax") or g.get("keras-torch")
        used = ", ".join(f"{side} {100 * u:.0f} %" for side, u in sorted(p["utilisation"].items())) or "-"
        notes = "; ".join(f"{side}: {why}" for side, why in p["status"].items())
        lines.append(f"| {p['model']} | {p['batch']} | {p['precision']} | {_f(p['timm_images_per_second'])} | "
                     f"{_f(p['timm-cl_images_per_second'])} | {_f(p['keras-torch_images_per_second'])} | "
                     f"{_f(p['keras-jax_images_per_second'])} | {_f(p['keras-torch_over_timm'], '.2f')} | "
                     f"{_f(p['keras-jax_over_timm'], '.2f')} | {_f(g.get('timm'), '.2f')}, {_f(keras_g, '.2f')} | "
                     f"{used}{' (' + notes + ')' if notes else ''} |")
    if not run["pairs"]:
        lines.append("| no peer rows | | | | | | | | | | |")
    for backend, study in run["studies"].items():
        lines += ["", f"## The study on {backend}, beside the published rows", "",
                  study["summary_md"] or study["note"]]
        lines += [f"- {s['step']}: {'complete' if s['complete'] else 'INCOMPLETE'}; {s['stability']}"
                  for s in study["steps"]]
    lines += ["", "## Published figures, with what differs", "", "| source | model | figure | what differs |",
              "|---|---|---|---|"]
    lines += [f"| {p['source']} | {p['model']} | {p['value']:,} {p['unit']} | {p['differs']} |" for p in run["published"]]
    lines += ["", "## What the GPU-only paths saw", ""]
    for path, seen in run["paths"].items():
        lines += [f"- **{path}**"] + [f"  - {line}" for line in seen[:8]]
        if len(seen) > 8:
            lines.append(f"  - ... {len(seen) - 8} more in gpu.json")
    return "\n".join(lines) + "\n"


def archive(work: Path, target: Path) -> int:
    kept = [p for p in sorted(work.rglob("*")) if p.is_file() and p.suffix in KEPT
            and "site" not in p.relative_to(work).parts and p.stat().st_size <= LARGEST_KEPT]
    with tarfile.open(target, "w:gz") as tar:
        for path in kept:
            tar.add(path, arcname=str(path.relative_to(work)))
    return len(kept)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, required=True, help="gpu_run.sh's work folder")
    parser.add_argument("--out", type=Path, required=True, help="the folder that comes back")
    parser.add_argument("--seconds", type=int, default=None, help="the whole command's seconds so far")
    args = parser.parse_args(argv)
    if not args.work.is_dir():
        print(f"gpu_pack: {args.work} is not a folder", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    sides, rows = peer(args.work)
    run = {"schema": SCHEMA, "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "seconds": args.seconds,
           "machine": machine(), "parts": parts(args.work), "peer_sides": sides, "peer_rows": rows,
           "pairs": pairs(args.work, rows), "studies": studies(args.work),
           "published": [dict(zip(("source", "model", "value", "unit", "differs"), p)) for p in PUBLISHED + study_rows()],
           "paths": paths(args.work),
           "preflight": (args.work / "preflight.txt").read_text() if (args.work / "preflight.txt").exists() else ""}
    (args.out / "gpu.json").write_text(json.dumps(run, indent=1, sort_keys=True))
    (args.out / "gpu.md").write_text(markdown(run))
    count = archive(args.work, args.out / "records.tar.gz")
    print(f"gpu_pack: {args.out}/gpu.md, gpu.json and records.tar.gz ({count} files of {args.work})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
