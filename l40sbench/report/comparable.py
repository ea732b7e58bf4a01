"""The comparable rows of a result record (report.compare judges them): a run's own row, one per inference
runtime, one per LoadGen test, or one per configuration of a sweep, each with its figures and their samples."""

from __future__ import annotations

from dataclasses import dataclass, field

from l40sbench.core.env import gpu_models
from l40sbench.report.cells import input_path
from l40sbench.report.inputs import backend, replicas
from l40sbench.report.tables import clock_epoch_seconds, wall_epoch_seconds

KEY_FIELDS = ("task", "model", "batch", "devices", "precision", "image size", "backend", "input")
DEFAULT_INPUT = "cached"  # not named in a row's label: every run before --input read its images so
LOWER, HIGHER, ACCURACY = "time", "rate", "accuracy"


@dataclass(frozen=True)
class Figure:
    """One figure of a row: its value, whether lower or higher is better, and the samples it is drawn from.

    `samples` None: none are known (judged on the value alone); `statistic` is which statistic of the samples
    the figure is (core.intervals.STATISTICS); `inverse`: the figure is a rate over samples that are times;
    `governed`: the utilisation of the peak by the work the figure times (a machine's peak explains it only
    from report.compare.GOVERNS on).
    """

    value: float | None
    kind: str
    samples: tuple[float, ...] | None = None
    statistic: str = "mean"
    inverse: bool = False
    governed: float | None = None  # the share of its device's peak its work ran at (None: not known)


@dataclass(frozen=True)
class Line:
    """One comparable row of a result: its key, its status, its figures (name -> Figure), the record's
    measured peak (env.peak), the float32 matmul rates the stability guard's bursts sampled during the run, the
    guard's verdict ("" where it has none) and the device it ran on ("CPU", or "GPU <model>"; "" unknown)."""

    key: tuple
    status: str = "ok"
    figures: dict = field(default_factory=dict)
    peak: dict | None = None
    burst_samples: tuple[float, ...] = ()
    stability: str = ""
    device: str = ""

    @property
    def peak_gflops(self) -> tuple[str | None, float | None]:
        """(which peak, its GFLOP/s): the peak of this row's precision (core.utilisation.peak_for)."""
        from l40sbench.core.utilisation import peak_for

        return peak_for(self.peak, self.key[KEY_FIELDS.index("precision")] or "fp32")

    def label(self) -> str:
        task, model, *rest = self.key
        return " ".join([str(task), str(model), *(f"{n} {v}" for n, v in zip(KEY_FIELDS[2:], rest)
                                                  if v is not None and (n, v) != ("input", DEFAULT_INPUT))])


def _samples(values) -> tuple[float, ...] | None:
    return tuple(float(v) for v in values) if values else None


def _bursts(stability: dict) -> tuple[float, ...]:
    return tuple(float(rate) for b in (stability.get("speed") or {}).get("bursts") or ()
                 for rate in (b.get("samples_gflops") or ([b["gflops"]] if b.get("gflops") else [])))


def _record_device(record: dict) -> str:
    """The device a record's own figures ran on: "GPU <model>", "GPU", "CPU", or "" unknown."""
    env = record.get("env") or {}
    gpus = gpu_models(env)
    kind = (env.get("peak") or {}).get("device_kind")
    return f"GPU {gpus[0]}" if gpus else ("GPU" if kind == "GPU" else "CPU" if kind or env.get("cpu") else "")


def _facts(record: dict, device: str = "") -> dict:
    """What a row shares with its record: the peak and bursts of the device the row ran on, the run's stability
    verdict, and that device. `device` "CPU" on a GPU record (a runtime served on the host's CPU) takes the
    CPU's own peak (env.cpu_peak, its samples the bursts) where the record has it, else none: a GPU's peak
    and bursts never stand for a CPU row, nor a CPU's for a GPU row."""
    env, stability = record.get("env") or {}, record.get("stability") or {}
    own = _record_device(record)
    row_kind = device.split()[0] if device else ""
    if not device or not own or row_kind == own.split()[0]:  # the row ran where the record's own figures did
        peak = env.get("peak") if (env.get("peak") or {}).get("matmul") else None
        return {"peak": peak, "burst_samples": _bursts(stability), "stability": stability.get("verdict", ""),
                "device": own or device}
    cpu = env.get("cpu_peak") if row_kind == "CPU" else None
    samples = tuple(((cpu or {}).get("matmul") or {}).get("float32", {}).get("samples_gflops") or ())
    return {"peak": cpu if (cpu or {}).get("matmul") else None, "burst_samples": samples,
            "stability": stability.get("verdict", ""), "device": "CPU" if row_kind == "CPU" else own}


def _share(record: dict, line_peak: dict | None, precision: str, images_per_second: float | None) -> float | None:
    """The share of `line_peak` (of `precision`) that images_per_second forward passes of the record's model
    reach; None where a count, a rate or the peak is missing."""
    from l40sbench.core.utilisation import FALLBACK, peak_for

    per_image = (record.get("utilisation") or {}).get("forward_gflops_per_image")
    name, gflops = peak_for(line_peak, precision or "fp32")
    if not (per_image and images_per_second and gflops) or name.startswith(FALLBACK):
        return None
    return per_image * images_per_second / gflops


def _latency_figures(inference: dict, governed: float | None = None) -> dict:
    times = _samples(inference.get("times_ms"))
    return {
        "inference ms/image": Figure(inference.get("mean_ms"), LOWER, times, governed=governed),
        "p50 ms": Figure(inference.get("p50_ms"), LOWER, times, "median", governed=governed),
        "p99 ms": Figure(inference.get("p99_ms"), LOWER, times, "p99", governed=governed),
        "images/s": Figure(inference.get("images_per_second"), HIGHER, times, inverse=True, governed=governed),
    }
def _gpus(record: dict) -> int:
    return len(gpu_models(record.get("env") or {})) or 1


def _devices(record: dict) -> int:
    """The replicas a run trained on (its devices block); an older record's GPU count."""
    return replicas(record) if record.get("devices") else _gpus(record)


def lines(record: dict) -> list[Line]:
    """The comparable rows of one result record (a run, or each configuration of a sweep)."""
    if record.get("task") == "synthetic":
        out = []
        for r in record.get("rows", ()):
            figures = {}
            if r.get("images_per_second"):
                steps, share = _samples(r.get("step_ms")), r.get("utilisation")
                figures = {"images/s": Figure(r["images_per_second"], HIGHER, steps, inverse=True, governed=share),
                           "step ms": Figure(r.get("step_ms_mean"), LOWER, steps, governed=share)}
            out.append(Line((f"synthetic-{r['mode']}", r["model"], r["per_device_batch"], r["devices"],
                             r.get("precision"), None, r.get("backend") or backend(record)), r["status"], figures,
                            **_facts(record)))
        return out
    config, train, inference = record.get("config") or {}, record.get("train") or {}, record.get("inference") or {}
    epochs, shares = _samples(train.get("epoch_seconds")), record.get("utilisation") or {}
    one = (lambda value: (value,) if value is not None else None) if epochs else (lambda value: None)
    trained = shares.get("train")
    figures = {
        "epoch s (wall / epochs)": Figure(wall_epoch_seconds(train), LOWER, one(wall_epoch_seconds(train)),
                                          governed=trained),
        "epoch s (clock mean)": Figure(clock_epoch_seconds(train), LOWER, epochs, governed=trained),
        "first epoch s": Figure(train.get("first_epoch_seconds"), LOWER, one(train.get("first_epoch_seconds")),
                                governed=trained),
        "steady epoch s": Figure(train.get("steady_epoch_seconds"), LOWER, epochs[1:] if epochs else None,
                                 governed=trained),
        **_latency_figures(inference, shares.get("inference")),
    }
    for name, value in (record.get("accuracy") or {}).items():
        if isinstance(value, (int, float)):
            figures[name] = Figure(value, ACCURACY)
    reference = _reference(record)
    key = (record.get("task"), record.get("base"), config.get("batch_size"), _devices(record), config.get("precision"),
           config.get("image_size"), backend(record), None if record.get("source") else input_path(record)
           ) if reference == "tf" else _runtime_key(record, reference, "fp32")  # a study's path: not stated
    return [Line(key, "ok" if record.get("complete", True) else "incomplete", figures, **_facts(record)),
            *_runtime_lines(record), *_scenario_lines(record)]


def _reference(record: dict) -> str:
    """The runtime the record's own inference figures are: tf, or onnxruntime for an ONNX file (infer --model)."""
    return (record.get("notes") or {}).get("reference_runtime", "tf")


def _runtime_key(record: dict, runtime: str, precision: str) -> tuple:
    """A runtime row's key: it serves one image at a time on one device of its own, whatever the host holds."""
    config = record.get("config") or {}
    return (f"{record.get('task')} on {runtime}", record.get("base"), 1, 1, precision, config.get("image_size"),
            backend(record))


def _row_device(record: dict, row: dict | None) -> str:
    """The device a runtime row ran on, in Line.device's words ("" where the row does not say)."""
    kind = (row or {}).get("device") or ""
    return "CPU" if kind == "CPU" else (_record_device(record) if kind == "GPU" else "")


def _runtime_lines(record: dict) -> list[Line]:
    """One line per inference runtime other than the reference, tf (its figures are the record's own line)."""
    out = []
    for row in (record.get("inference") or {}).get("runtimes") or ():
        if row["runtime"] == _reference(record):
            continue
        facts = _facts(record, _row_device(record, row))
        inference = row.get("inference") or {}
        figures = _latency_figures(inference, _share(record, facts["peak"], row.get("precision_requested"),
                                                     inference.get("images_per_second")))
        for name in ("test_accuracy", "agreement_with_tf", "map_50_95", "map_50"):
            value = (row.get("accuracy") or {}).get(name)
            if isinstance(value, (int, float)):
                figures[name] = Figure(value, ACCURACY)
        key = _runtime_key(record, row["runtime"], row.get("precision_requested"))
        out.append(Line(key, "ok" if row["status"] == "ok" else row["status"], figures, **facts))
    return out


def _scenario_lines(record: dict) -> list[Line]:
    """One line per LoadGen test, matched on runtime, scenario and settings; VALID is its "ok"."""
    config, out = record.get("config") or {}, []
    inference = record.get("inference") or {}
    served = {row["runtime"]: row for row in inference.get("runtimes") or ()}
    for entry in inference.get("scenarios") or ():
        settings, latency = entry["settings"], entry.get("latency_ms") or {}
        chosen = [f"workers {settings.get('workers', 1)}"]
        if entry["scenario"] == "server":
            chosen.append(f"bound {settings.get('latency_bound_ms'):g} ms")
            chosen.append("max rate" if settings.get("find_max_qps") else f"{settings.get('target_qps'):g} qps")
        if entry["scenario"] == "multi-stream":
            chosen.append(f"{settings.get('samples_per_query')} per query")
        if entry.get("mode", "performance") != "performance":
            chosen.append(f"{entry['mode']} mode")
        facts = _facts(record, _row_device(record, served.get(entry["runtime"])))
        share = _share(record, facts["peak"], entry.get("precision_requested"), entry.get("samples_per_second"))
        figures = {"samples/s": Figure(entry.get("samples_per_second"), HIGHER, governed=share),
                   "p50 ms": Figure(latency.get("p50"), LOWER, governed=share),
                   "p99 ms": Figure(latency.get("p99"), LOWER, governed=share)}
        if entry.get("search"):
            figures["max VALID qps"] = Figure(entry["search"]["max_valid_qps"], HIGHER, governed=share)
        key = (f"{record.get('task')} {entry['scenario']} ({', '.join(chosen)}) on {entry['runtime']}",
               record.get("base"), settings.get("batch", 1), 1, entry.get("precision_requested"),
               config.get("image_size"), backend(record))
        out.append(Line(key, "ok" if entry["result"] == "VALID" else entry["result"], figures, **facts))
    return out
