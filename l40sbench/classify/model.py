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
from l40sbench.errors import UserError

# Seconds to wait for the ImageNet weights download before falling back to
# random initialisation. The attempt runs in a worker thread because a socket
# timeout does not bound a stalled DNS lookup.
DOWNLOAD_TIMEOUT_S = 60.0


def spec_for(base: str, model: str | Path | None = None) -> BaseSpec:
    """The base a run fine-tunes: the file given as --model, else the keras.applications base named `base`
    (in any case).

    Raises:
      UserError: an unknown name, or a file that is not a Keras model of one image input.
    """
    if model is not None:
        from l40sbench.classify import own_model

        return own_model.spec(Path(model))
    return BASES.get(base.lower())


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
    return None, str(outcome["error"]).splitlines()[0][:200]


def build_base(spec: BaseSpec, image_size: int, weights: str, log: Log, timeout_s: float = DOWNLOAD_TIMEOUT_S):
    """The base without its top; returns (base, weights label for the result).

    Args:
      weights: "imagenet" (Keras cache, else a download, else random with a
        warning), "none" (random) or the path of a local weights file.
    """
    if spec.path is not None:  # a user's own model: the file holds its weights
        from l40sbench.classify import own_model

        return own_model.load(Path(spec.path)), f"the file's own ({Path(spec.path).name})"
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
        raise UserError(f"cannot load weights file {path} for {spec.name}: {str(exc).splitlines()[0]}") from None


def build_classifier(spec: BaseSpec, base, image_size: int, num_classes: int, trainable_top_layers: int | None):
    """uint8 image -> preprocess -> base -> pooling -> dropout -> softmax."""
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

    x = Preprocess(spec.module, name="preprocess")(inputs)
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
