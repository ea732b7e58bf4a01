"""How a model file's input is scaled: the modes of --preprocess, one table for every runtime.

Each mode is an affine map per channel of the uint8 pixels as float32, channels reversed first where it says
BGR: Keras' own `preprocess_input` modes (tf, torch, caffe: keras.applications.imagenet_utils), 0-1 and the
pixels as they are. A Keras model gets it as its first layer (backends.layers.Preprocess, so every exporter
carries it); an ONNX file gets it as nodes before its own (modelfile.onnx_file). The suite decides a model's
scaling as `decide` says.
"""

from __future__ import annotations

from dataclasses import dataclass

from l40sbench.core.registry import Registry

IMAGENET_MEAN = (0.485, 0.456, 0.406)  # torchvision's, on 0-1 RGB
IMAGENET_STD = (0.229, 0.224, 0.225)
CAFFE_MEAN_BGR = (103.939, 116.779, 123.68)  # Keras' caffe mode, on 0-255 BGR


@dataclass(frozen=True)
class Scaling:
    """pixels (0-255 RGB) -> (pixels[channels reversed where bgr] - mean) / std, per channel."""

    name: str
    description: str
    bgr: bool = False
    mean: tuple[float, float, float] = (0.0, 0.0, 0.0)
    std: tuple[float, float, float] = (1.0, 1.0, 1.0)

    def apply(self, pixels):
        """The scaling on a NumPy array whose last axis is the channels (the ONNX nodes' and the layer's
        reference)."""
        import numpy as np

        pixels = np.asarray(pixels, np.float32)
        pixels = pixels[..., ::-1] if self.bgr else pixels
        return (pixels - np.float32(self.mean)) / np.float32(self.std)

    @property
    def identity(self) -> bool:
        """Whether the mode leaves the pixels as they are (nothing to add before a model)."""
        return not self.bgr and self.mean == (0.0, 0.0, 0.0) and self.std == (1.0, 1.0, 1.0)

    def layer_arguments(self) -> dict:
        """backends.layers.Preprocess's arguments for this mode (no keras.applications module)."""
        affine = self.mean != (0.0, 0.0, 0.0) or self.std != (1.0, 1.0, 1.0)
        return {"bgr": self.bgr, "mean": self.mean if affine else None, "std": self.std if affine else None}


MODES: Registry[Scaling] = Registry("--preprocess mode")
for _mode in (
    Scaling("none", "the pixels as they are, float 0-255 RGB"),
    Scaling("unit", "0-1 RGB (pixels / 255)", std=(255.0,) * 3),
    Scaling("tf", "-1 to 1 RGB (pixels / 127.5 - 1), Keras' tf mode: Xception, Inception, MobileNet",
            mean=(127.5,) * 3, std=(127.5,) * 3),
    Scaling("torch", "0-1 RGB, then ImageNet's mean and std, Keras' torch mode and torchvision's",
            mean=tuple(255 * m for m in IMAGENET_MEAN), std=tuple(255 * s for s in IMAGENET_STD)),
    Scaling("caffe", "BGR, ImageNet's channel means subtracted, Keras' caffe mode: ResNet50, VGG",
            bgr=True, mean=CAFFE_MEAN_BGR),
):
    MODES.register(_mode.name, _mode)

ASKED = "asked for (--preprocess)"
OWN_LAYERS = "the model's own first layers scale its input ({layer}): fed 0-255 as they are"
UNKNOWN = ("not known: fed 0-255 as they are; the file does not say how it scales its input (--preprocess MODE "
           "states it)")


@dataclass(frozen=True)
class Decided:
    """The mode fed, how it was decided, and whether the suite stands behind it (a test accuracy of an untrained
    file is reported only then)."""

    mode: Scaling
    how: str
    known: bool

    def to_dict(self) -> dict:
        return {"mode": self.mode.name, "scaling": self.mode.description, "how": self.how, "known": self.known}


def decide(asked: str | None, own_layer: str | None) -> Decided:
    """The scaling fed to a model file: --preprocess where given; none where the model's first layers scale
    (Rescaling, Normalization: `own_layer` names it); else none, not known.

    Raises:
      UserError: an unknown mode.
    """
    if asked is not None:
        return Decided(MODES.get(asked), ASKED, True)
    if own_layer is not None:
        return Decided(MODES.get("none"), OWN_LAYERS.format(layer=own_layer), True)
    return Decided(MODES.get("none"), UNKNOWN, False)
