"""The comparable rows of a result record (report.compare judges them): a run's own row, one per inference
runtime, one per LoadGen test, or one per configuration of a sweep, each with its figures and their samples."""

from __future__ import annotations

from dataclasses import dataclass, field

from l40sbench.core.env import gpu_models
from l40sbench.report.inputs import backend, replicas
from l40sbench.report.tables import clock_epoch_seconds, wall_epoch_seconds

KEY_FIELDS = ("task", "model", "batch", "devices", "precision", "image size", "backend")
LOWER, HIGHER, ACCURACY = "time", "rate", "accuracy"


@dataclass(frozen=True)
class Figure:
    """One figure of a row: its value, whether lower or higher is better, and the samples it is drawn from.

    `samples` None: none are known (judged on the value alone); `statistic` is which statistic of the samples
    the figure is (core.intervals.STATISTICS); `inverse`: the figure is a rate over samples that are times.
    """

    value: float | None
    kind: str
    samples: tuple[float, ...] | None = None
    statistic: str = "mean"
    inverse: bool = False


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
        return " ".join([str(task), str(model), *(f"{n} {v}" for n, v in zip(KEY_FIELDS[2:], rest) if v is not None)])


def _samples(values) -> tuple[float, ...] | None:
    return tuple(float(v) for v in values) if values else None


def _record_facts(record: dict) -> dict:
    """What every line of a record shares: its peak and its stability verdict."""
    env = record.get("env") or {}
    stability = record.get("stability") or {}
    bursts = [rate for b in (stability.get("speed") or {}).get("bursts") or ()
              for rate in (b.get("samples_gflops") or ([b["gflops"]] if b.get("gflops") else []))]
    gpus = gpu_models(env)
    kind = (env.get("peak") or {}).get("device_kind")
    device = f"GPU {gpus[0]}" if gpus else ("GPU" if kind == "GPU" else "CPU" if kind or env.get("cpu") else "")
    return {"peak": env.get("peak") if env.get("peak", {}).get("matmul") else None,
            "burst_samples": tuple(float(rate) for rate in bursts),
            "stability": stability.get("verdict", ""), "device": device}


def _latency_figures(inference: dict) -> dict:
    times = _samples(inference.get("times_ms"))
    return {
        "inference ms/image": Figure(inference.get("mean_ms"), LOWER, times),
        "p50 ms": Figure(inference.get("p50_ms"), LOWER, times, "median"),
        "p99 ms": Figure(inference.get("p99_ms"), LOWER, times, "p99"),
        "images/s": Figure(inference.get("images_per_second"), HIGHER, times, inverse=True),
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
                steps = _samples(r.get("step_ms"))
                figures = {"images/s": Figure(r["images_per_second"], HIGHER, steps, inverse=True),
                           "step ms": Figure(r.get("step_ms_mean"), LOWER, steps)}
            out.append(Line((f"synthetic-{r['mode']}", r["model"], r["per_device_batch"], r["devices"],
                             r.get("precision"), None, r.get("backend") or backend(record)), r["status"], figures,
                            **_record_facts(record)))
        return out
    config, train, inference = record.get("config") or {}, record.get("train") or {}, record.get("inference") or {}
    epochs = _samples(train.get("epoch_seconds"))
    one = (lambda value: (value,) if value is not None else None) if epochs else (lambda value: None)
    figures = {
        "epoch s (wall / epochs)": Figure(wall_epoch_seconds(train), LOWER, one(wall_epoch_seconds(train))),
        "epoch s (clock mean)": Figure(clock_epoch_seconds(train), LOWER, epochs),
        "first epoch s": Figure(train.get("first_epoch_seconds"), LOWER, one(train.get("first_epoch_seconds"))),
        "steady epoch s": Figure(train.get("steady_epoch_seconds"), LOWER, epochs[1:] if epochs else None),
        **_latency_figures(inference),
    }
    for name, value in (record.get("accuracy") or {}).items():
        if isinstance(value, (int, float)):
            figures[name] = Figure(value, ACCURACY)
    reference = _reference(record)
    key = (record.get("task"), record.get("base"), config.get("batch_size"), _devices(record), config.get("precision"),
           config.get("image_size"), backend(record)) if reference == "tf" else _runtime_key(record, reference, "fp32")
    return [Line(key, "ok" if record.get("complete", True) else "incomplete", figures, **_record_facts(record)),
            *_runtime_lines(record), *_scenario_lines(record)]


def _reference(record: dict) -> str:
    """The runtime the record's own inference figures are: tf, or onnxruntime for an ONNX file (infer --model)."""
    return (record.get("notes") or {}).get("reference_runtime", "tf")


def _runtime_key(record: dict, runtime: str, precision: str) -> tuple:
    config = record.get("config") or {}
    return (f"{record.get('task')} on {runtime}", record.get("base"), 1, _gpus(record), precision,
            config.get("image_size"), backend(record))


def _runtime_lines(record: dict) -> list[Line]:
    """One line per inference runtime other than the reference, tf (its figures are the record's own line)."""
    out = []
    for row in (record.get("inference") or {}).get("runtimes") or ():
        if row["runtime"] == _reference(record):
            continue
        figures = _latency_figures(row.get("inference") or {})
        for name in ("test_accuracy", "agreement_with_tf", "map_50_95", "map_50"):
            value = (row.get("accuracy") or {}).get(name)
            if isinstance(value, (int, float)):
                figures[name] = Figure(value, ACCURACY)
        key = _runtime_key(record, row["runtime"], row.get("precision_requested"))
        out.append(Line(key, "ok" if row["status"] == "ok" else row["status"], figures, **_record_facts(record)))
    return out


def _scenario_lines(record: dict) -> list[Line]:
    """One line per LoadGen test, matched on runtime, scenario and settings; VALID is its "ok"."""
    config, out = record.get("config") or {}, []
    for entry in (record.get("inference") or {}).get("scenarios") or ():
        settings, latency = entry["settings"], entry.get("latency_ms") or {}
        chosen = [f"workers {settings.get('workers', 1)}"]
        if entry["scenario"] == "server":
            chosen.append(f"bound {settings.get('latency_bound_ms'):g} ms")
            chosen.append("max rate" if settings.get("find_max_qps") else f"{settings.get('target_qps'):g} qps")
        if entry["scenario"] == "multi-stream":
            chosen.append(f"{settings.get('samples_per_query')} per query")
        if entry.get("mode", "performance") != "performance":
            chosen.append(f"{entry['mode']} mode")
        figures = {"samples/s": Figure(entry.get("samples_per_second"), HIGHER),
                   "p50 ms": Figure(latency.get("p50"), LOWER), "p99 ms": Figure(latency.get("p99"), LOWER)}
        if entry.get("search"):
            figures["max VALID qps"] = Figure(entry["search"]["max_valid_qps"], HIGHER)
        key = (f"{record.get('task')} {entry['scenario']} ({', '.join(chosen)}) on {entry['runtime']}",
               record.get("base"), settings.get("batch", 1), _gpus(record), entry.get("precision_requested"),
               config.get("image_size"), backend(record))
        out.append(Line(key, "ok" if entry["result"] == "VALID" else entry["result"], figures,
                        **_record_facts(record)))
    return out
