"""TensorFlow device facts both pipelines need (imported only where TF is)."""

from __future__ import annotations

from l40sbench.core.timing import Sync, no_sync


def has_gpu() -> bool:
    import tensorflow as tf

    return bool(tf.config.list_logical_devices("GPU"))


def device_sync() -> Sync:
    """Blocks until queued GPU work is done; nothing to wait for on the CPU."""
    import tensorflow as tf

    return tf.test.experimental.sync_devices if has_gpu() else no_sync
