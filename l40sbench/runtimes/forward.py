"""Each runtime's exported model loaded as one call: uint8 image batch [1, H, W, 3] in, named NumPy outputs out.

Runs in the timing child, which imports only the runtime it times. The call holds what serving one
decoded image costs on that runtime: the input handed over, the model run, the outputs copied back.
Every loader sets its threads and precision explicitly and reads back what the runtime will run. Each
runtime's registry entry (runtimes.registry) names its loader; `registry.load` calls it.

A loader's arguments: `precision`, the --runtime-precision asked for (only OpenVINO takes it here; LiteRT's
is in the file); `file_precision`, what the exported file fixes (export.Artifact.precision); `xla`, compile
tf's Keras forward with XLA, as the run did (tf only).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

Call = Callable[["np.ndarray"], dict]
# OpenVINO's names for the --runtime-precision values, and back.
OPENVINO_HINTS = {"fp32": "f32", "bf16": "bf16", "fp16": "f16"}
OPENVINO_NAMES = {"f32": "fp32", "bf16": "bf16", "f16": "fp16"}


@dataclass(frozen=True)
class LoadedModel:
    call: Call
    precision: str  # what the runtime reports it will compute in
    threads: int
    version: str
    settings: dict = field(default_factory=dict)
    device: str = "CPU"  # where the runtime computes: CPU or GPU (a row's ratio is drawn only on one device)


def channels_first(shape) -> bool:
    """Whether an image input of `shape` is (batch, 3, height, width), as PyTorch exports to ONNX take it."""
    return len(shape) == 4 and shape[1] == 3 and shape[3] != 3


def tf_device_kind() -> str:
    """Where TensorFlow places a model's ops in this process: the kind of its first device."""
    from l40sbench.backends.tf_device import devices

    return devices()[0].kind


def load_tf(path: Path, precision: str, threads: int, file_precision: str, xla: bool = False) -> LoadedModel:
    """tf as the run timed it: the Keras model (model.keras) in a tf.function taking any batch, or the
    detector's serving signature (a SavedModel folder)."""
    if path.suffix != ".keras":
        return load_savedmodel(path, precision, threads, file_precision)
    import keras
    import tensorflow as tf

    import l40sbench.backends.layers  # noqa: F401  (registers the Preprocess layer model.keras holds)

    _tf_threads(threads)
    model = keras.saving.load_model(path)
    signature = [tf.TensorSpec([None, *model.input_shape[1:]], tf.uint8)]
    compiled = tf.function(lambda x: model(x, training=False), input_signature=signature, jit_compile=xla)

    def call(images: np.ndarray) -> dict:
        return {"probabilities": compiled(tf.convert_to_tensor(images)).numpy()}

    intra = tf.config.threading.get_intra_op_parallelism_threads()
    return LoadedModel(call, file_precision, intra or threads, tf.__version__,
                       {"compile": "tf.function" + (" (XLA)" if xla else ""), "intra_op_threads": intra},
                       tf_device_kind())


def _tf_threads(threads: int) -> None:
    import tensorflow as tf

    try:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
    except RuntimeError:  # TensorFlow already ran in this process (not so in the timing child): it keeps its pool
        pass


def load_savedmodel(path: Path, precision: str, threads: int, file_precision: str, xla: bool = False) -> LoadedModel:
    import tensorflow as tf

    _tf_threads(threads)
    intra = tf.config.threading.get_intra_op_parallelism_threads()  # 0: TensorFlow's default, one per core
    signature = tf.saved_model.load(str(path)).signatures["serving_default"]
    ((name, spec),) = signature.structured_input_signature[1].items()

    def call(image: np.ndarray) -> dict:
        tensor = tf.convert_to_tensor(image)  # a signature taking float pixels gets them cast, inside the call
        fed = tensor if spec.dtype == tensor.dtype else tf.cast(tensor, spec.dtype)
        return {key: value.numpy() for key, value in signature(**{name: fed}).items()}

    return LoadedModel(call, file_precision, intra or threads, tf.__version__,
                       {"signature": "serving_default", "intra_op_threads": intra}, tf_device_kind())


def load_onnxruntime(path: Path, precision: str, threads: int, file_precision: str, xla: bool = False) -> LoadedModel:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    inputs = session.get_inputs()
    if len(inputs) != 1:
        raise ValueError(f"the ONNX file takes {len(inputs)} inputs ({', '.join(i.name for i in inputs)}), not one "
                         "image: its converter left constants of the model as inputs")
    (model_input,) = inputs
    names = [output.name for output in session.get_outputs()]
    dtype = {"tensor(float)": "float32", "tensor(float16)": "float16"}.get(model_input.type)
    transposed = channels_first(model_input.shape)

    def call(image: np.ndarray) -> dict:
        # a file that takes float pixels gets them cast (and NCHW where it takes that), inside the timed call
        image = image.transpose(0, 3, 1, 2) if transposed else image
        fed = image.astype(dtype) if dtype else image
        return dict(zip(names, session.run(None, {model_input.name: fed}), strict=True))

    return LoadedModel(call, file_precision, threads, ort.__version__,
                  {"providers": session.get_providers(), "graph_optimization": "ORT_ENABLE_ALL",
                   "inter_op_threads": 1})


def load_openvino(path: Path, precision: str, threads: int, file_precision: str, xla: bool = False) -> LoadedModel:
    import numpy as np
    import openvino as ov

    compiled = ov.Core().compile_model(str(path), "CPU", {
        "INFERENCE_PRECISION_HINT": OPENVINO_HINTS[precision], "PERFORMANCE_HINT": "LATENCY",
        "INFERENCE_NUM_THREADS": threads,
    })
    effective = compiled.get_property("INFERENCE_PRECISION_HINT").get_type_name()
    request = compiled.create_infer_request()
    names = [output.get_any_name() for output in compiled.outputs]
    shape = compiled.inputs[0].get_partial_shape()
    transposed = shape.rank.is_static and channels_first([d.get_length() if d.is_static else None for d in shape])

    def call(image: np.ndarray) -> dict:
        # OpenVINO converts the uint8 pixels to the input's type itself; a layout of NCHW is the caller's
        results = request.infer({0: image.transpose(0, 3, 1, 2) if transposed else image})
        # The request reuses its output buffers: copy them out, as every other runtime hands over copies.
        return {name: np.array(results[output]) for name, output in zip(names, compiled.outputs, strict=True)}

    return LoadedModel(call, OPENVINO_NAMES.get(effective, effective), int(compiled.get_property("INFERENCE_NUM_THREADS")),
                  ov.get_version(), {"device": "CPU", "PERFORMANCE_HINT": "LATENCY",
                                     "INFERENCE_PRECISION_HINT": effective})


def load_litert(path: Path, precision: str, threads: int, file_precision: str, xla: bool = False) -> LoadedModel:
    import ai_edge_litert
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=str(path), num_threads=threads)
    signatures = interpreter.get_signature_list()
    key = "serving_default" if "serving_default" in signatures else next(iter(signatures))
    runner = interpreter.get_signature_runner(key)
    (name,) = signatures[key]["inputs"]

    def call(image: np.ndarray) -> dict:
        return runner(**{name: image})  # the runner resizes for a new image size and returns copies

    version = getattr(ai_edge_litert, "__version__", None) or _package_version("ai-edge-litert")
    return LoadedModel(call, file_precision, threads, version, {"delegate": "XNNPACK (default)", "signature": key})


def _package_version(name: str) -> str:
    from importlib.metadata import version

    return version(name)
