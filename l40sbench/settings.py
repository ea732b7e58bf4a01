"""Run settings both pipelines share, in the one place each config and the CLI import."""

from __future__ import annotations

from l40sbench.core.validate import require_at_least, require_one_of

PRECISIONS = ("fp32", "mixed_float16", "mixed_bfloat16")
# The dtype each precision computes in; variables stay float32 in the mixed ones.
COMPUTE_DTYPES = {"fp32": "float32", "mixed_float16": "float16", "mixed_bfloat16": "bfloat16"}


def keras_policy(precision: str) -> str:
    """The Keras mixed-precision policy name of a --precision value."""
    return "float32" if precision == "fp32" else precision


MAX_PORT = 65535
ARTICLE_BATCH_SIZE = 16
ARTICLE_WARMUP = 1  # the first test image is excluded from the latency statistics


def check_run_settings(config: object) -> None:
    """The checks of the fields every run config has (batch_size, limit, warmup, precision).

    Raises:
      ValueError: naming the field and the value received.
    """
    require_at_least(config, ("batch_size", "limit"), 1)
    require_at_least(config, ("warmup",), 0)
    require_one_of(config, "precision", PRECISIONS)


def check_runtime_settings(config: object) -> None:
    """runtimes: known names (or "all" alone); runtime_precision: one of the runtime precisions.

    Raises:
      ValueError: naming the field and the value received.
    """
    from l40sbench.runtimes.registry import PRECISIONS as RUNTIME_PRECISIONS
    from l40sbench.runtimes.registry import RUNTIMES

    require_one_of(config, "runtime_precision", RUNTIME_PRECISIONS)
    names = tuple(config.runtimes)
    unknown = [name for name in names if name != "all" and name not in RUNTIMES.names()]
    if not names or unknown or ("all" in names and len(names) > 1) or len(set(names)) != len(names):
        raise ValueError(f"runtimes must be distinct names from {', '.join(RUNTIMES.names())}, or all alone. "
                         f"Received: runtimes={list(names)}")


def check_cluster_settings(config: object) -> None:
    """worker_hosts: distinct host:port entries; task_index: this host's place among them.

    Raises:
      ValueError: naming the field and the value received.
    """
    require_at_least(config, ("task_index",), 0)
    hosts = tuple(config.worker_hosts)
    for host in hosts:
        name, _, port = host.rpartition(":")
        if not name or not port.isdigit() or not 1 <= int(port) <= MAX_PORT:
            raise ValueError(f"worker hosts must be host:port with a port from 1 to {MAX_PORT}. Received: {host!r}")
    if len(set(hosts)) != len(hosts):
        raise ValueError(f"worker_hosts must not repeat a value. Received: worker_hosts={list(hosts)}")
    if hosts and config.task_index >= len(hosts):
        raise ValueError(f"task_index must be < the {len(hosts)} worker hosts. Received: task_index={config.task_index}")


ONE_DEVICE_OFF_TENSORFLOW = ("fine-tuning on several devices or hosts runs on the tensorflow backend (tf.distribute); "
                             "{backend} trains on one")


def check_backend_settings(config: object) -> None:
    """backend: a Keras backend; off tensorflow, one device on one host and no runtime but the backend's own.

    Raises:
      ValueError: naming the field and the value received.
    """
    from l40sbench.backends import NAMES

    require_one_of(config, "backend", NAMES)
    if config.backend == "tensorflow":
        return
    if config.devices > 1 or (config.devices_available or 1) > 1 or config.worker_hosts:
        raise ValueError(f"{ONE_DEVICE_OFF_TENSORFLOW.format(backend=config.backend)}. Received: devices={config.devices}")
    if tuple(config.runtimes) != ("tf",):
        raise ValueError(f"the other inference runtimes take the model through TensorFlow's exporters: use "
                         f"--backend tensorflow for them. Received: runtimes={list(config.runtimes)}")

# classify's input paths (classify.inputs), the first the default; detect's one; what a study's row says of its own
INPUTS = ("cached", "files", "generator")
DETECT_INPUT = "parser"
INPUT_PATHS = {
    "cached": "decoded once and held in memory, batched by Keras",
    "files": "image files decoded and resized every epoch (tf.data, in parallel)",
    "generator": "image files decoded every epoch by a Python PyDataset (as a TF1-era Keras fit_generator)",
    DETECT_INPUT: "Model Garden's parser: TFRecords decoded, augmented and anchor-labelled every step",
}
STUDY_INPUT = "not stated by the study"
