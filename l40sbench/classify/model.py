"""Transfer-learning model: a keras.applications base plus a small head.

Preprocessing is the first layer, so the model takes uint8 RGB images and the
inference probe times exactly what a caller with a decoded image would run.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from pathlib import Path

from l40sbench.classify.bases import BASES, BaseSpec
from l40sbench.core.text import Log
from l40sbench.errors import UserError, said

# Seconds to wait for the ImageNet weights download before falling back to
# random initialisation. The attempt runs in a worker thread because a socket
# timeout does not bound a stalled DNS lookup.
DOWNLOAD_TIMEOUT_S = 60.0
ANY_SIZE = (224, 32)  # (default, smallest) for a model file that takes any size: ImageNet's, keras.applications'


def spec_for(base: str, model: str | Path | None = None) -> BaseSpec:
    """The base a run fine-tunes: the file given as --model, else the keras.applications base named `base`
    (in any case).

    Raises:
      UserError: an unknown name, or a file that is not a Keras model of one image input.
    """
    if model is not None:
        from l40sbench.modelfile.files import keras_file_facts

        size = keras_file_facts(Path(model)).size
        default, smallest = (size, size) if size else ANY_SIZE
        return BaseSpec(Path(model).stem, "", "", default, smallest, path=str(model))
    return BASES.get(base.lower())


def file_scaling(config):
    """How classify --model's file gets its pixels (modelfile.scaling.Decided); None for a keras.applications
    base, which gets its own preprocess_input.

    Raises:
      UserError: an unknown --preprocess mode; a --batch-size the file's fixed batch cannot take.
    """
    if config.model is None:
        return None
    from l40sbench.modelfile import scaling
    from l40sbench.modelfile.files import keras_file_facts

    facts = keras_file_facts(Path(config.model))
    facts.refuse_batch(config.batch_size, "--batch-size")
    return scaling.decide(config.preprocess, facts.own_scaling)


def file_facts(config, model) -> dict:
    """The record's facts of classify --model's file: its identity, its scaling and the dtypes its layers
    computed in ({} for a keras.applications base)."""
    if config.model is None:
        return {}
    from l40sbench.modelfile import files, keras_file

    base = next(layer for layer in model.layers if hasattr(layer, "layers"))  # the file's model, nested
    return {"file": files.identity(Path(config.model)), "preprocess": file_scaling(config).to_dict(),
            "compute_dtypes": keras_file.compute_dtypes(base)}


def _try_imagenet(build: Callable[[object], object], timeout_s: float):
    """Runs build("imagenet") with a deadline; returns (model, None) or (None, reason)."""
    import keras

    outcome: dict = {}
    policy = keras.config.dtype_policy()  # Keras keeps it per thread

    def attempt():
        keras.config.set_dtype_policy(policy)
        try:
            outcome["model"] = build("imagenet")
        except Exception as exc:  # keras' get_file raises a bare Exception on fetch failure
            outcome["error"] = exc

    previous = socket.getdefaulttimeout()
    socket.setdefaulttimeout(min(timeout_s, 20.0))
    try:
        worker = threading.Thread(target=attempt, daemon=True)
        worker.start()
        worker.join(timeout_s)
    finally:
        socket.setdefaulttimeout(previous)
    if "model" in outcome:
        return outcome["model"], None
    if worker.is_alive():
        return None, f"no answer within {timeout_s:.0f} s"
    return None, said(outcome["error"])


def build_base(spec: BaseSpec, image_size: int, weights: str, log: Log, timeout_s: float = DOWNLOAD_TIMEOUT_S):
    """The base without its top; returns (base, weights label for the result).

    Args:
      weights: "imagenet" (Keras cache, else a download, else random with a
        warning), "none" (random) or the path of a local weights file.
    """
    if spec.path is not None:  # a user's own model: the file holds its weights; it computes in the policy asked
        import keras

        from l40sbench.modelfile import keras_file

        base, facts = keras_file.load(Path(spec.path), keras.config.dtype_policy().name)
        if facts.get("kept_their_own"):
            log(f"{len(facts['kept_their_own'])} layer(s) of {Path(spec.path).name} keep the dtype they were saved "
                f"with, not {facts['policy']}: {', '.join(facts['kept_their_own'][:5])}")
        return base, f"the file's own ({Path(spec.path).name})"
    constructor = spec.constructor()

    def build(source):
        return constructor(include_top=False, weights=source, input_shape=(image_size, image_size, 3))

    if weights == "none":
        return build(None), "random"
    if weights == "imagenet":
        base, reason = _try_imagenet(build, timeout_s)
        if base is not None:
            return base, "imagenet"
        log(f"warning: ImageNet weights for {spec.name} unavailable ({reason}); using random initialisation")
        return build(None), "random (imagenet unavailable)"
    path = Path(weights)
    try:
        return build(str(path)), f"file {path}"
    except (OSError, ValueError) as exc:
        raise UserError(f"cannot load weights file {path} for {spec.name}: {said(exc)}") from None


def build_classifier(spec: BaseSpec, base, image_size: int, num_classes: int, trainable_top_layers: int | None,
                     scaling=None):
    """uint8 image -> preprocess -> base -> pooling -> dropout -> softmax; `scaling` (modelfile.scaling.Decided):
    a model file's preprocessing, where the base is one."""
    import keras

    if trainable_top_layers is None:
        base.trainable = False
    else:
        base.trainable = True
        if trainable_top_layers > 0:
            for layer in base.layers[:-trainable_top_layers]:
                layer.trainable = False
    inputs = keras.Input((image_size, image_size, 3), dtype="uint8", name="image")
    from l40sbench.backends.layers import Preprocess

    x = Preprocess(spec.module, name="preprocess", **(scaling.mode.layer_arguments() if scaling else {}))(inputs)
    # training=False keeps batch-norm statistics fixed, the usual transfer-learning recipe.
    x = base(x, training=False)
    if isinstance(x, (list, tuple, dict)):
        raise UserError(f"{spec.name} has {len(x)} outputs: classify puts its head on a model of one output")
    if len(x.shape) == 4:  # a feature map: pooled (a model of one's own may already end in a vector)
        x = keras.layers.GlobalAveragePooling2D(name="pool")(x)
    elif len(x.shape) != 2:
        raise UserError(f"{spec.name}'s output is {tuple(x.shape)}: classify puts its head on a feature map "
                        "(batch, height, width, channels) or a vector (batch, features)")
    x = keras.layers.Dropout(0.2, name="dropout")(x)
    outputs = keras.layers.Dense(num_classes, activation="softmax", dtype="float32", name="head")(x)
    return keras.Model(inputs, outputs, name=f"{spec.name}_classifier")
