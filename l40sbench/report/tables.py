"""Plain-text tables in the seed articles' shape, from result dicts."""

from __future__ import annotations

from collections.abc import Sequence

from l40sbench.core.bound import short as bound_by
from l40sbench.core.env import gpu_models
from l40sbench.core.text import format_duration, format_table
from l40sbench.report.cells import SMALL_P99_NOTE, input_path, number, p99, spread


def _machine_rate_row(env: dict) -> tuple[str, str]:
    """The measured peak, and whether this run measured it."""
    from l40sbench.core.utilisation import measured_in_this_run, summary

    peak = env.get("peak") or {}
    return ("Peak (same run)" if measured_in_this_run(peak) else "Peak (earlier, this device)"), summary(peak)


def environment_block(env: dict) -> str:
    gpus = gpu_models(env)
    gpu = f"{len(gpus)}x {gpus[0]}" if gpus else "none (CPU only)"
    rows = [
        ("GPU", gpu),
        ("CPU", f"{env.get('cpu')} ({env.get('cpu_count')} cores)" if env.get("cpu") else "-"),
        ("OS", env.get("os") or "-"),
        ("CUDA / cuDNN (TF build)", f"{env.get('cuda') or '-'} / {env.get('cudnn') or '-'}"),
        ("Python / TensorFlow / Keras", f"{env.get('python') or '-'} / {env.get('tensorflow') or '-'} / {env.get('keras') or '-'}"),
        ("Keras backend", backend_label(env)),
        _machine_rate_row(env),
        ("Suite commit", env.get("suite_commit") or "-"),
        ("Date (UTC)", env.get("timestamp_utc") or "-"),
    ]
    width = max(len(k) for k, _ in rows)
    return "Environment\n" + "\n".join(f"  {k.ljust(width)} : {v}" for k, v in rows)


def backend_label(env: dict) -> str:
    """"jax 0.10.2 (jaxlib 0.10.2)"."""
    name = env.get("backend") or "-"
    return f"{name} {env.get('backend_version') or env.get(name) or ''}".strip()


def wall_epoch_seconds(train: dict) -> float | None:
    """The studies' "time per epoch": the whole training's wall time / epochs, less the suite's own test
    scoring between epochs (`scoring_seconds_per_epoch`), which is not the studies' work.

    The studies timed their whole training; the suite's `wall_seconds` is the
    same clock (fit start to end: epochs, callbacks, and the suite's per-epoch
    scoring, taken out here). None for a record without a wall time, or before any epoch.
    """
    wall, epochs = train.get("wall_seconds"), train.get("epochs")
    return (wall - sum(train.get("scoring_seconds_per_epoch") or ())) / epochs if wall and epochs else None


def clock_epoch_seconds(train: dict) -> float | None:
    """The mean of the epoch clocks: what an epoch alone took (scoring and callbacks between epochs left out)."""
    times = train.get("epoch_seconds") or ()
    return sum(times) / len(times) if times else None


def first_step_seconds(result: dict) -> float | None:
    """From the command's start to the first training step (the record's time_to_first_step)."""
    return (result.get("time_to_first_step") or {}).get("seconds")


def scoring_seconds(train: dict) -> float | None:
    """The per-epoch test scoring, all epochs together (None where nothing was scored)."""
    times = train.get("scoring_seconds_per_epoch") or ()
    return sum(times) if times else None


def first_step_line(result: dict) -> str:
    """The time to the first training step and its parts, one line; '' for a record without it."""
    block = result.get("time_to_first_step") or {}
    if not block:
        return ""
    parts = ", ".join(f"{name} {seconds:.1f}" for name, seconds in block["parts_seconds"].items())
    return f"time to first step: {format_duration(block['seconds'])} from {block['from']} ({parts} s)"


WALL_TOTAL = "training wall time"
WALL_PER_EPOCH = "time per epoch (wall less test scoring / epochs, the studies' definition)"
CLOCK_PER_EPOCH = "epoch clock mean"


def _base(result: dict) -> str:
    """The base, marked where the stability guard called its run unstable."""
    from l40sbench.core.stability import unstable

    return f"{result['base']} (unstable run)" if unstable(result) else result["base"]


def training_table(results: Sequence[dict]) -> str:
    rows = []
    for r in results:
        train = r["train"]
        rows.append(
            (
                _base(r),
                input_path(r),
                bound_by(r.get("bound")),
                train["epochs"],
                format_duration(train.get("wall_seconds")),
                format_duration(wall_epoch_seconds(train)),
                format_duration(clock_epoch_seconds(train)),
                format_duration(train["first_epoch_seconds"]),
                format_duration(train["steady_epoch_seconds"]),
                spread(train.get("steady_epoch_interval")),
            )
        )
    return format_table(
        ("base", "input", "bound by", "epochs", WALL_TOTAL, WALL_PER_EPOCH, CLOCK_PER_EPOCH, "first epoch", "steady epoch (2..N)",
         "steady 95 % interval"), rows
    )


def inference_table(results: Sequence[dict]) -> str:
    rows = []
    for r in results:
        inf = r.get("inference") or {}
        rows.append(
            (
                _base(r),
                inf.get("images_timed", 0),
                number(inf.get("mean_ms")),
                spread(inf.get("interval_ms")),
                number(inf.get("images_per_second")),
                number(inf.get("p50_ms")),
                number(inf.get("p90_ms")),
                p99(inf),
            )
        )
    table = format_table(("base", "images", "mean ms/image", "mean 95 % interval", "images/s", "p50 ms", "p90 ms",
                          "p99 ms"), rows)
    return f"{table}\n{SMALL_P99_NOTE}" if any(row[-1].endswith("*") for row in rows) else table


def dataset_table(counts: dict[str, dict[str, int]], images: dict[str, int] | None = None) -> str:
    """Per split: count per class, then images (the articles' dataset tables).

    For classification the counts are images, so `images` is their sum; for
    detection they are objects and `images` is given.
    """
    classes = sorted({c for per_split in counts.values() for c in per_split})
    rows = [
        (split, *(per_split.get(c, 0) for c in classes), (images or {}).get(split, sum(per_split.values())))
        for split, per_split in counts.items()
    ]
    return format_table(("split", *classes, "images"), rows)


def runtime_rows(result: dict) -> list[dict]:
    """The record's runtime rows, timed ones fastest first, then the rest in their order."""
    rows = list((result.get("inference") or {}).get("runtimes") or ())
    timed = [r for r in rows if (r.get("inference") or {}).get("mean_ms")]
    return sorted(timed, key=lambda r: r["inference"]["mean_ms"]) + [r for r in rows if r not in timed]


def _runtime_accuracy(task: str, accuracy: dict) -> tuple[str, str]:
    """(accuracy, agreement with tf) cells of a runtime row."""
    if task == "detect":
        iou, share = accuracy.get("mean_iou_vs_tf"), accuracy.get("matched_share")
        agreement = "-" if share is None else f"IoU {number(iou)}, {share:.0%} matched"
        return f"{number(accuracy.get('map_50_95'))} / {number(accuracy.get('map_50'))}", agreement
    agree = accuracy.get("agreement_with_tf")
    return number(accuracy.get("test_accuracy")), "-" if agree is None else f"{agree:.1%}"


def _runtime_precision(row: dict) -> str:
    """What the runtime runs, and what it was asked for where that differs."""
    effective, asked = row.get("precision"), row.get("precision_requested")
    if not effective:  # never ran
        return "-"
    return effective if not asked or asked == effective else f"{effective} (asked {asked})"


RUNTIME_HEADERS = ("runtime", "status", "device", "precision", "threads", "size MB", "export s", "mean ms", "± 95 %",
                   "p50 ms", "p99 ms", "images/s", "vs tf")


def runtime_cells(result: dict) -> tuple[tuple[str, ...], list[tuple], list[str]]:
    """(headers, one row per runtime fastest first with its ratio to tf where both ran on one kind of device,
    the reasons of rows not ok)."""
    from l40sbench.runtimes.measure import reference_for

    rows = runtime_rows(result)
    timed = [r for r in rows if (r.get("inference") or {}).get("mean_ms")]
    named = (result.get("notes") or {}).get("reference_runtime", "tf")  # an ONNX file's is onnxruntime
    lines = []
    for r in rows:
        inf = r.get("inference") or {}
        accuracy, agreement = _runtime_accuracy(result["task"], r.get("accuracy") or {})
        tf = reference_for(r, timed, named)  # tf, or tf with the GPUs hidden for a CPU row on a GPU machine
        speedup = tf["inference"]["mean_ms"] / inf["mean_ms"] if tf is not None and inf.get("mean_ms") else None
        lines.append((r["runtime"], r["status"], r.get("device") or "-", _runtime_precision(r), r.get("threads") or "-",
                      number(r.get("size_mb"), 1), number(r.get("export_seconds"), 1), number(inf.get("mean_ms")),
                      spread(inf.get("interval_ms")),
                      number(inf.get("p50_ms")), p99(inf), number(inf.get("images_per_second")),
                      "-" if speedup is None else f"{speedup:.2f}x", accuracy, agreement))
    accuracy_name = "mAP .5:.95 / .5" if result["task"] == "detect" else "test acc"
    reasons = [f"{r['runtime']}: {r['reason']}" for r in rows if r.get("reason")]
    headers = (*RUNTIME_HEADERS[:-1], f"vs {named}", accuracy_name, f"agreement with {named}")
    files = [((r.get("inference") or {}).get("stages_mean_ms") or {}).get("file_to_label") for r in rows]
    if any(files):  # classify's rows also timed each file's way to a label (its read, decode and resize)
        return (*headers, "file to label ms"), [(*line, number(f)) for line, f in zip(lines, files)], reasons
    return headers, lines, reasons


def runtime_table(result: dict) -> str:
    """One line per runtime, fastest first, with its ratio to tf; empty when tf alone ran."""
    headers, lines, reasons = runtime_cells(result)
    if len(lines) < 2:
        return ""
    return "\n".join([format_table(headers, lines), *(f"  {reason}" for reason in reasons)])


SCALING_HEADERS = ("devices", "kind", "global batch", "epoch s", "epoch from", "speed-up", "efficiency")


def scaling_cells(records: Sequence[dict]) -> list[tuple]:
    """One row per device count of a --devices list, fewest first."""
    rows = []
    for r in sorted(records, key=lambda r: r["scaling"]["devices"]):
        s, d = r["scaling"], r["devices"]
        rows.append((s["devices"], d.get("kind", "-").split(" (")[0], d.get("global_batch", "-"),
                     number(s["epoch_seconds"]), s["epoch_seconds_from"], number(s["speedup"], 2),
                     "-" if s["efficiency"] is None else f"{100 * s['efficiency']:.1f} %"))
    return rows


def scaling_table(records: Sequence[dict]) -> str:
    notes = sorted({r["scaling"]["note"] for r in records if r["scaling"].get("note")})
    return "\n".join([format_table(SCALING_HEADERS, scaling_cells(records)), *notes])


