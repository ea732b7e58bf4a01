"""The twelve networks of the LeaderGPU tables, one registry.

Input sizes are tf_cnn_benchmarks' own (the `image_size` each model class passes
to its base in scripts/tf_cnn_benchmarks/models/ of github.com/tensorflow/benchmarks):
alexnet 224 + 3, overfeat 231, lenet 28, inception v3 and v4 299, the rest 224.
keras.applications provides six of them; papers.py writes the other six. Each
entry cites a published parameter count the tests hold the built model to.
"""

from __future__ import annotations

from dataclasses import dataclass

from l40sbench.core.registry import Registry

KERAS_DOCS = "Keras' own count (keras.applications, 1000 classes, include_top)"


@dataclass(frozen=True)
class SyntheticModel:
    """One network of the sweep.

    Attributes:
      name: registry key, as given to --models (the study's lower-case column names).
      label: the study's column heading in its GPU-count tables.
      size: square input side in pixels (tf_cnn_benchmarks').
      source: "keras.applications.<Constructor>" or "papers.<function>".
      published_params: the cited parameter count.
      params_counted: "total" (with batch-norm moving statistics, as Keras counts)
        or "trainable" (as PyTorch counts).
      params_tolerance: relative; 0 for an exact published figure, else half a unit
        of the last digit the source prints.
      citation: where published_params comes from.
      study_batch: the per-GPU batch of the study's GPU-count table, None if not in it.
    """

    name: str
    label: str
    size: int
    source: str
    published_params: int
    params_counted: str
    params_tolerance: float
    citation: str
    study_batch: int | None = None

    def build(self):
        """A fresh, randomly initialised Keras 3 model with a 1000-way softmax."""
        kind, attr = self.source.split(".", 1) if self.source.startswith("papers.") else ("keras", self.source)
        if kind == "papers":
            from l40sbench.synthetic import papers

            return getattr(papers, attr)(self.size)
        import keras

        constructor = getattr(keras.applications, attr.rsplit(".", 1)[1])
        return constructor(weights=None, input_shape=(self.size, self.size, 3), classes=1000)

    def count_params(self, model) -> int:
        if self.params_counted == "trainable":
            return int(sum(int(v.numpy().size) for v in model.trainable_weights))
        return int(model.count_params())


MODELS: Registry[SyntheticModel] = Registry("model")

# The study's order (its batch-size tables list the models this way).
STUDY_ORDER = ("alexnet", "vgg11", "vgg16", "vgg19", "lenet", "googlenet",
               "overfeat", "inceptionv3", "inceptionv4", "resnet50", "resnet101", "resnet152")

for _model in (
    SyntheticModel("alexnet", "Alexnet", 227, "papers.alexnet", 60_000_000, "total", 5e6 / 60e6,
                   "Krizhevsky et al. 2012: '60 million parameters' (one significant figure)", 512),
    SyntheticModel("vgg11", "VGG11", 224, "papers.vgg11", 132_863_336, "total", 0.0,
                   "torchvision models table, vgg11 (VGG configuration A, Simonyan & Zisserman 2015)"),
    SyntheticModel("vgg16", "VGG16", 224, "keras.applications.VGG16", 138_357_544, "total", 0.0, KERAS_DOCS, 32),
    SyntheticModel("vgg19", "VGG19", 224, "keras.applications.VGG19", 143_667_240, "total", 0.0, KERAS_DOCS),
    SyntheticModel("lenet", "LeNet", 28, "papers.lenet", 2_172_840, "total", 0.0,
                   "tf_cnn_benchmarks lenet_model.py layer list (TF's MNIST tutorial net), 3-channel input, 1000 classes"),
    SyntheticModel("googlenet", "GoogLeNet", 224, "papers.googlenet", 6_797_700, "total", 0.05,
                   "Szegedy et al. 2015, Table 1: per-row weights sum to 6,797.7 K (rows rounded; biases not counted)"),
    SyntheticModel("overfeat", "OverFeat", 231, "papers.overfeat", 145_920_872, "total", 0.0,
                   "Sermanet et al. 2014, Table 1 fast model = tf_cnn_benchmarks overfeat_model.py layer list"),
    SyntheticModel("inceptionv3", "InceptionV3", 299, "keras.applications.InceptionV3", 23_851_784, "total", 0.0,
                   KERAS_DOCS, 64),
    SyntheticModel("inceptionv4", "InceptionV4", 299, "papers.inceptionv4", 42_700_000, "trainable", 0.05e6 / 42.7e6,
                   "timm/inception_v4.tf_in1k model card: 'Params (M): 42.7'"),
    SyntheticModel("resnet50", "ResNet-50", 224, "keras.applications.ResNet50", 25_636_712, "total", 0.0, KERAS_DOCS, 64),
    SyntheticModel("resnet101", "ResNet-101", 224, "keras.applications.ResNet101", 44_707_176, "total", 0.0, KERAS_DOCS),
    SyntheticModel("resnet152", "ResNet-152", 224, "keras.applications.ResNet152", 60_419_944, "total", 0.0,
                   KERAS_DOCS, 32),
):
    MODELS.register(_model.name, _model)

# The study's GPU-count table: these five at their per-GPU batch sizes, in this order.
STUDY_DEVICE_TABLE = ("inceptionv3", "resnet50", "resnet152", "vgg16", "alexnet")
