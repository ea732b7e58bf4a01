"""Classification bases: one registry entry per keras.applications model.

An entry names the application and its module (for preprocess_input) instead
of holding them, so listing bases does not import Keras.
"""

from __future__ import annotations

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
    """

    name: str
    application: str
    module: str
    default_size: int
    min_size: int

    def constructor(self) -> Callable:
        import keras

        return getattr(keras.applications, self.application)


BASES: Registry[BaseSpec] = Registry("base")

for _spec in (
    BaseSpec("xception", "Xception", "xception", 299, 71),
    BaseSpec("inceptionv3", "InceptionV3", "inception_v3", 299, 75),
    BaseSpec("vgg19", "VGG19", "vgg19", 224, 32),
    BaseSpec("resnet50", "ResNet50", "resnet50", 224, 32),
    BaseSpec("mobilenetv2", "MobileNetV2", "mobilenet_v2", 224, 32),
):
    BASES.register(_spec.name, _spec)
