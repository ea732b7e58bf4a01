"""The six networks of tf_cnn_benchmarks that keras.applications does not ship, as Keras 3 models.

Each follows the layer list tf_cnn_benchmarks ran (scripts/tf_cnn_benchmarks/models/
in github.com/tensorflow/benchmarks, the revision family the LeaderGPU study used),
which follows the cited paper: convolutions with bias and ReLU, SAME padding unless
marked VALID; batch normalisation only where tf_cnn_benchmarks used it (Inception-v4).
Every network ends in a 1000-way softmax classifier (tf_cnn_benchmarks used 1001,
ImageNet plus background; 1000 keeps the counts comparable with Keras').
"""

from __future__ import annotations

CLASSES = 1000


def _layers():
    import keras

    return keras.layers


def _conv(x, filters, kh, kw=None, strides=1, padding="same", batch_norm=False):
    layers = _layers()
    kw = kh if kw is None else kw
    x = layers.Conv2D(filters, (kh, kw), strides=strides, padding=padding, use_bias=not batch_norm)(x)
    if batch_norm:
        x = layers.BatchNormalization(epsilon=1e-3)(x)
    return layers.Activation("relu")(x)


def _plain_network(name: str, size: int, steps, hidden: tuple[int, ...], dropout: bool = True):
    """A network without branches, from a tf_cnn_benchmarks-style layer list.

    steps: ("conv", filters, kernel[, stride, padding]) or ("pool", size, stride),
    then flatten, the hidden dense layers (ReLU, each followed by dropout 0.5 when
    `dropout`) and the softmax classifier.
    """
    import keras

    layers = _layers()
    inputs = layers.Input((size, size, 3))
    x = inputs
    for kind, *args in steps:
        if kind == "conv":
            filters, kernel, *rest = args
            strides, padding = rest if rest else (1, "same")
            x = _conv(x, filters, kernel, strides=strides, padding=padding)
        else:
            x = layers.MaxPooling2D(*args)(x)
    x = layers.Flatten()(x)
    for units in hidden:
        x = layers.Dense(units, activation="relu")(x)
        if dropout:
            x = layers.Dropout(0.5)(x)
    outputs = layers.Dense(CLASSES, activation="softmax", name="predictions")(x)
    return keras.Model(inputs, outputs, name=name)


def alexnet(size: int = 227):
    """AlexNet, one tower (Krizhevsky et al., NIPS 2012; tf_cnn_benchmarks alexnet_model.py).

    Input 227 (tf_cnn_benchmarks: 224 + 3, so the VALID 11x11/4 convolution gives 55).
    The paper states "60 million parameters"; this one-tower variant has 61,838,248.
    """
    steps = [("conv", 64, 11, 4, "valid"), ("pool", 3, 2), ("conv", 192, 5), ("pool", 3, 2),
             ("conv", 384, 3), ("conv", 384, 3), ("conv", 256, 3), ("pool", 3, 2)]
    return _plain_network("alexnet", size, steps, (4096, 4096))


def vgg11(size: int = 224):
    """VGG configuration A (Simonyan & Zisserman, ICLR 2015, Table 1; tf_cnn_benchmarks vgg_model.py).

    Table 2 of the paper gives 133 million parameters; torchvision's vgg11 (the same
    layers) is published as 132,863,336.
    """
    steps = []
    for filters, convs in ((64, 1), (128, 1), (256, 2), (512, 2), (512, 2)):
        steps += [("conv", filters, 3)] * convs + [("pool", 2, 2)]
    return _plain_network("vgg11", size, steps, (4096, 4096))


def lenet(size: int = 28):
    """"lenet5" of tf_cnn_benchmarks (lenet_model.py): TensorFlow's MNIST tutorial network.

    Not LeCun's 60,000-parameter LeNet-5: conv 32 5x5, pool, conv 64 5x5, pool, dense
    512 (no dropout), on 28x28 images with 3 channels (synthetic ImageNet-shaped data),
    1000 classes: 2,172,840 parameters from that layer list.
    """
    steps = [("conv", 32, 5), ("pool", 2, 2), ("conv", 64, 5), ("pool", 2, 2)]
    return _plain_network("lenet", size, steps, (512,), dropout=False)


def overfeat(size: int = 231):
    """OverFeat "fast" model (Sermanet et al., ICLR 2014, Table 1; tf_cnn_benchmarks overfeat_model.py).

    Input 231; 96 11x11/4 VALID, pool 2, 256 5x5 VALID, pool 2, 512, 1024, 1024 3x3,
    pool 2, dense 3072, 4096: 145,920,872 parameters from that layer list.
    """
    steps = [("conv", 96, 11, 4, "valid"), ("pool", 2, 2), ("conv", 256, 5, 1, "valid"), ("pool", 2, 2),
             ("conv", 512, 3), ("conv", 1024, 3), ("conv", 1024, 3), ("pool", 2, 2)]
    return _plain_network("overfeat", size, steps, (3072, 4096))


def _inception(x, branches, batch_norm=False):
    """Runs each branch (a list of ("conv", filters, kh, kw[, stride, padding]) or
    ("maxpool"|"avgpool", size, stride, padding) steps) on x and concatenates them."""
    layers = _layers()
    outputs = []
    for branch in branches:
        y = x
        for step in branch:
            kind = step[0]
            if kind == "conv":
                _, filters, kh, kw, *rest = step
                strides, padding = rest if rest else (1, "same")
                y = _conv(y, filters, kh, kw, strides, padding, batch_norm)
            else:
                _, pool, strides, padding = step
                pooling = layers.MaxPooling2D if kind == "maxpool" else layers.AveragePooling2D
                y = pooling(pool, strides, padding=padding)(y)
        outputs.append(y)
    return layers.Concatenate()(outputs)


def googlenet(size: int = 224):
    """GoogLeNet (Szegedy et al., CVPR 2015, Table 1; tf_cnn_benchmarks googlenet_model.py).

    No auxiliary classifiers and no local response normalisation, as tf_cnn_benchmarks
    ran it. Table 1's parameter column sums to 6,797.7 K (weights only, rounded per row).
    """
    layers = _layers()

    def block(x, k, l, m, n, p, q):  # noqa: E741  (Table 1's column letters)
        return _inception(x, [
            [("conv", k, 1, 1)],
            [("conv", l, 1, 1), ("conv", m, 3, 3)],
            [("conv", n, 1, 1), ("conv", p, 5, 5)],
            [("maxpool", 3, 1, "same"), ("conv", q, 1, 1)],
        ])

    inputs = layers.Input((size, size, 3))
    x = _conv(inputs, 64, 7, strides=2)
    x = layers.MaxPooling2D(3, 2, padding="same")(x)
    x = _conv(x, 64, 1)
    x = _conv(x, 192, 3)
    x = layers.MaxPooling2D(3, 2, padding="same")(x)
    x = block(x, 64, 96, 128, 16, 32, 32)
    x = block(x, 128, 128, 192, 32, 96, 64)
    x = layers.MaxPooling2D(3, 2, padding="same")(x)
    for args in ((192, 96, 208, 16, 48, 64), (160, 112, 224, 24, 64, 64), (128, 128, 256, 24, 64, 64),
                 (112, 144, 288, 32, 64, 64), (256, 160, 320, 32, 128, 128)):
        x = block(x, *args)
    x = layers.MaxPooling2D(3, 2, padding="same")(x)
    x = block(x, 256, 160, 320, 32, 128, 128)
    x = block(x, 384, 192, 384, 48, 128, 128)
    x = layers.GlobalAveragePooling2D()(x)
    outputs = layers.Dense(CLASSES, activation="softmax", name="predictions")(x)
    import keras

    return keras.Model(inputs, outputs, name="googlenet")


def inceptionv4(size: int = 299):
    """Inception-v4 (Szegedy et al., AAAI 2017, Figures 3-9; tf_cnn_benchmarks inception_model.py).

    Batch normalisation after every convolution, as tf_cnn_benchmarks ran it.
    timm's inception_v4 (the same figures) is published with 42.7 M parameters
    (model card of timm/inception_v4.tf_in1k), counting batch-norm scale and
    offset but not the moving statistics, i.e. the trainable parameters here.
    """
    layers = _layers()

    def incept(x, branches):
        return _inception(x, branches, batch_norm=True)

    def conv(x, *args):
        return _conv(x, *args, batch_norm=True)

    inputs = layers.Input((size, size, 3))
    x = conv(inputs, 32, 3, 3, 2, "valid")
    x = conv(x, 32, 3, 3, 1, "valid")
    x = conv(x, 64, 3, 3)
    x = incept(x, [[("maxpool", 3, 2, "valid")], [("conv", 96, 3, 3, 2, "valid")]])
    x = incept(x, [
        [("conv", 64, 1, 1), ("conv", 96, 3, 3, 1, "valid")],
        [("conv", 64, 1, 1), ("conv", 64, 7, 1), ("conv", 64, 1, 7), ("conv", 96, 3, 3, 1, "valid")],
    ])
    x = incept(x, [[("conv", 192, 3, 3, 2, "valid")], [("maxpool", 3, 2, "valid")]])
    for _ in range(4):
        x = incept(x, [
            [("avgpool", 3, 1, "same"), ("conv", 96, 1, 1)],
            [("conv", 96, 1, 1)],
            [("conv", 64, 1, 1), ("conv", 96, 3, 3)],
            [("conv", 64, 1, 1), ("conv", 96, 3, 3), ("conv", 96, 3, 3)],
        ])
    x = incept(x, [  # reduction A: k, l, m, n = 192, 224, 256, 384
        [("maxpool", 3, 2, "valid")],
        [("conv", 384, 3, 3, 2, "valid")],
        [("conv", 192, 1, 1), ("conv", 224, 3, 3), ("conv", 256, 3, 3, 2, "valid")],
    ])
    for _ in range(7):
        x = incept(x, [
            [("avgpool", 3, 1, "same"), ("conv", 128, 1, 1)],
            [("conv", 384, 1, 1)],
            [("conv", 192, 1, 1), ("conv", 224, 1, 7), ("conv", 256, 7, 1)],
            [("conv", 192, 1, 1), ("conv", 192, 1, 7), ("conv", 224, 7, 1), ("conv", 224, 1, 7),
             ("conv", 256, 7, 1)],
        ])
    x = incept(x, [  # reduction B
        [("maxpool", 3, 2, "valid")],
        [("conv", 192, 1, 1), ("conv", 192, 3, 3, 2, "valid")],
        [("conv", 256, 1, 1), ("conv", 256, 1, 7), ("conv", 320, 7, 1), ("conv", 320, 3, 3, 2, "valid")],
    ])
    for _ in range(3):
        x = _inception_c(x)
    x = layers.GlobalAveragePooling2D()(x)
    x = layers.Dropout(0.2)(x)  # tf_cnn_benchmarks: dropout(0.8) as keep probability
    outputs = layers.Dense(CLASSES, activation="softmax", name="predictions")(x)
    import keras

    return keras.Model(inputs, outputs, name="inceptionv4")


def _inception_c(x):
    """Inception-v4's C block: two of its branches split into 1x3 and 3x1 halves."""
    layers = _layers()
    pooled = _conv(layers.AveragePooling2D(3, 1, padding="same")(x), 256, 1, batch_norm=True)
    plain = _conv(x, 256, 1, batch_norm=True)
    a = _conv(x, 384, 1, batch_norm=True)
    a = [_conv(a, 256, 1, 3, batch_norm=True), _conv(a, 256, 3, 1, batch_norm=True)]
    b = _conv(x, 384, 1, batch_norm=True)
    b = _conv(b, 448, 1, 3, batch_norm=True)
    b = _conv(b, 512, 3, 1, batch_norm=True)
    b = [_conv(b, 256, 3, 1, batch_norm=True), _conv(b, 256, 1, 3, batch_norm=True)]
    return layers.Concatenate()([pooled, plain, *a, *b])
