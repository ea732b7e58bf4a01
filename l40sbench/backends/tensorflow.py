"""What the tensorflow backend does differently: tf.function forwards, TensorFlow's devices and its kernels.

The sweep's tf.distribute step is in synthetic.worker and device placement in
backends.tf_device; this module is what the pipelines reach them through.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import numpy as np

from l40sbench.backends.tf_flops import COUNTER

NAME = "tensorflow"


def version() -> str:
    import tensorflow as tf

    return tf.__version__


def sync():
    from l40sbench.backends.tf_device import device_sync

    return device_sync()


def training_compile(xla: bool) -> tuple[bool, str]:
    """(Keras' jit_compile, what that means here) for model.compile."""
    return xla, "XLA (jit_compile)" if xla else "tf.function graph, no XLA"


def forward(model, image_size: int, xla: bool) -> Callable[[np.ndarray], np.ndarray]:
    """The compiled single-image forward call that the latency probe times: uint8 [h, w, 3] -> probabilities."""
    import tensorflow as tf

    signature = [tf.TensorSpec([1, image_size, image_size, 3], tf.uint8)]
    compiled = tf.function(lambda x: model(x, training=False), input_signature=signature, jit_compile=xla)

    def call(image: np.ndarray) -> np.ndarray:
        # Host -> device, forward pass, device -> host: what serving one decoded image costs.
        return compiled(tf.convert_to_tensor(image[None])).numpy()[0]

    return call


def forward_label(xla: bool) -> str:
    return "tf.function, XLA (jit_compile)" if xla else "tf.function, no XLA"


def forward_gflops(model, size: int, dtype: str = "float32") -> float:
    from l40sbench.backends.tf_flops import forward_gflops as counted

    return counted(model, size, dtype)


FLOP_COUNTER = COUNTER
SWEEP_STEP = "tf.function under a tf.distribute strategy (synthetic.worker)"


# --- the peak's kernels ---------------------------------------------------------------------

def _dtype(precision: str):
    import tensorflow as tf

    return {"float32": tf.float32, "tf32": tf.float32, "bfloat16": tf.bfloat16, "float16": tf.float16}[precision]


def matmul(precision: str) -> Callable[[int], Callable[[], object]]:
    """make_call for peak.sweep_sizes: n -> a compiled matmul returning the product on the device."""
    import tensorflow as tf

    def make(n: int):
        generator = tf.random.Generator.from_seed(0)
        a = tf.cast(generator.normal([n, n]), _dtype(precision))
        b = tf.cast(generator.normal([n, n]), _dtype(precision))
        return tf.function(lambda: tf.linalg.matmul(a, b))

    return make


def conv(shape: tuple, filters: int):
    """The 3x3 convolution as a zero-argument compiled call returning the output on the device."""
    import tensorflow as tf

    generator = tf.random.Generator.from_seed(0)
    x = generator.normal(shape)
    k = generator.normal([3, 3, shape[3], filters])
    return tf.function(lambda: tf.nn.conv2d(x, k, strides=1, padding="SAME"))


def devices():
    """TensorFlow's devices (backends.tf_device.devices): its visible GPUs, else the CPU."""
    from l40sbench.backends.tf_device import devices as tf_devices

    return tf_devices()


def peak_memory_mb(kind: str, names: list[str] | None = None) -> float | None:
    """The most TensorFlow's allocator held on any one GPU (of `names`, else every visible one); None on the
    CPU, where it keeps no count."""
    import tensorflow as tf

    if kind != "GPU":
        return None
    names = names or [d.name for d in tf.config.list_logical_devices("GPU")]
    return max(tf.config.experimental.get_memory_info(name.split("device:")[-1])["peak"] for name in names) / 2**20


def peak_context(kind: str) -> dict:
    """What a kept peak must share with this run (tf32_enabled says which peak float32 runs are divided by on
    a GPU; intra_op_threads 0 is TensorFlow's default, one thread per core)."""
    import tensorflow as tf

    return {"logical_devices": len(tf.config.list_logical_devices(kind)),
            "tf32_enabled": bool(tf.config.experimental.tensor_float_32_execution_enabled()),
            "intra_op_threads": tf.config.threading.get_intra_op_parallelism_threads()}


@contextlib.contextmanager
def precision_mode(kind: str, precision: str):
    """On a GPU, float32 is measured with TF32 execution off and tf32 with it on; restored afterwards."""
    if kind != "GPU":
        yield
        return
    import tensorflow as tf

    default = tf.config.experimental.tensor_float_32_execution_enabled()
    tf.config.experimental.enable_tensor_float_32_execution(precision == "tf32")
    try:
        yield
    finally:
        tf.config.experimental.enable_tensor_float_32_execution(default)
