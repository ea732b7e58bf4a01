"""A model file as a Keras model: a .keras file loaded in the precision asked for, and a Keras file or a
SavedModel wrapped to take uint8 images, scaled as decided (modelfile.scaling), for `infer --model`.

Imports Keras only inside its functions.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

from l40sbench.errors import UserError, said
from l40sbench.modelfile.files import UINT8, ModelFile

FLOAT32 = "float32"


def _policy(name: str) -> dict:
    return {"module": "keras", "class_name": "DTypePolicy", "config": {"name": name}, "registered_name": None}


def _repolicied(config, policy: str, kept: list) -> object:
    """The config with every layer saved at float32 set to `policy`; layers saved at another dtype are kept
    as they are, and named in `kept`."""
    if isinstance(config, list):
        return [_repolicied(item, policy, kept) for item in config]
    if not isinstance(config, dict):
        return config
    out = {key: _repolicied(value, policy, kept) for key, value in config.items()}
    inner = out.get("config")
    dtype = inner.get("dtype") if isinstance(inner, dict) else None
    if isinstance(dtype, dict) and dtype.get("class_name") in ("DTypePolicy", "FloatDTypePolicy"):
        saved = (dtype.get("config") or {}).get("name")
        if saved == FLOAT32:
            out["config"] = {**inner, "dtype": _policy(policy)}
        elif saved != policy:
            kept.append(f"{inner.get('name', out.get('class_name'))} ({saved})")
    return out


def compute_dtypes(model) -> dict:
    """How many of the model's layers compute in each dtype (the nested models' layers, not the models)."""
    counts: dict = {}
    stack = list(model.layers)
    while stack:
        layer = stack.pop()
        if hasattr(layer, "layers"):
            stack.extend(layer.layers)
            continue
        if type(layer).__name__ == "InputLayer":
            continue
        dtype = layer.dtype_policy.compute_dtype
        counts[dtype] = counts.get(dtype, 0) + 1
    return dict(sorted(counts.items()))


def load(path: Path, policy: str = FLOAT32):
    """The model in the .keras file, without its training configuration, its layers computing in `policy`
    (Keras' global policy: --precision) with their weights as saved; (model, facts for the record).

    A .keras file restores each layer's own saved policy, so a model saved at float32 would compute in float32
    under a mixed policy: its config is read, each float32 layer set to `policy`, and the weights loaded.

    Raises:
      UserError: Keras cannot load it (a custom layer it does not know, a damaged weights file).
    """
    import keras

    kept: list = []
    try:
        if policy == FLOAT32:
            model = keras.saving.load_model(path, compile=False)
        else:
            with zipfile.ZipFile(path) as archive:
                config = json.loads(archive.read("config.json"))
            model = keras.saving.deserialize_keras_object(_repolicied(config, policy, kept))
            model.load_weights(path)
    except Exception as exc:  # Keras raises TypeError, ValueError, OSError or its own errors for a bad file
        raise UserError(f"--model {path}: Keras cannot load it: {said(exc)}") from None
    facts = {"policy": policy, "compute_dtypes": compute_dtypes(model)}
    if kept:
        facts["kept_their_own"] = kept
    return model, facts


def served(given: ModelFile, asked: str | None):
    """A Keras file or a SavedModel as one Keras model: uint8 image in, its scaling (--preprocess `asked`, else
    as modelfile.scaling.decide says) as its first layer, the file's one output out (any shape); `given` as it
    came (a SavedModel's size, batch and input type read by modelfile.given.with_task); and the scaling decided.

    Raises:
      UserError: Keras cannot load it, or it has several outputs; a scaling asked for a SavedModel taking uint8
        (it scales its own pixels).
    """
    import keras

    from l40sbench.backends.layers import Preprocess
    from l40sbench.modelfile.scaling import decide

    if given.kind == "keras":
        inner, _ = load(given.path)
    else:
        try:
            inner = keras.layers.TFSMLayer(str(given.path), call_endpoint="serving_default")
        except Exception as exc:  # a SavedModel without that signature, or one TensorFlow cannot read
            raise UserError(f"--model {given.path}: cannot load its serving_default signature: "
                            f"{said(exc)}") from None
        # its input's size, batch and type are given's (modelfile.given.with_task read them from its proto)
        specs = list(inner.call_endpoint_fn.structured_input_signature[1].values())
    decided = decide(asked, given.own_scaling)
    if given.own_scaling == UINT8 and decided.mode.name != "none":
        raise UserError(f"--preprocess {asked}: {given.path.name} takes uint8 pixels and scales them itself")
    size = given.size
    inputs = keras.Input((size or None, size or None, 3), dtype="uint8", name="image")
    pixels = Preprocess("", name="preprocess", **decided.mode.layer_arguments())(inputs)  # float32
    if given.kind == "savedmodel":  # the signature's own type (its own uint8, a float16 model's float16)
        pixels = keras.ops.cast(pixels, specs[0].dtype.name)
    outputs = inner(pixels)
    if isinstance(outputs, dict) and len(outputs) == 1:
        outputs = next(iter(outputs.values()))
    if isinstance(outputs, (list, tuple, dict)):
        from l40sbench.modelfile.detector import OUTPUTS

        raise UserError(f"--model {given.path}: the suite times a model of one output, or a detector's "
                        f"({', '.join(OUTPUTS)}); this one has {len(outputs)}: {', '.join(map(str, outputs))}")
    return keras.Model(inputs, outputs, name=given.name), given, decided
