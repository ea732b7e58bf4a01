"""The classifier's own layer, registered with Keras so model.keras loads again in safe mode.

Imports Keras at the top: import this module only where Keras is already wanted.
"""

from __future__ import annotations

import keras


@keras.saving.register_keras_serializable(package="l40sbench", name="Preprocess")
class Preprocess(keras.layers.Layer):
    """keras.applications.<module>.preprocess_input on uint8 images, as the model's first layer; with no
    module (a model file of the user's), the images as float32 pixels, channels reversed where `bgr`, less
    `mean` and over `std` per channel where given (modelfile.scaling's modes)."""

    def __init__(self, module: str, bgr: bool = False, mean=None, std=None, **kwargs):
        super().__init__(**kwargs)
        self.module, self.bgr = module, bool(bgr)
        self.mean = None if mean is None else [float(v) for v in mean]
        self.std = None if std is None else [float(v) for v in std]
        self._preprocess = getattr(keras.applications, module).preprocess_input if module else self._scale

    def _scale(self, pixels):
        if self.bgr:
            pixels = keras.ops.flip(pixels, axis=-1)
        if self.mean is not None:
            pixels = pixels - keras.ops.convert_to_tensor(self.mean, "float32")
        if self.std is not None:
            pixels = pixels / keras.ops.convert_to_tensor(self.std, "float32")
        return pixels

    def call(self, images):
        return self._preprocess(keras.ops.cast(images, "float32"))

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "module": self.module, "bgr": self.bgr, "mean": self.mean, "std": self.std}
