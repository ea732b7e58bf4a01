"""The child process of a sweep: measures one configuration and prints its row.

Run as `python -m l40sbench.synthetic.worker JOB_JSON` (or `--measure-peak`, or
`--fingerprint` for the environment alone). The
last stdout line starting with ROW_MARKER carries the JSON result. A crash or
an out-of-memory here ends this process only; the parent records it.

Everything runs under a tf.distribute strategy, one device or many, so the
single-device figure and the scaled ones come from the same code:
MirroredStrategy over N GPUs, or over N logical CPU devices when there is no
GPU; MultiWorkerMirroredStrategy when TF_CONFIG names a cluster.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Sequence

from l40sbench.core.devices import Device, kind_of
from l40sbench.core.memory import PEAK_MEMORY, host_peak_mb
from l40sbench.core.results import Row
from l40sbench.errors import named
from l40sbench.synthetic.job import Job, failed_row, flops_per_image, window_steps

ROW_MARKER = "L40SBENCH-ROW "
CLASSES = 1000
LEARNING_RATE = 0.005  # tf_cnn_benchmarks' default for these models; speed does not depend on it


def _workers() -> tuple[int, int]:
    """(number of workers, this worker's index) from TF_CONFIG; (1, 0) without one."""
    config = json.loads(os.environ.get("TF_CONFIG") or "{}")
    workers = len(config.get("cluster", {}).get("worker", [])) + len(config.get("cluster", {}).get("chief", []))
    return max(workers, 1), int(config.get("task", {}).get("index", 0))


def _optimizer(name: str, precision: str):
    import keras

    optimizer = {
        "sgd": lambda: keras.optimizers.SGD(LEARNING_RATE),
        "momentum": lambda: keras.optimizers.SGD(LEARNING_RATE, momentum=0.9),
        "adam": lambda: keras.optimizers.Adam(LEARNING_RATE),
    }[name]()
    if precision == "mixed_float16":
        optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    return optimizer


def build_step(strategy, model, job: Job, global_batch: int):
    """A compiled call that runs one training (or inference) step on every replica.

    The images and labels are made on each device once, here, outside any
    timing: the sweep measures the model, not an input pipeline.
    """
    import keras
    import tensorflow as tf

    size = model.input_shape[1]

    def make_batch(context):
        del context
        images = tf.random.uniform([job.per_device_batch, size, size, 3], dtype=tf.float32)
        labels = tf.random.uniform([job.per_device_batch], maxval=CLASSES, dtype=tf.int32)
        return images, labels

    images, labels = strategy.experimental_distribute_values_from_function(make_batch)
    if job.settings.mode == "inference":
        def forward(x):
            return tf.reduce_sum(tf.cast(model(x, training=False), tf.float32))

        if job.settings.xla:
            forward = tf.function(forward, jit_compile=True)

        def replica_step(x, y):
            del y
            return forward(x)
    else:
        optimizer = _optimizer(job.settings.optimizer, job.settings.precision)
        scaled = hasattr(optimizer, "scale_loss") and job.settings.precision == "mixed_float16"

        def gradients(x, y):
            with tf.GradientTape() as tape:
                probabilities = tf.cast(model(x, training=True), tf.float32)
                per_image = keras.losses.sparse_categorical_crossentropy(y, probabilities)
                loss = tf.nn.compute_average_loss(per_image, global_batch_size=global_batch)
                target = optimizer.scale_loss(loss) if scaled else loss
            return loss, tape.gradient(target, model.trainable_variables)

        if job.settings.xla:  # XLA compiles each replica's computation; the cross-replica update stays outside
            gradients = tf.function(gradients, jit_compile=True)

        def replica_step(x, y):
            loss, grads = gradients(x, y)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss

    @tf.function
    def step():
        per_replica = strategy.run(replica_step, args=(images, labels))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

    return step


def _timed_row(job: Job, step, sync, *, gflops: float | None, replicas: int, workers: int, used: Sequence[Device],
               peak_memory_mb: Callable[[], float | None], started: float, compiled: str,
               flop_counter: str | None = None) -> Row:
    """Warms up, times `steps` steps on the devices `used` in windows of window_steps() steps between two
    syncs (each window over its steps is one step figure), reads the model's peak memory before the guard's
    burst, and makes the configuration's row (every backend's)."""
    from l40sbench.backends import load
    from l40sbench.backends.telemetry import source
    from l40sbench.core.intervals import describe
    from l40sbench.core.phases import Phases
    from l40sbench.core.stats import step_throughput
    from l40sbench.core.timing import time_batches, time_calls
    from l40sbench.peak.burst import Guard

    time_calls(lambda _: step(), range(job.settings.warmup_steps), sync=sync)
    kind = kind_of(used)
    phases = Phases(source(used))  # what the run's devices did while the steps were timed
    per_window = window_steps(job.settings.steps)
    with phases.phase("steps") as done:
        windows = time_batches(step, per_window, job.settings.steps // per_window, sync=sync)
        done["images"] = job.per_device_batch * replicas * per_window * len(windows)
    seconds = [w / per_window for w in windows]
    model_peak_mb = peak_memory_mb()  # before the guard's burst, which is not the model's
    guard = Guard(job.settings.backend, sync)  # the machine's speed right after this row's steps
    guard.check(f"{job.model} b{job.per_device_batch} x{replicas}")
    stats = step_throughput(seconds, job.per_device_batch * replicas)
    step_ms = tuple(1000.0 * s for s in seconds)
    achieved = stats.images_per_second * flops_per_image(gflops, job.settings.mode) / 1e3 if gflops else None
    return Row(
        model=job.model, mode=job.settings.mode, precision=job.settings.precision, xla=job.settings.xla, optimizer=job.settings.optimizer,
        devices=replicas, workers=workers, device_kind=kind, per_device_batch=job.per_device_batch,
        total_batch=job.per_device_batch * replicas, status="ok", warmup_steps=job.settings.warmup_steps,
        steps=stats.steps * per_window, images_per_second=stats.images_per_second,
        images_per_second_stderr=stats.images_per_second_stderr, step_ms_mean=stats.step_ms_mean,
        step_jitter_percent=stats.step_jitter_percent, step_ms=step_ms, step_ms_interval=describe(step_ms),
        bursts=tuple(b.to_dict() for b in guard.bursts), telemetry=phases.record(),
        gflops_per_image=gflops, achieved_tflops=achieved,
        peak_memory_mb=model_peak_mb, seconds=time.perf_counter() - started, backend=job.settings.backend,
        extra={"devices_used": [d.to_dict() for d in used],
               "flop_counter": flop_counter or load(job.settings.backend).FLOP_COUNTER, "step": compiled,
               "peak_memory": PEAK_MEMORY,
               "window_steps": per_window},
    )


def measure_keras3(job: Job) -> Row:
    """The same measurement on jax or torch: the backend's own compiled step, on one device or (jax) several
    under keras.distribution.DataParallel."""
    import keras

    from l40sbench.backends import load
    from l40sbench.settings import keras_policy
    from l40sbench.synthetic.models import MODELS

    kernels = load(job.settings.backend)
    keras.mixed_precision.set_global_policy(keras_policy(job.settings.precision))
    step, _, replicas, model = kernels.sweep_step(MODELS.get(job.model), job, _optimizer(job.settings.optimizer, "fp32"),
                                              keras.losses.sparse_categorical_crossentropy)
    counter = kernels.FLOP_COUNTER
    try:
        gflops = job.gflops_per_image if job.gflops_per_image is not None else kernels.forward_gflops(
            model, model.input_shape[1])
    except ValueError as exc:  # a count that is not positive: no utilisation rather than a wrong one
        gflops, counter = None, f"{counter}: utilisation unavailable ({exc})"
    used = kernels.devices()[:replicas]
    kind = kind_of(used)
    return _timed_row(job, step, kernels.sync(), gflops=gflops, replicas=replicas, workers=1, used=used,
                      peak_memory_mb=lambda: kernels.peak_memory_mb(kind) or host_peak_mb(), started=time.perf_counter(),
                      compiled=kernels.SWEEP_STEP, flop_counter=counter)


def measure(job: Job) -> Row:
    """Builds the model under the strategy, warms up, times `steps` steps."""
    if job.settings.backend != "tensorflow":
        return measure_keras3(job)
    workers, _ = _workers()
    multi_worker = workers > 1
    import keras
    import tensorflow as tf

    from l40sbench.backends.tf_device import configure_devices

    # Devices are configured before any strategy starts TensorFlow's runtime.
    kind = configure_devices(job.devices, job.settings.memory_limit_gb, multi_worker)

    from l40sbench.backends import tensorflow as tf_kernels
    from l40sbench.backends.tf_device import device_sync, used_by
    from l40sbench.backends.tf_flops import forward_gflops
    from l40sbench.settings import keras_policy
    from l40sbench.synthetic.models import MODELS

    spec = MODELS.get(job.model)
    keras.mixed_precision.set_global_policy(keras_policy(job.settings.precision))
    if multi_worker:
        strategy = tf.distribute.MultiWorkerMirroredStrategy()
    else:
        strategy = tf.distribute.MirroredStrategy(
            devices=[d.name for d in tf.config.list_logical_devices(kind)][:job.devices])
    names = list(strategy.extended.worker_devices)
    replicas = strategy.num_replicas_in_sync
    with strategy.scope():
        model = spec.build()
        gflops = job.gflops_per_image if job.gflops_per_image is not None else forward_gflops(model, spec.size)
        step = build_step(strategy, model, job, job.per_device_batch * replicas)
    return _timed_row(job, step, device_sync(), gflops=gflops, replicas=replicas, workers=workers, used=used_by(names),
                      peak_memory_mb=lambda: tf_kernels.peak_memory_mb(kind, names) or host_peak_mb(), started=time.perf_counter(),
                      compiled=f"tf.function under {type(strategy).__name__}" + (", XLA" if job.settings.xla else ""))


# A GPU out of memory for a library's workspace surfaces as InternalError, not ResourceExhaustedError.
GPU_ALLOCATION_FAILURES = ("CUBLAS_STATUS_ALLOC_FAILED", "CUDNN_STATUS_ALLOC_FAILED", "out of memory",
                           "Failed to allocate", "failed to allocate", "workspace")


def _is_oom(exc: BaseException) -> bool:
    if "tensorflow" not in sys.modules:  # jax says RESOURCE_EXHAUSTED, torch "CUDA out of memory"
        text = str(exc).split("\n")[0]
        return isinstance(exc, MemoryError) or "RESOURCE_EXHAUSTED" in text or "out of memory" in text
    import tensorflow as tf

    if isinstance(exc, (MemoryError, tf.errors.ResourceExhaustedError)) or "OOM" in str(exc).split("\n")[0]:
        return True
    return isinstance(exc, tf.errors.InternalError) and any(mark in str(exc) for mark in GPU_ALLOCATION_FAILURES)


def job_main(job: Job) -> Row:
    from l40sbench.backends import load

    workers, _ = _workers()
    try:
        return measure(job)
    except Exception as exc:  # noqa: BLE001 - any failure is this configuration's result
        status = "oom" if _is_oom(exc) else "error"
        return failed_row(job, status, named(exc),
                          device_kind=load(job.settings.backend).devices()[0].kind, workers=workers)


def measure_peak_main() -> dict:
    """The device's peak per precision (and the conv rate) plus the environment, for the sweep's header."""
    from l40sbench.backends import facts, load
    from l40sbench.core.env import fingerprint
    from l40sbench.peak.measure import measure_env

    backend = os.environ.get("KERAS_BACKEND", "tensorflow")
    device_peak = measure_env(sync=load(backend).sync(), backend=backend)
    return {"peak": device_peak, "env": {**fingerprint(facts(backend)), "peak": device_peak}}


def main(argv: list[str]) -> int:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if argv[:1] == ["--measure-peak"]:
        result = measure_peak_main()
    elif argv[:1] == ["--fingerprint"]:
        from l40sbench.backends import facts, load
        from l40sbench.core.env import fingerprint

        backend = os.environ.get("KERAS_BACKEND", "tensorflow")
        load(backend).version()  # the fingerprint lists its devices
        result = {"env": fingerprint(facts(backend))}
    else:
        result = job_main(Job.from_dict(json.loads(argv[0]))).to_dict()
    sys.stdout.write(ROW_MARKER + json.dumps(result) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
