"""The fine-tuned model in each runtime's format, by the libraries' own exporters and converters.

Classification: Keras `Model.export(format=...)` from the model in memory. Detection: the SavedModel
the run wrote, through tf2onnx, `openvino.convert_model` and the TFLite converter. Nothing here
converts a graph itself. One exporter (a Keras model) and one converter (a SavedModel) per runtime, each
named by that runtime's registry entry (runtimes.registry). Each raises on failure; the caller turns that
into the row's reason.
"""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ONNX_OPSET = 17
CONVERTER_TIMEOUT_S = 1800.0  # a converter still working after this is given up on


@dataclass(frozen=True)
class Artifact:
    """One exported model: where it is, how long the export took, its size, and what made it."""

    path: Path
    export_seconds: float
    size_mb: float
    exporter: str
    precision: str  # what the file itself fixes ("fp32", or LiteRT's quantised weights)


def size_mb(path: Path) -> float:
    """Bytes on disk / 2**20: the file, or every file under a folder (an OpenVINO .xml counts its .bin)."""
    path = Path(path)
    if path.is_dir():
        files = [p for p in path.rglob("*") if p.is_file()]
    else:
        files = [path] + ([path.with_suffix(".bin")] if path.suffix == ".xml" else [])
    return sum(p.stat().st_size for p in files if p.exists()) / 2**20


def litert_options(precision: str) -> tuple[dict, str]:
    """TFLite converter settings for a precision, and the precision the model then runs in on XNNPACK."""
    import tensorflow as tf

    if precision == "fp16":  # float16 weights; XNNPACK dequantises them to fp32 when it loads the model
        return ({"optimizations": [tf.lite.Optimize.DEFAULT], "target_spec": {"supported_types": [tf.float16]}},
                "fp32 compute (fp16 weights, dequantised at load)")
    if precision == "int8":  # dynamic range: int8 weights, activations quantised per call
        return {"optimizations": [tf.lite.Optimize.DEFAULT]}, "int8 dynamic-range (int8 weights, fp32 activations)"
    return {}, "fp32"


def _timed(path: Path, exporter: str, precision: str, work) -> Artifact:
    """An exporter's `work` writing `path`, timed; what it wrote is removed where it fails (a full disk): no half
    of a model is left in the folder (an OpenVINO model is its .xml and the .bin beside it)."""
    from l40sbench.core.records import remove

    started = time.perf_counter()
    try:
        work()
    except BaseException:
        for written in (path, path.with_suffix(".bin")) if path.suffix == ".xml" else (path,):
            remove(written)
        raise
    seconds = time.perf_counter() - started
    if not path.exists():
        raise RuntimeError(f"{exporter} wrote nothing at {path}")
    return Artifact(path, seconds, size_mb(path), exporter, precision)


def _keras_export(model, path: Path, options: dict, fixed: str) -> Artifact:
    exporter = f"keras Model.export(format={options['format']!r})"
    return _timed(path, exporter, fixed, lambda: model.export(str(path), verbose=False, **options))


def keras_to_saved_model(model, precision: str, out_dir: Path) -> Artifact:
    return _keras_export(model, out_dir / "saved_model", {"format": "tf_saved_model"}, "fp32")


def keras_to_onnx(model, precision: str, out_dir: Path) -> Artifact:
    """Keras' ONNX export; where it leaves constants of the model as graph inputs (EfficientNet's Normalization
    mean and variance, with Keras 3.15), the model's SavedModel through tf2onnx instead, which freezes them."""
    artifact = _keras_export(model, out_dir / "model.onnx", {"format": "onnx", "opset_version": ONNX_OPSET}, "fp32")
    extra = _onnx_inputs(artifact.path) - 1
    if extra <= 0:
        return artifact
    saved = keras_to_saved_model(model, precision, out_dir / "onnx_from")
    converted = saved_model_to_onnx(saved.path, precision, out_dir, "serving_default")
    return Artifact(converted.path, artifact.export_seconds + saved.export_seconds + converted.export_seconds,
                    converted.size_mb, f"{saved.exporter}, then {converted.exporter} (Keras' ONNX export left "
                    f"{extra} constant(s) of the model as inputs)", "fp32")


def _onnx_inputs(path: Path) -> int:
    """The graph inputs an ONNX file asks its caller for (those no initializer fills)."""
    import onnx

    graph = onnx.load(str(path), load_external_data=False).graph
    filled = {initializer.name for initializer in graph.initializer}
    return sum(1 for graph_input in graph.input if graph_input.name not in filled)


def keras_to_openvino(model, precision: str, out_dir: Path) -> Artifact:
    return _keras_export(model, out_dir / "model.xml", {"format": "openvino"}, "fp32")


def keras_to_litert(model, precision: str, out_dir: Path) -> Artifact:
    settings, fixed = litert_options(precision)
    return _keras_export(model, out_dir / "model.tflite", {"format": "litert", **settings}, fixed)


def saved_model_as_is(saved_model: Path, precision: str, out_dir: Path, signature: str) -> Artifact:
    """The run's own SavedModel, reloaded as it is."""
    return Artifact(saved_model, 0.0, size_mb(saved_model), "tf.saved_model.save (the run's own)", "fp32")


def saved_model_to_onnx(saved_model: Path, precision: str, out_dir: Path, signature: str) -> Artifact:
    path = out_dir / "model.onnx"
    return _timed(path, f"tf2onnx.convert --saved-model --opset {ONNX_OPSET}", "fp32",
                  lambda: _tf2onnx(saved_model, signature, path))


def saved_model_to_openvino(saved_model: Path, precision: str, out_dir: Path, signature: str) -> Artifact:
    path = out_dir / "model.xml"

    def convert():
        import openvino as ov

        # compress_to_fp16=False: save_model would otherwise round the weights to fp16 on disk.
        ov.save_model(ov.convert_model(str(saved_model)), str(path), compress_to_fp16=False)

    return _timed(path, "openvino.convert_model", "fp32", convert)


def saved_model_to_litert(saved_model: Path, precision: str, out_dir: Path, signature: str) -> Artifact:
    path = out_dir / "model.tflite"
    settings, fixed = litert_options(precision)

    def convert():
        import tensorflow as tf

        converter = tf.lite.TFLiteConverter.from_saved_model(str(saved_model), signature_keys=[signature])
        converter.optimizations = settings.get("optimizations", [])
        for key, value in settings.get("target_spec", {}).items():
            setattr(converter.target_spec, key, value)
        path.write_bytes(converter.convert())

    return _timed(path, "tf.lite.TFLiteConverter.from_saved_model", fixed, convert)


def _tf2onnx(saved_model: Path, signature: str, path: Path) -> None:
    """tf2onnx's own command line, in a child process: a converter crash costs only this row."""
    command = [sys.executable, "-m", "tf2onnx.convert", "--saved-model", str(saved_model), "--signature_def",
               signature, "--opset", str(ONNX_OPSET), "--output", str(path)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=CONVERTER_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"tf2onnx did not finish within {CONVERTER_TIMEOUT_S:.0f} s") from None
    if done.returncode != 0:
        errors = [line for line in done.stderr.splitlines() if "Error" in line or "error" in line]
        raise RuntimeError((errors or done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1])
