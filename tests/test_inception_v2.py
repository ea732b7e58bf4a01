"""Inception v2 backbone against shared/specs/inception_v2.md."""

import pytest
import tf_keras
from official.vision.configs import common
from official.vision.modeling.backbones import factory

from l40sbench.detect.inception_v2 import Backbone, InceptionV2, InceptionV2Config, kernel_weight_count


def _spec(size):
    return tf_keras.layers.InputSpec(shape=[None, size, size, 3])


def test_exact_kernel_weight_count_and_batch_norm_channels():
    model = InceptionV2(input_specs=_spec(224))
    assert kernel_weight_count(model) == 10_143_384
    assert sum(int(w.shape[0]) for w in model.weights if w.name.endswith("gamma:0")) == 9_952


@pytest.mark.parametrize("size", [224, 64])
def test_levels_have_the_spec_strides_and_channels(size):
    specs = InceptionV2(input_specs=_spec(size)).output_specs
    expected = {"2": (4, 192), "3": (8, 320), "4": (16, 576), "5": (32, 1024)}
    for level, (stride, channels) in expected.items():
        shape = tuple(specs[level])
        assert shape[1] == shape[2] == -(-size // stride), level
        assert shape[3] == channels, level


def test_factory_builds_it_from_a_model_garden_config():
    config = Backbone(type="inception_v2", inception_v2=InceptionV2Config(depth_multiplier=0.5))
    model = factory.build_backbone(_spec(96), config, common.NormActivation())
    assert isinstance(model, InceptionV2)
    assert tuple(model.output_specs["5"]) == (None, 3, 3, 512)
    assert tuple(model.output_specs["2"])[-1] == 96
