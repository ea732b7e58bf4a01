"""timm beside the suite on the same device, in the same command: inference images/s per model, batch and
precision, both sides' FLOPs by the suite's one convention (2 x MACs of convolutions and matmuls).

    python gpu/peer.py timm --out peer-timm.json               # timm, torch.utils.benchmark
    KERAS_BACKEND=jax python gpu/peer.py keras --out keras-jax.json  # the suite's Keras models

The peer: timm's inception_v3, legacy_xception, vgg19 and resnet50 (random weights, eval), timed by PyTorch's
own `torch.utils.benchmark.Timer.blocked_autorange` (it synchronises CUDA around each block), in float32 with
TF32 on for matmuls and cuDNN (torch's flags, named in the row) and under bfloat16 autocast, NCHW as timm's
published tables and channels-last at the largest batch. The suite's side: the same architectures from
keras.applications on the backend KERAS_BACKEND names (float32, and the mixed_bfloat16 policy), timed by the
suite's own clock (`core.timing.time_batches` with the backend's sync); Keras is NHWC. Keras' xception is not
timm's legacy_xception line for line: both sides' GFLOP per image are in every row, so compare images/s and
achieved TFLOP/s, not time alone.

Each row is written as soon as it is measured (the file is rewritten), and rows that --deadline-s leaves no
time for are written as `not run: the deadline`, so a hard stop keeps what was measured. `pack.py`
merges the sides into one table.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import time
from contextlib import nullcontext
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's l40sbench

MODELS = {"inception_v3": ("InceptionV3", 299), "legacy_xception": ("Xception", 299), "vgg19": ("VGG19", 224),
          "resnet50": ("ResNet50", 224)}  # timm name: (keras.applications constructor, image size)
PRECISIONS = ("bf16", "fp32")
TIMER = "torch.utils.benchmark.Timer.blocked_autorange"
SUITE_TIMER = "l40sbench core.timing.time_batches, the backend's sync"


@dataclasses.dataclass(frozen=True)
class Row:
    side: str  # timm, keras-jax, keras-torch
    model: str  # timm's name; the Keras side names its constructor in `architecture`
    architecture: str
    batch: int
    precision: str  # bf16 or fp32
    layout: str  # NCHW, channels-last, NHWC (Keras)
    image_size: int
    status: str  # ok, or why there is no figure
    precision_detail: str = ""
    gflops_per_image: float | None = None
    ms_per_batch: float | None = None  # median
    ms_iqr: float | None = None
    images_per_second: float | None = None
    achieved_tflops: float | None = None
    timer: str = ""
    device: str = ""


def plan(batches: list[int], side: str) -> list[tuple[int, str, str]]:
    """(batch, precision, layout) in the order they are measured, each for every model before the next: the
    largest batch first (the table's main figure), channels-last on timm at the largest batch last."""
    layout = "NCHW" if side == "timm" else "NHWC (Keras)"
    steps = [(batch, precision, layout) for batch in sorted(batches, reverse=True) for precision in PRECISIONS]
    return steps + ([(max(batches), "bf16", "channels-last")] if side == "timm" else [])


class Writer:
    """Keeps the rows and rewrites the output file after each one."""

    def __init__(self, path: Path, meta: dict):
        self.path, self.meta, self.rows = path, meta, []

    def add(self, row: Row) -> None:
        self.rows.append(row)
        line = f"{row.images_per_second:,.1f} images/s" if row.images_per_second else row.status
        print(f"gpu_peer: {row.side} {row.model} b{row.batch} {row.precision} {row.layout}: {line}", flush=True)
        partial = self.path.with_name(f".{self.path.name}.partial")
        partial.write_text(json.dumps({**self.meta, "rows": [dataclasses.asdict(r) for r in self.rows]}, indent=1))
        partial.replace(self.path)


def _figures(seconds_per_batch: float, batch: int, gflops: float | None, iqr: float | None = None) -> dict:
    rate = batch / seconds_per_batch
    return {"ms_per_batch": 1e3 * seconds_per_batch, "ms_iqr": None if iqr is None else 1e3 * iqr,
            "images_per_second": rate, "achieved_tflops": gflops * rate / 1e3 if gflops else None}


def timm_side(args, writer: Writer, deadline: float) -> None:
    import timm
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    cuda = torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True  # timm's benchmark, on GPUs
    torch.backends.cudnn.benchmark = True
    name = torch.cuda.get_device_name(0) if cuda else "CPU"
    writer.meta.update(torch=torch.__version__, timm=timm.__version__, device=name,
                       tf32={"matmul": torch.backends.cuda.matmul.allow_tf32, "cudnn": torch.backends.cudnn.allow_tf32})
    nets = {}  # model: (net, size, GFLOP per image)
    for model in args.models:
        net = timm.create_model(model, pretrained=False).eval().to(device)
        size = args.image_size or net.pretrained_cfg["input_size"][-1]
        counter = FlopCounterMode(display=False)
        with torch.no_grad(), counter:
            net(torch.zeros(1, 3, size, size, device=device))
        nets[model] = net, size, counter.get_total_flops() / 1e9
    for batch, precision, layout in plan(args.batches, "timm"):
        for model, (net, size, gflops) in nets.items():
            base = Row("timm", model, model, batch, precision, layout, size, "ok", device=name, timer=TIMER,
                       gflops_per_image=gflops)
            if time.monotonic() > deadline:
                writer.add(dataclasses.replace(base, status="not run: the deadline"))
                continue
            try:
                writer.add(_timm_row(base, net, layout, precision, batch, size, device, args))
            except Exception as error:  # noqa: BLE001 - a row that fails (memory, a kernel) says why; the rest run
                writer.add(dataclasses.replace(base, status=f"error: {type(error).__name__}: {error}"[:300]))


def _timm_row(base: Row, net, layout: str, precision: str, batch: int, size: int, device, args) -> Row:
    import torch
    from torch.utils import benchmark

    memory = torch.channels_last if layout == "channels-last" else torch.contiguous_format
    net = net.to(memory_format=memory)
    images = torch.randn(batch, 3, size, size, device=device).to(memory_format=memory)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16) if precision == "bf16" else nullcontext()

    def step():
        with torch.no_grad(), autocast:
            return net(images)

    for _ in range(args.warmup):
        step()
    measured = benchmark.Timer("step()", globals={"step": step}).blocked_autorange(min_run_time=args.min_run_time)
    detail = "bfloat16 autocast" if precision == "bf16" else "float32, TF32 on (matmul and cuDNN)"
    return dataclasses.replace(base, precision_detail=detail if device.type == "cuda" else f"{detail}; on a CPU",
                               **_figures(measured.median, batch, base.gflops_per_image, measured.iqr))


def keras_side(args, writer: Writer, deadline: float) -> None:
    import keras
    import numpy as np

    from l40sbench.backends import load
    from l40sbench.backends.flop_convention import shape_gflops
    from l40sbench.core.timing import time_batches

    backend = keras.backend.backend()
    ops = load(backend)
    device = ops.devices()[0]
    if backend == "torch":
        import torch

        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True  # as the timm side
        torch.backends.cudnn.benchmark = True
    context = ops.peak_context(device.kind)
    writer.meta.update(backend=backend, backend_version=ops.version(), keras=keras.__version__,
                       device=device.model, float32=context)
    sync, side, nets = ops.sync(), f"keras-{backend}", {}
    for batch, precision, layout in plan(args.batches, side):
        for model in args.models:
            architecture, default_size = MODELS[model]
            size = args.image_size or default_size
            base = Row(side, model, architecture, batch, precision, layout, size, "ok", device=device.model,
                       timer=SUITE_TIMER)
            if time.monotonic() > deadline:
                writer.add(dataclasses.replace(base, status="not run: the deadline"))
                continue
            try:
                if (model, precision) not in nets:
                    keras.mixed_precision.set_dtype_policy("mixed_bfloat16" if precision == "bf16" else "float32")
                    nets[model, precision] = getattr(keras.applications, architecture)(weights=None,
                                                                                       input_shape=(size, size, 3))
                    keras.mixed_precision.set_dtype_policy("float32")
                net = nets[model, precision]
                images = keras.ops.convert_to_tensor(np.random.default_rng(0).random((batch, size, size, 3), "float32"))
                seconds, iqr = _suite_seconds(_forward(net, images, backend), sync, args, time_batches)
                runs_as = context.get("float32_runs_as") or ("tf32" if context.get("tf32_enabled") else "float32")
                detail = "mixed_bfloat16 policy" if precision == "bf16" else f"float32, runs as {runs_as}"
                writer.add(dataclasses.replace(base, precision_detail=detail, gflops_per_image=shape_gflops(net),
                                               **_figures(seconds, batch, shape_gflops(net), iqr)))
            except Exception as error:  # noqa: BLE001 - a row that fails (memory, a kernel) says why; the rest run
                writer.add(dataclasses.replace(base, status=f"error: {type(error).__name__}: {error}"[:300]))


def _suite_seconds(call, sync, args, time_batches) -> tuple[float, float]:
    """(median seconds per call, its interquartile range): batches of calls of about 0.1 s between two syncs."""
    for _ in range(args.warmup):
        sync(call())
    single = time_batches(call, 1, 1, sync=sync)[0]
    calls = max(1, int(0.1 / max(single, 1e-6)))
    samples = max(3, min(20, int(args.min_run_time / max(calls * single, 1e-6))))
    durations = [d / calls for d in time_batches(call, calls, samples, sync=sync)]
    quartiles = statistics.quantiles(durations, n=4)
    return statistics.median(durations), quartiles[2] - quartiles[0]


def _forward(model, images, backend: str):
    """One inference call on a batch already on the device, as the suite's probe calls the model."""
    if backend == "jax":
        from l40sbench.backends.jax import stateless_forward, variable_values

        jitted, (trainable, non_trainable) = stateless_forward(model), variable_values(model)
        return lambda: jitted(trainable, non_trainable, images)
    if backend == "torch":
        import torch

        def run():
            with torch.no_grad():
                return model(images, training=False)

        return run
    return lambda: model(images, training=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("side", choices=("timm", "keras"), help="timm, or the suite's Keras models on KERAS_BACKEND")
    parser.add_argument("--out", type=Path, required=True, help="the JSON file of rows (rewritten after each)")
    parser.add_argument("--models", default=",".join(MODELS), help=f"timm names among {', '.join(MODELS)}")
    parser.add_argument("--batches", default="256,1", help="batch sizes (default 256,1)")
    parser.add_argument("--image-size", type=int, default=None, help="override each model's own size (rehearsal)")
    parser.add_argument("--min-run-time", type=float, default=1.0, help="seconds of timed calls per row")
    parser.add_argument("--warmup", type=int, default=3, help="untimed calls first (compilation, cuDNN's choice)")
    parser.add_argument("--deadline-s", type=float, default=120.0, help="no row starts after this many seconds")
    args = parser.parse_args(argv)
    deadline = time.monotonic() + args.deadline_s
    try:
        args.models = [m for m in args.models.split(",") if m]
        args.batches = [int(b) for b in args.batches.split(",") if b]
        unknown = sorted(set(args.models) - set(MODELS))
        if unknown or not args.batches or min(args.batches) < 1:
            raise ValueError(f"models must be among {', '.join(MODELS)} (got {unknown}) and batches >= 1")
    except ValueError as error:
        print(f"gpu_peer: {error}", file=sys.stderr)
        return 2
    args.out.parent.mkdir(parents=True, exist_ok=True)
    from l40sbench.peak.host import KERNEL, matmul_gflops

    writer = Writer(args.out, {"side": args.side, "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                               "deadline_s": args.deadline_s, "pid": os.getpid(),
                               "host_matmul_gflops": matmul_gflops(),
                               "host_matmul": f"{KERNEL}, before the rows"})
    (timm_side if args.side == "timm" else keras_side)(args, writer, deadline)
    return 0


if __name__ == "__main__":
    sys.exit(main())
