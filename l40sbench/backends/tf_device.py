"""TensorFlow device facts and placement the pipelines and the sweep share (imported only where TF is)."""

from __future__ import annotations

import json
import os

from l40sbench.backends.placement import Placement
from l40sbench.core.devices import CPU, GPU, Device, kind_of
from l40sbench.core.timing import Sync, no_sync, on_host


def physical_gpus() -> tuple[list[Device], list]:
    """TensorFlow's physical GPUs, each placed on the driver's board by name (device_match.place), and the
    driver's boards TensorFlow skipped."""
    import tensorflow as tf

    from l40sbench.backends.device_match import gpu_device, place

    found = tf.config.list_physical_devices("GPU")
    models = [tf.config.experimental.get_device_details(g).get("device_name") for g in found]
    placed, skipped = place(models) if found else ([], [])
    return [gpu_device(known, k, g.name, model) for k, (g, model, known) in enumerate(zip(found, models, placed))], skipped


def devices() -> list[Device]:
    """The devices TensorFlow computes on: its visible GPUs (each on the driver's board, with its UUID), else
    the CPU. Reads physical devices only: the runtime does not start."""
    import tensorflow as tf

    from l40sbench.core.env import cpu_model

    visible = {g.name for g in tf.config.get_visible_devices("GPU")}
    if not visible:
        return [Device(CPU, "/physical_device:CPU:0", 0, cpu_model())]
    return [d for d in physical_gpus()[0] if d.name in visible]


def used_by(names) -> tuple[Device, ...]:
    """The device records of a placement's logical device names: the k-th logical GPU is the k-th visible GPU
    (one logical device each), and a logical CPU device is a share of the one CPU."""
    known = devices()
    found = []
    for name in names:
        index = int(name.rsplit(":", 1)[1])
        if "GPU" in name and index < len(known) and known[index].kind == GPU:
            found.append(Device(GPU, name, known[index].index, known[index].model, known[index].uuid,
                                known[index].memory_mb))
        else:
            found.append(Device(CPU, name, index, known[0].model if known[0].kind == CPU else "CPU"))
    return tuple(found)


def has_gpu() -> bool:
    return kind_of(devices()) == GPU


def device_sync() -> Sync:
    """Blocks until queued GPU work is done (sync()), or until a timed call's output is (sync(output)): an
    output already on the host (`.numpy()` waited for it) needs nothing more. Nothing to wait for on the CPU."""
    import tensorflow as tf

    if not has_gpu():
        return no_sync

    def sync(*output: object) -> None:
        if output and on_host(output[0]):
            return
        tf.test.experimental.sync_devices()

    return sync


def configure_devices(devices: int, memory_limit_gb: float | None = None, multi_worker: bool = False) -> str:
    """Makes `devices` local devices visible and returns their kind, "GPU" or "CPU".

    Only physical-device calls here: TensorFlow's runtime must not start before
    a multi-worker strategy configures its collectives.

    Raises:
      ValueError: more GPUs asked for than are visible.
    """
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    if gpus:
        if devices > len(gpus):
            raise ValueError(f"{devices} devices asked, {len(gpus)} GPU(s) visible")
        tf.config.set_visible_devices(gpus[:devices], "GPU")
        for gpu in gpus[:devices]:
            if memory_limit_gb:
                tf.config.set_logical_device_configuration(
                    gpu, [tf.config.LogicalDeviceConfiguration(memory_limit=int(memory_limit_gb * 1024))])
            else:
                tf.config.experimental.set_memory_growth(gpu, True)
        return "GPU"
    if devices > 1 and not multi_worker:
        # The CPU split into logical devices: the multi-device path, runnable without a GPU.
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * devices)
    return "CPU"


def cluster_env(worker_hosts: tuple[str, ...], task_index: int) -> str:
    """TF_CONFIG for this worker, as tf.distribute reads it."""
    return json.dumps({"cluster": {"worker": list(worker_hosts)}, "task": {"type": "worker", "index": task_index}})


def place(devices: int, available: int, worker_hosts: tuple[str, ...] = (), task_index: int = 0) -> Placement:
    """The strategy a fine-tune trains under: none for one local device (the plain path), MirroredStrategy
    over the first `devices` of `available` configured devices, MultiWorkerMirroredStrategy across hosts.

    Call it before any TensorFlow op runs: the multi-worker strategy must set up its collectives first.
    """
    import tensorflow as tf

    gpus = len(tf.config.list_physical_devices("GPU"))
    cores = os.cpu_count() or 1
    if not gpus and worker_hosts and devices > 1:
        raise ValueError("several workers need GPUs for more than one device each: a worker without one runs "
                         "its collectives on one CPU device")
    if not gpus and available > cores:
        raise ValueError(f"more logical devices than this CPU has cores ({cores}); each device needs at least one")
    if worker_hosts:
        os.environ["TF_CONFIG"] = cluster_env(worker_hosts, task_index)
        configure_devices(devices, multi_worker=True)
        strategy = tf.distribute.MultiWorkerMirroredStrategy()
        names = tuple(strategy.extended.worker_devices)
        return Placement(strategy, used_by(names), workers=len(worker_hosts),
                         facts={"strategy": "MultiWorkerMirroredStrategy", "task_index": task_index,
                                "worker_hosts": list(worker_hosts)})
    try:
        kind = configure_devices(available)
    except RuntimeError:  # TensorFlow already started in this process (an earlier count of a --devices list)
        kind = "GPU" if has_gpu() else "CPU"
    local = [d.name for d in tf.config.list_logical_devices(kind)]
    if len(local) < devices:
        raise ValueError(f"{devices} devices asked, {len(local)} {kind} device(s) configured in this process")
    if devices == 1:
        return Placement(None, used_by(local[:1]), facts={"strategy": "none (one device)"})
    strategy = tf.distribute.MirroredStrategy(devices=local[:devices])
    names = tuple(strategy.extended.worker_devices)
    return Placement(strategy, used_by(names), facts={"strategy": "MirroredStrategy"})


def place_for(config) -> Placement:
    """`place` for a run config (devices, devices_available, and worker_hosts and task_index where it has them).

    Raises:
      UserError: more devices than the machine has, or a split the CPU cannot make.
    """
    from l40sbench.errors import UserError

    try:
        return place(config.devices, config.devices_available or config.devices,
                     tuple(config.worker_hosts), config.task_index)
    except ValueError as exc:
        raise UserError(f"--devices {config.devices}: {exc}") from None


def place_early(config) -> Placement | None:
    """`place_for` now where the run needs several devices or hosts, None where one device will do.

    Called before any TensorFlow op (a TFDS set runs some): a multi-worker strategy sets up its
    collectives first, and the CPU can be split into logical devices only while TensorFlow has not started.
    """
    several = (config.devices_available or config.devices) > 1 or config.worker_hosts
    return place_for(config) if several else None
