"""Inception v2 (BN-Inception) backbone for Model Garden, from shared/specs/inception_v2.md.

No TF2 library ships it. This is a tf_keras model (Model Garden builds its
detectors with tf_keras) returning the spec's feature levels 2-5 as a dict
keyed by level, the contract of Model Garden backbones, and registered with
its backbone factory as "inception_v2".
"""

from __future__ import annotations

import dataclasses

import tensorflow as tf
import tf_keras
from official.modeling import hyperparams
from official.vision.configs import backbones as backbone_configs
from official.vision.modeling.backbones import factory

layers = tf_keras.layers

# (b0, b1a, b1b, b2a, b2b, b2c, pool, b3) per inception module, as the spec's table.
MIXED = {
    "Mixed_3b": (64, 64, 64, 64, 96, 96, "avg", 32),
    "Mixed_3c": (64, 64, 96, 64, 96, 96, "avg", 64),
    "Mixed_4b": (224, 64, 96, 96, 128, 128, "avg", 128),
    "Mixed_4c": (192, 96, 128, 96, 128, 128, "avg", 128),
    "Mixed_4d": (160, 128, 160, 128, 160, 160, "avg", 96),
    "Mixed_4e": (96, 128, 192, 160, 192, 192, "avg", 96),
    "Mixed_5b": (352, 192, 320, 160, 224, 224, "avg", 128),
    "Mixed_5c": (352, 192, 320, 192, 224, 224, "max", 128),
}
# (branch 0: 1x1, 3x3/s2), (branch 1: 1x1, 3x3, 3x3/s2) per reduction module.
REDUCTION = {
    "Mixed_4a": ((128, 160), (64, 96, 96)),
    "Mixed_5a": ((128, 192), (192, 256, 256)),
}
LEVEL_ENDPOINTS = {"2": "Conv2d_2c_3x3", "3": "Mixed_3c", "4": "Mixed_4e", "5": "Mixed_5c"}


@dataclasses.dataclass
class InceptionV2Config(hyperparams.Config):
    depth_multiplier: float = 1.0
    min_depth: int = 16


@dataclasses.dataclass
class Backbone(backbone_configs.Backbone):
    """Model Garden's backbone one-of, with an `inception_v2` choice added."""

    inception_v2: InceptionV2Config = dataclasses.field(default_factory=InceptionV2Config)


class InceptionV2(tf_keras.Model):
    """BN-Inception feature extractor; outputs {"2".."5": feature map}."""

    def __init__(
        self,
        input_specs: layers.InputSpec | None = None,
        depth_multiplier: float = 1.0,
        min_depth: int = 16,
        norm_momentum: float = 0.99,
        norm_epsilon: float = 0.001,
        activation: str = "relu",
        kernel_regularizer=None,
        **kwargs,
    ):
        if depth_multiplier <= 0:
            raise ValueError(f"depth_multiplier must be > 0. Received: depth_multiplier={depth_multiplier}")
        self._config = dict(
            depth_multiplier=depth_multiplier, min_depth=min_depth, norm_momentum=norm_momentum,
            norm_epsilon=norm_epsilon, activation=activation, kernel_regularizer=kernel_regularizer,
        )

        def depth(channels: int) -> int:
            return max(int(channels * depth_multiplier), min_depth)

        def bn_act(x, name):
            x = layers.BatchNormalization(momentum=norm_momentum, epsilon=norm_epsilon, name=f"{name}/BatchNorm")(x)
            return layers.Activation(activation, name=f"{name}/{activation}")(x)

        def conv(x, channels, size, name, strides=1):
            x = layers.Conv2D(
                depth(channels), size, strides=strides, padding="same", use_bias=False,
                kernel_regularizer=kernel_regularizer, name=name,
            )(x)
            return bn_act(x, name)

        def pool(x, kind, name, strides=1):
            layer = layers.MaxPooling2D if kind == "max" else layers.AveragePooling2D
            return layer(3, strides=strides, padding="same", name=name)(x)

        input_specs = input_specs or layers.InputSpec(shape=[None, None, None, 3])
        inputs = tf_keras.Input(shape=input_specs.shape[1:])
        endpoints = {}
        # Stem. The 7x7 is separable: depthwise (3 -> 24 with multiplier 8), then 1x1 to 64.
        stem_multiplier = min(int(depth(64) / 3), 8)
        x = layers.SeparableConv2D(
            depth(64), 7, strides=2, depth_multiplier=stem_multiplier, padding="same", use_bias=False,
            depthwise_regularizer=kernel_regularizer, pointwise_regularizer=kernel_regularizer,
            name="Conv2d_1a_7x7",
        )(inputs)
        x = bn_act(x, "Conv2d_1a_7x7")
        x = pool(x, "max", "MaxPool_2a_3x3", strides=2)
        x = conv(x, 64, 1, "Conv2d_2b_1x1")
        x = endpoints["Conv2d_2c_3x3"] = conv(x, 192, 3, "Conv2d_2c_3x3")
        x = pool(x, "max", "MaxPool_3a_3x3", strides=2)

        def mixed(x, name):
            b0, b1a, b1b, b2a, b2b, b2c, kind, b3 = MIXED[name]
            branch0 = conv(x, b0, 1, f"{name}/Branch_0/Conv2d_0a_1x1")
            branch1 = conv(conv(x, b1a, 1, f"{name}/Branch_1/Conv2d_0a_1x1"), b1b, 3, f"{name}/Branch_1/Conv2d_0b_3x3")
            branch2 = conv(x, b2a, 1, f"{name}/Branch_2/Conv2d_0a_1x1")
            branch2 = conv(branch2, b2b, 3, f"{name}/Branch_2/Conv2d_0b_3x3")
            branch2 = conv(branch2, b2c, 3, f"{name}/Branch_2/Conv2d_0c_3x3")
            branch3 = conv(pool(x, kind, f"{name}/Branch_3/Pool_0a_3x3"), b3, 1, f"{name}/Branch_3/Conv2d_0b_1x1")
            return layers.Concatenate(axis=-1, name=name)([branch0, branch1, branch2, branch3])

        def reduction(x, name):
            (b0a, b0b), (b1a, b1b, b1c) = REDUCTION[name]
            branch0 = conv(x, b0a, 1, f"{name}/Branch_0/Conv2d_0a_1x1")
            branch0 = conv(branch0, b0b, 3, f"{name}/Branch_0/Conv2d_1a_3x3", strides=2)
            branch1 = conv(x, b1a, 1, f"{name}/Branch_1/Conv2d_0a_1x1")
            branch1 = conv(branch1, b1b, 3, f"{name}/Branch_1/Conv2d_0b_3x3")
            branch1 = conv(branch1, b1c, 3, f"{name}/Branch_1/Conv2d_1a_3x3", strides=2)
            branch2 = pool(x, "max", f"{name}/Branch_2/MaxPool_1a_3x3", strides=2)
            return layers.Concatenate(axis=-1, name=name)([branch0, branch1, branch2])

        for name in ("Mixed_3b", "Mixed_3c", "Mixed_4a", "Mixed_4b", "Mixed_4c", "Mixed_4d", "Mixed_4e",
                     "Mixed_5a", "Mixed_5b", "Mixed_5c"):
            x = endpoints[name] = (reduction if name in REDUCTION else mixed)(x, name)

        outputs = {level: endpoints[name] for level, name in LEVEL_ENDPOINTS.items()}
        self._output_specs = {level: tensor.get_shape() for level, tensor in outputs.items()}
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

    def get_config(self):
        return dict(self._config)

    @classmethod
    def from_config(cls, config, custom_objects=None):
        return cls(**config)

    @property
    def output_specs(self):
        """{level: TensorShape} of the outputs, as Model Garden decoders expect."""
        return self._output_specs


@factory.register_backbone_builder("inception_v2")
def build_inception_v2(input_specs, backbone_config, norm_activation_config, l2_regularizer=None):
    """Model Garden backbone builder for type "inception_v2"."""
    if backbone_config.type != "inception_v2":
        raise ValueError(f"Inconsistent backbone type {backbone_config.type}")
    cfg = backbone_config.get()
    return InceptionV2(
        input_specs=input_specs,
        depth_multiplier=cfg.depth_multiplier,
        min_depth=cfg.min_depth,
        norm_momentum=norm_activation_config.norm_momentum,
        norm_epsilon=norm_activation_config.norm_epsilon,
        activation=norm_activation_config.activation,
        kernel_regularizer=l2_regularizer,
    )


def kernel_weight_count(model: tf_keras.Model) -> int:
    """Convolution kernel weights (depthwise and pointwise included; no BN, no bias)."""
    return sum(
        int(tf.size(w)) for w in model.weights
        if any(key in w.name for key in ("kernel", "depthwise", "pointwise"))
    )
