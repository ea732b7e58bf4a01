"""The Keras backend a run computes on: tensorflow, jax or torch.

Keras 3 reads KERAS_BACKEND once, when it is first imported, so `select` runs
before anything imports keras. One module per backend holds what differs
between them: the device sync the clocks call, the compiled single-image
forward of the latency probe, forward FLOPs, the peak's kernels, device facts,
peak memory and the sweep's training step. Everything else imports no backend.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys

from l40sbench.errors import UserError

NAMES = ("tensorflow", "jax", "torch")
DEFAULT = "tensorflow"
VARIABLE = "KERAS_BACKEND"
# What each backend's pip extra is called, for the message when it is not installed.
EXTRA = {"tensorflow": "the base install", "jax": "l40sbench[jax]", "torch": "l40sbench[torch]"}


def requested(flag: str | None) -> str:
    """--backend if given, else $KERAS_BACKEND, else tensorflow.

    Raises:
      UserError: a name that is not a backend.
    """
    name = flag or os.environ.get(VARIABLE) or DEFAULT
    if name not in NAMES:
        source = "--backend" if flag else VARIABLE
        raise UserError(f"{source} {name!r} is not a Keras backend; choose one of: {', '.join(NAMES)}")
    return name


def select(name: str) -> None:
    """Makes Keras run on `name`: sets KERAS_BACKEND before keras is imported, and checks the library is there.

    Raises:
      UserError: the backend's library is not installed, or keras already runs on another backend here.
    """
    requested(name)
    keras = sys.modules.get("keras")
    if keras is not None and keras.backend.backend() != name:
        raise UserError(f"keras is already loaded on {keras.backend.backend()} in this process; "
                        f"start a new one for {name}")
    if importlib.util.find_spec(name) is None:  # each backend's package is named as the backend
        raise UserError(f"backend {name}: the {name} package is not installed (pip install {EXTRA[name]})")
    os.environ[VARIABLE] = name


def load(name: str):
    """The module of what `name` does differently (l40sbench.backends.<name>)."""
    return importlib.import_module(f"l40sbench.backends.{name}")


def set_random_seed(seed: int) -> None:
    """keras.utils.set_random_seed, less its TensorFlow step off tensorflow.

    Keras seeds TensorFlow wherever it is installed, importing it (seconds, and a second runtime in a jax
    or torch process); the other steps are the same: Keras' global seed and generator, Python, NumPy, torch.
    """
    import keras

    if keras.backend.backend() == "tensorflow":
        keras.utils.set_random_seed(seed)
        return
    import random

    import numpy as np
    from keras.src.backend.common import global_state  # what set_random_seed itself writes
    from keras.src.random import seed_generator

    global_state.set_global_attribute("global_random_seed", seed)
    global_state.set_global_attribute(seed_generator.GLOBAL_SEED_GENERATOR, None)
    random.seed(seed)
    np.random.seed(seed)
    if keras.backend.backend() == "torch":
        import torch

        torch.manual_seed(seed)


def facts(name: str | None = None) -> dict:
    """The Keras backend this process computes on (`name`, else keras' if loaded) and its version; off
    tensorflow, its devices too; the command's device choice where the driver showed GPUs or the CPU was
    chosen (backends.gpu_gate)."""
    from l40sbench.backends.gpu_gate import recorded

    keras = sys.modules.get("keras")
    name = name or (keras.backend.backend() if keras is not None else None)
    choice = {"device_choice": recorded()} if recorded() else {}
    if name is None:
        return {"backend": None, "backend_version": None, **choice}
    found = {"backend": name, "backend_version": load(name).version(), **choice}
    if name != "tensorflow":  # TensorFlow's own block (core.env) lists its physical devices
        found["devices"] = [{**d.to_dict(), "type": d.kind} for d in load(name).devices()]
    if (recorded() or {}).get("chosen") == "gpu":
        found["gpus_skipped"] = skipped_gpus(name)
    return found


def skipped_gpus(name: str) -> list[dict]:
    """The boards the driver shows that backend `name` does not list at all (TensorFlow skips a board below its
    compute capability): named in the record and in env, since a figure's device is matched by UUID."""
    from l40sbench.backends import cuda_driver

    if name == "tensorflow":
        from l40sbench.backends.tf_device import physical_gpus

        return [vars(d) for d in physical_gpus()[1]]
    seen = {d.uuid for d in load(name).devices()}
    return [vars(d) for d in cuda_driver.devices() if d.uuid not in seen]
