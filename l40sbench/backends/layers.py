"""The classifier's own layer, registered with Keras so model.keras loads again in safe mode.

Imports Keras at the top: import this module only where Keras is already wanted.
"""

from __future__ import annotations

import keras


@keras.saving.register_keras_serializable(package="l40sbench", name="Preprocess")
class Preprocess(keras.layers.Layer):
    """keras.applications.<module>.preprocess_input on uint8 images, as the model's first layer; with no
    module (a user's own model), the images as float32 pixels 0-255."""

    def __init__(self, module: str, **kwargs):
        super().__init__(**kwargs)
        self.module = module
        self._preprocess = getattr(keras.applications, module).preprocess_input if module else (lambda x: x)

    def call(self, images):
        return self._preprocess(keras.ops.cast(images, "float32"))

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "module": self.module}
