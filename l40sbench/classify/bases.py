"""Classification bases: one registry entry per keras.applications model.

An entry names the application and its module (for preprocess_input) instead
of holding them, so listing bases does not import Keras. The entries are every
constructor the installed Keras ships, read from applications.json (written by
classify/applications.py from Keras itself); NAMED are the five the suite has
always named (the studies' three, resnet50 and mobilenetv2): the speed gate and
the structure figures cover those.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from l40sbench.core.registry import Registry


@dataclass(frozen=True)
class BaseSpec:
    """A keras.applications base and the settings that travel with it.

    Attributes:
      name: registry key, as given to --base.
      application: constructor name in keras.applications.
      module: submodule of keras.applications holding its preprocess_input (the Preprocess layer's).
      default_size: the input size the base was trained at (square).
      min_size: smallest input the architecture accepts without top.
      parameters: the base's parameters without its ImageNet top (None: not known).
      path: for a user's own model (classify --model), its .keras file; None for an application.
    """

    name: str
    application: str
    module: str
    default_size: int
    min_size: int
    parameters: int | None = None
    path: str | None = None

    def constructor(self) -> Callable:
        import keras

        return getattr(keras.applications, self.application)


BASES: Registry[BaseSpec] = Registry("base")
NAMED = ("xception", "inceptionv3", "vgg19", "resnet50", "mobilenetv2")
KERAS_VERSION = ""  # the Keras the table was written from


def _register_table() -> None:
    global KERAS_VERSION
    from l40sbench.classify.applications import TABLE

    table = json.loads(TABLE.read_text())
    KERAS_VERSION = table["keras"]
    for entry in table["bases"]:
        BASES.register(entry["name"], BaseSpec(entry["name"], entry["application"], entry["module"],
                                               entry["default_size"], entry["min_size"], entry["parameters"]))


_register_table()

