"""An ONNX file: what its one image input takes, read from its graph, and the file the runtimes are fed.

Its layout is read from the input's shape (a dimension of 3 where the channels go), else from the graph (the
input feeding a Conv directly is NCHW; through a Transpose to NCHW, NHWC), else --layout says it. Symbolic
height, width and channels are resolved from --image-size (else the model's own, else 224) in the file the
runtimes load, its batch left free; a scaling (modelfile.scaling) goes in as nodes before the model's own, so
onnxruntime and OpenVINO run the same graph. Nothing converts the model itself.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from l40sbench.errors import UserError, said
from l40sbench.modelfile import detector, detector_formats
from l40sbench.modelfile.files import LAYOUTS, UINT8, ModelFile, square_image

PIXELS = ("tensor(uint8)", "tensor(float)", "tensor(float16)")  # what the loaders feed (runtimes.forward)
FED = "model.onnx"
READERS = ("onnxruntime", "openvino")  # the runtimes that load an ONNX file (nothing converts from ONNX here)


def _dims(value_info) -> list:
    """An input's dimensions: an int where fixed, else its symbol (a string) or None."""
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
            for d in value_info.type.tensor_type.shape.dim]


def _graph_input(model):
    filled = {initializer.name for initializer in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in filled]


def _layout_from_graph(model, name: str) -> str | None:
    """NCHW where the input feeds a Conv, NHWC where it is transposed to NCHW first; None otherwise."""
    for node in model.graph.node:
        if name not in node.input:
            continue
        if node.op_type == "Conv":
            return "nchw"
        if node.op_type == "Transpose":
            perm = next((list(a.ints) for a in node.attribute if a.name == "perm"), None)
            if perm == [0, 3, 1, 2]:
                return "nhwc"
    return None


def _load(path: Path):
    """The file's graph (onnx), after onnxruntime has loaded it.

    Raises:
      UserError: onnxruntime missing, or a file it cannot read.
    """
    if importlib.util.find_spec("onnxruntime") is None:
        raise UserError("--model FILE.onnx needs onnxruntime: pip install 'l40sbench[runtimes]'")
    import onnx
    import onnxruntime as ort

    try:
        ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own Fail/InvalidProtobuf for a bad file
        raise UserError(f"--model {path}: onnxruntime cannot load it: {said(exc)}") from None
    return onnx.load(str(path))


def inspect(path: Path, layout: str | None = None, detector_format: str | None = None) -> ModelFile:
    """What the ONNX file at `path` takes.

    Args:
      layout: --layout, where the file leaves it open.
      detector_format: --detector-format, over the guess (modelfile.detector_formats).

    Raises:
      UserError: a file onnxruntime cannot load; not one image input of pixels; neither one output nor a
        detector's; a layout that cannot be read and was not given, or given against the file's; a detector
        format the file does not fit, or a detector's input its format cannot take.
    """
    model = _load(path)
    inputs = _graph_input(model)
    where = f"--model {path}"
    if len(inputs) != 1:
        raise UserError(f"{where}: the suite takes a model of one image input; this one takes {len(inputs)} "
                        f"({', '.join(i.name for i in inputs)})")
    (graph_input,) = inputs
    import onnx

    kind = f"tensor({onnx.helper.tensor_dtype_to_np_dtype(graph_input.type.tensor_type.elem_type).name})"
    kind = {"tensor(float32)": "tensor(float)"}.get(kind, kind)
    if kind not in PIXELS:
        raise UserError(f"{where}: its input is {kind}; the suite feeds pixels as {', '.join(PIXELS)}")
    dims = _dims(graph_input)
    facts = detector_formats.ultralytics({p.key: p.value for p in model.metadata_props}, where)
    chosen_format = detector_formats.decide([detector_formats.Output(o.name, tuple(_dims(o))) for o in model.graph.output],
                                            facts, detector_format, where)
    if chosen_format in ("yolo", "yolo-end2end", "torchvision"):
        if layout is not None:
            raise UserError(f"--layout is not for a detector file: {path.name} is a {chosen_format} export")
        return _other_detector(path, facts, dims, kind, chosen_format)
    if chosen_format == "od-api":
        if len(dims) != 4 or dims[3] != 3 or any(isinstance(d, int) for d in dims[1:3]):
            raise UserError(f"{where}: a detector here takes each image at its own size, (batch, height, width, 3) "
                            f"with height and width free; this one takes {tuple(dims)}")
        return ModelFile(path, "onnx", None, dims[0] if isinstance(dims[0], int) else None, task="detect",
                         detector_format="od-api")
    if len(model.graph.output) != 1:
        raise UserError(f"{where}: the suite times a model of one output, or a detector's "
                        f"({', '.join(detector.OUTPUTS)}); this one has {len(model.graph.output)}")
    if len(dims) != 4:
        raise UserError(f"{where}: its input is not an image (batch, height, width, 3 or batch, 3, height, width): "
                        f"it takes {tuple(dims)}")
    declared = "nchw" if dims[1] == 3 and dims[3] != 3 else "nhwc" if dims[3] == 3 else None
    read = declared or _layout_from_graph(model, graph_input.name)
    if layout is not None and read is not None and layout != read:
        raise UserError(f"--layout {layout}: {path.name}'s input is {read.upper()} ({tuple(dims)})")
    chosen = read or layout
    if chosen is None:
        raise UserError(f"{where}: its input {tuple(dims)} does not say where the channels go: give --layout "
                        f"{' or '.join(LAYOUTS)}")
    shape = [dims[0], 3, *dims[2:]] if chosen == "nchw" else [*dims[:3], 3]
    declared_size = square_image(shape, where, channels_first=chosen == "nchw")
    batch = dims[0] if isinstance(dims[0], int) else None
    return ModelFile(path, "onnx", declared_size, batch, chosen, own_scaling=UINT8 if kind == "tensor(uint8)" else None)


def _other_detector(path: Path, facts: detector_formats.Ultralytics | None, dims: list, kind: str,
                    chosen: str) -> ModelFile:
    """An Ultralytics or torchvision detector's input read: NCHW float pixels (0-1 fed as nodes by `fed`), a YOLO
    export's square from its metadata's imgsz (else its input's), a torchvision export's at each image's own size.

    Raises:
      UserError: an input of uint8, not (batch, 3, height, width) (or (3, height, width) for torchvision), a
        YOLO input of no known square, or a batch fixed above 1.
    """
    where = f"--model {path}"
    if kind == "tensor(uint8)":
        raise UserError(f"{where}: a {chosen} export takes float pixels 0-1; this one takes uint8")
    channels_first = (len(dims) == 4 and dims[1] == 3) or (chosen == "torchvision" and len(dims) == 3 and dims[0] == 3)
    if not channels_first:
        raise UserError(f"{where}: a {chosen} export takes (batch, 3, height, width) pixels; this one takes "
                        f"{tuple(dims)}")
    batch = dims[0] if len(dims) == 4 and isinstance(dims[0], int) else None
    if batch not in (None, 1):
        raise UserError(f"{where}: fixed at batches of {batch}; a detector here takes one image a call")
    if chosen == "torchvision":
        return ModelFile(path, "onnx", None, batch, "nchw", task="detect", detector_format=chosen)
    fixed = [d for d in dims[2:] if isinstance(d, int)]
    if len(fixed) == 2 and fixed[0] != fixed[1]:
        raise UserError(f"{where}: its input is {fixed[0]}x{fixed[1]}; the suite letterboxes to a square")
    size = (facts.imgsz if facts is not None and facts.imgsz else None) or (fixed[0] if fixed else None)
    if size is None:
        raise UserError(f"{where}: a {chosen} export of free height and width and no `imgsz` in its metadata: "
                        "export it with imgsz, or at a fixed size")
    if fixed and fixed[0] != size:
        raise UserError(f"{where}: its metadata says imgsz {size}, its input takes {fixed[0]}")
    return ModelFile(path, "onnx", size, batch, "nchw", task="detect", detector_format=chosen,
                     class_names=facts.names if facts is not None else None)


def fed(given: ModelFile, size: int, scaling, folder: Path) -> Path:
    """The file the runtimes load: the given one where it fixes its image and needs no scaling, else a copy in
    `folder` with its height, width and channels fixed (batch free) and `scaling`'s nodes before its own.

    Raises:
      UserError: a scaling asked for a model taking uint8 (it scales its own pixels).
    """
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(given.path))
    (graph_input,) = _graph_input(model)
    channel = 1 if given.layout == "nchw" else 3
    wanted = [None, 3, size, size] if given.layout == "nchw" else [None, size, size, 3]
    needs_scaling = not scaling.identity
    elem = graph_input.type.tensor_type.elem_type
    if needs_scaling and elem == onnx.TensorProto.UINT8:
        raise UserError(f"--preprocess {scaling.name}: {given.path.name} takes uint8 pixels and scales them itself")
    dims = graph_input.type.tensor_type.shape.dim
    if not needs_scaling and all(d.HasField("dim_value") for d in list(dims)[1:]):
        return given.path
    for dim, value in zip(list(dims)[1:], wanted[1:], strict=True):
        dim.dim_value = value
    if not dims[0].HasField("dim_value"):
        dims[0].dim_param = dims[0].dim_param or "batch"
    if needs_scaling:
        dtype = onnx.helper.tensor_dtype_to_np_dtype(elem)
        per_channel = [1, 1, 1, 1]
        per_channel[channel] = 3
        shape = [d.dim_value if d.HasField("dim_value") else d.dim_param for d in dims]
        constants = [numpy_helper.from_array(np.asarray(v, dtype).reshape(per_channel), name)
                     for name, v in (("mean", scaling.mean), ("std", scaling.std))]
        nodes = [helper.make_node("Identity", ["pixels"], ["ordered"])]
        if scaling.bgr:
            constants.append(numpy_helper.from_array(np.asarray([2, 1, 0], np.int64), "bgr_order"))
            nodes = [helper.make_node("Gather", ["pixels", "bgr_order"], ["ordered"], axis=channel)]
        nodes += [helper.make_node("Sub", ["ordered", "mean"], ["centred"]),
                  helper.make_node("Div", ["centred", "std"], ["image"])]
        return _prefixed(model, graph_input.name, nodes, constants, shape, shape, folder)
    folder.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(folder / FED))
    return folder / FED


def _opset(model) -> int:
    """The version of the default ONNX domain the model imports."""
    return next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))


def _prefixed(model, input_name: str, nodes: list, constants: list, pixels_shape: list, image_shape: list,
              folder: Path) -> Path:
    """`model` with `nodes` before it (from its new input "pixels" to "image", fed to `input_name`), saved as
    folder/FED: the runtimes load the whole as one graph."""
    import onnx
    from onnx import compose, helper

    elem = next(i for i in model.graph.input if i.name == input_name).type.tensor_type.elem_type
    opset = _opset(model)
    prefix = helper.make_model(
        helper.make_graph(nodes, "l40sbench_input", [helper.make_tensor_value_info("pixels", elem, pixels_shape)],
                          [helper.make_tensor_value_info("image", elem, image_shape)], initializer=constants),
        opset_imports=[helper.make_opsetid("", opset)], ir_version=model.ir_version)
    merged = compose.merge_models(prefix, model, io_map=[("image", input_name)], prefix1="l40sbench_")
    folder.mkdir(parents=True, exist_ok=True)
    onnx.save(merged, str(folder / FED))
    return folder / FED


def fed_detector(given: ModelFile, folder: Path) -> Path:
    """The file the runtimes load for a YOLO or torchvision export: 0-1 as nodes before the model's own; a YOLO
    export's image fixed at its square (`fed`), a torchvision export's taking (1, height, width, 3) at any size,
    transposed (and its batch dropped, where it takes one image as (3, height, width)) inside the file."""
    from l40sbench.modelfile.scaling import MODES

    unit = MODES.get("unit")  # 0-1: pixels / 255, every format here
    if given.detector_format != "torchvision":
        return fed(given, given.size, unit, folder)
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(given.path))
    (graph_input,) = _graph_input(model)
    elem = graph_input.type.tensor_type.elem_type
    rank = len(graph_input.type.tensor_type.shape.dim)
    nodes = [helper.make_node("Div", ["pixels", "scale"], ["unit"]),
             helper.make_node("Transpose", ["unit"], ["nchw" if rank == 3 else "image"], perm=[0, 3, 1, 2])]
    constants = [numpy_helper.from_array(np.asarray(unit.std[0], onnx.helper.tensor_dtype_to_np_dtype(elem)), "scale")]
    opset = _opset(model)
    if rank == 3 and opset >= 13:  # Squeeze's axes became an input in opset 13
        constants.append(numpy_helper.from_array(np.asarray([0], np.int64), "batch_axis"))
        nodes.append(helper.make_node("Squeeze", ["nchw", "batch_axis"], ["image"]))
    elif rank == 3:
        nodes.append(helper.make_node("Squeeze", ["nchw"], ["image"], axes=[0]))
    return _prefixed(model, graph_input.name, nodes, constants, [1, "height", "width", 3],
                     [3, "height", "width"] if rank == 3 else [1, 3, "height", "width"], folder)


def export(path: Path):
    """A Workload's export for an ONNX file: `path` (the fed file) as it is, to the runtimes that read ONNX."""
    from l40sbench.runtimes.export import Artifact, size_mb

    def to(runtime: str, precision: str, folder: Path) -> Artifact:
        if runtime not in READERS:
            raise ValueError(f"{runtime} does not read ONNX, and no converter from ONNX is used here")
        return Artifact(path, 0.0, size_mb(path), "the ONNX file as given" + (
            "" if path.name != FED else ", its image fixed and its scaling as nodes before its own"), "fp32")

    return to
