"""What `study` runs: the studies as steps of ordinary commands, each with its estimated time (study.budget cuts
a plan to fit a budget). Pure: no clock, no model, no TensorFlow.

Each step is one command of the suite (`classify`, `detect`, `synthetic`; `infer` for a detector file of the
user's) with the study's flags, run into a
folder of its own. A step's time is estimated from a reference measurement of the same work on a 2-core
CPU host (docs/performance-log.md: "Classification protocol on the stand-in" and "Detection at 640 px"),
scaled by this machine's float32 peak against that host's, by the pixels and by the images, plus a fixed
start-up that does not scale (imports, building, tracing). It is an estimate: the study corrects its ETA by
the steps it has finished.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from l40sbench.errors import UserError
from l40sbench.study import memory

STUDIES = ("l40s", "leadergpu")
ARTICLE_EPOCHS = {"classify": 10, "detect": 200}
CLASSIFY = {"xception": 299, "inceptionv3": 299, "vgg19": 224}  # the L40S study's bases at their native sizes
DETECT = ("faster_rcnn_inception_v2", "faster_rcnn_resnet50", "ssd_resnet50_fpn")
DETECT_SIZE = 640
STANDIN_IMAGES = {"classify": (557, 140), "detect": (240, 60)}  # (train, test) of the stand-ins

# Seconds of the work on the reference host, at its float32 peak (GFLOP/s): per training image (an epoch's
# time over its images, the test split's scoring after each epoch included) and per test image one at a time,
# at the sizes above. The classifiers' were measured on this project's 2-core host at 223 GFLOP/s (2026-12-06,
# `study l40s --only classify-* --budget 16m`: docs/study.md, "Planned against run"); the first ones, from a
# host at 410 GFLOP/s scaled by the peak, planned xception and vgg19 1.7x too long here.
REFERENCE_PEAK = {"classify": 223.0, "detect": 217.0}
REFERENCE_SECONDS = {
    "xception": (78.6 / 557, 0.113), "inceptionv3": (65.3 / 557, 0.072), "vgg19": (140.6 / 557, 0.186),
    "ssd_resnet50_fpn": (2.82, 1.11), "faster_rcnn_resnet50": (3.02, 1.20), "faster_rcnn_inception_v2": (2.52, 1.03),
}
STARTUP_SECONDS = {"classify": 30.0, "detect": 90.0, "synthetic": 20.0, "infer": 40.0}
BOUND_EPOCHS = 0.5  # the bound block's passes after training, in epochs (docs/PERFORMANCE.md: bound-cost)

# --quick: the smallest sizes each model takes and a handful of images, so a study finishes in minutes here.
QUICK_CLASSIFY = {"xception": 71, "inceptionv3": 75, "vgg19": 32}
QUICK = {"classify": {"limit": 8, "epochs": 2, "batch": 4}, "detect": {"limit": 4, "epochs": 1, "batch": 2, "size": 128}}
# The LeaderGPU tables' grid: tf_cnn_benchmarks' models and batch sizes per GPU, on every device count here.
LEADERGPU_MODELS = ("alexnet", "googlenet", "inceptionv3", "inceptionv4", "lenet", "overfeat", "resnet101",
                    "resnet152", "resnet50", "vgg11", "vgg16", "vgg19")
LEADERGPU_BATCHES = (32, 64, 128, 256, 512)
QUICK_SWEEP = {"models": ("lenet", "alexnet"), "batches": (4,), "steps": 2}
# Forward GFLOP per image at each model's own size: the suite's own counts (tests/benchmarks/baseline.json,
# structure.synthetic.*); a training step is three forwards, run at about half the peak (docs/performance-log.md,
# "Utilisation of the measured matmul rate": 47-89 % on a CPU).
SWEEP_GFLOPS = {"alexnet": 1.68, "googlenet": 3.18, "inceptionv3": 11.47, "inceptionv4": 24.58, "lenet": 0.03,
                "overfeat": 5.6, "resnet101": 15.2, "resnet152": 22.65, "resnet50": 7.76, "vgg11": 15.23,
                "vgg16": 30.96, "vgg19": 39.29}
SWEEP_UTILISATION = 0.5
SWEEP_CHILD_SECONDS = 10.0  # a configuration's own process: imports, building, compiling
SWEEP_STEPS, SWEEP_WARMUP, SWEEP_FLOOR_STEPS = 30, 5, 10
# A detector file of the user's (--model): `infer` on detect's data with LoadGen's single-stream and offline, the
# scenarios of MLPerf's detection rows (reference mlperf-v6.0). No reference time exists for a model the suite
# does not know: its estimate is the start-up, the two tests' minimum durations and their drain, and the test
# images twice (the reference probe and the scoring) at MODEL_SECONDS an image on the reference host.
MODEL_SCENARIOS = ("single-stream", "offline")
MODEL_DURATION_S = {False: 60.0, True: 2.0}  # LoadGen's minimum seconds a test: its default, and --quick's
MODEL_TEST_SECONDS = 15.0  # a test's own start and drain beyond its minimum duration
MODEL_SECONDS = 0.5  # an image, at REFERENCE_PEAK["detect"]: between a YOLO11n (0.02 s here) and ssd (1.1 s)
MODEL_QUICK_IMAGES = 8  # --quick: images a split


@dataclass(frozen=True)
class Step:
    """One command of a study: its folder name, the suite's arguments, its estimated seconds, and how its
    figures relate to the study's protocol when a budget cut it ("" when they are the protocol's)."""

    name: str
    task: str
    argv: tuple[str, ...]
    estimate_s: float
    epochs: int | None = None
    cut: str = ""
    peak_mb: float | None = None  # its estimated peak memory (study.memory), where the plan knows the device's
    memory: str = ""  # what the plan says of its memory: "" where it fits with room, else tight or will not fit
    fits: bool = True  # False: the study does not start it (it would run out of memory)

    @property
    def planned_s(self) -> float:
        """The seconds it adds to the plan: its estimate, or none for a step that will not start."""
        return self.estimate_s if self.fits else 0.0


@dataclass(frozen=True)
class Plan:
    study: str
    steps: tuple[Step, ...]
    quick: bool = False
    cuts: tuple[str, ...] = ()  # what --budget reduced, in the order it did

    @property
    def total_s(self) -> float:
        return planned_total(self.steps)

    def to_dict(self) -> dict:
        return {"study": self.study, "quick": self.quick, "cuts": list(self.cuts), "total_s": self.total_s,
                "steps": [{"name": s.name, "task": s.task, "argv": list(s.argv), "estimate_s": s.estimate_s,
                           "epochs": s.epochs, "cut": s.cut, "peak_mb": s.peak_mb, "memory": s.memory,
                           "fits": s.fits} for s in self.steps]}

    @classmethod
    def from_dict(cls, data: dict) -> Plan:
        steps = tuple(Step(s["name"], s["task"], tuple(s["argv"]), s["estimate_s"], s["epochs"], s["cut"],
                           s.get("peak_mb"), s.get("memory", ""), s.get("fits", True)) for s in data["steps"])
        return cls(data["study"], steps, data["quick"], tuple(data["cuts"]))

    def with_flags(self, *flags: str) -> Plan:
        """The plan with `flags` added to every training step's command (flags that classify, detect and synthetic
        take; a model step's `infer` trains nothing)."""
        return replace(self, steps=tuple(step if step.task == "infer" else replace(step, argv=step.argv + flags)
                                         for step in self.steps))

    def only(self, names: tuple[str, ...]) -> Plan:
        """The plan's steps named in `names`, in the plan's order. Raises UserError for a name it lacks."""
        unknown = sorted(set(names) - {step.name for step in self.steps})
        if unknown:
            raise UserError(f"--only: no step {', '.join(unknown)} in study {self.study} (its steps: "
                            f"{', '.join(step.name for step in self.steps)})")
        return replace(self, steps=tuple(step for step in self.steps if step.name in names))


@dataclass(frozen=True)
class Machine:
    """What the estimates read: the float32 peak (GFLOP/s), the devices a sweep may spread over, and the memory
    a step may use (None: not known, no step is judged)."""

    peak_gflops: float
    gpu: bool
    devices: int = 1
    room: memory.Room | None = None


def planned_total(steps) -> float:
    """The seconds `steps` add to a plan (a step that will not start adds none)."""
    return sum(step.planned_s for step in steps)


def _judged(step: Step, model: str, batch: int, size: int, images: int, machine: Machine) -> Step:
    """The step with its estimated peak memory against the machine's room, where both are known."""
    if machine.room is None or model not in memory.committed()["models"]:
        return step
    peak, said, fits = memory.judge(model, batch, size, images, machine.gpu, machine.room)
    return replace(step, peak_mb=round(peak, 1), memory=said, fits=fits)


def _work_seconds(model: str, task: str, train_images: int, test_images: int, epochs: int, scale: float,
                  machine: Machine) -> float:
    per_train, per_test = REFERENCE_SECONDS[model]
    speed = REFERENCE_PEAK[task] / machine.peak_gflops
    return speed * scale * ((epochs + BOUND_EPOCHS) * train_images * per_train + test_images * per_test)


def classify_step(base: str, quick: bool, data: str | None, machine: Machine, epochs: int | None = None) -> Step:
    size = QUICK_CLASSIFY[base] if quick else CLASSIFY[base]
    epochs = epochs or (QUICK["classify"]["epochs"] if quick else ARTICLE_EPOCHS["classify"])
    train, test = (QUICK["classify"]["limit"],) * 2 if quick else STANDIN_IMAGES["classify"]
    batch = QUICK["classify"]["batch"] if quick else 16
    argv = ["classify", "--base", base, "--image-size", str(size), "--epochs", str(epochs), "--batch-size", str(batch)]
    argv += ["--limit", str(QUICK["classify"]["limit"]), "--weights", "none"] if quick else []
    argv += ["--data", data] if data else []
    scale = (size / CLASSIFY[base]) ** 2
    estimate = STARTUP_SECONDS["classify"] + _work_seconds(base, "classify", train, test, epochs, scale, machine)
    return _judged(Step(f"classify-{base}", "classify", tuple(argv), estimate, epochs), base, batch, size,
                   train + test, machine)


def detect_step(base: str, quick: bool, data: str | None, machine: Machine, epochs: int | None = None) -> Step:
    size = QUICK["detect"]["size"] if quick else DETECT_SIZE
    if epochs is None:
        epochs = QUICK["detect"]["epochs"] if quick else (ARTICLE_EPOCHS["detect"] if machine.gpu else 1)
    train, test = (QUICK["detect"]["limit"],) * 2 if quick else STANDIN_IMAGES["detect"]
    batch = QUICK["detect"]["batch"] if quick else 16
    argv = ["detect", "--base", base, "--image-size", str(size), "--epochs", str(epochs), "--batch-size", str(batch)]
    argv += ["--limit", str(QUICK["detect"]["limit"])] if quick else []
    argv += ["--data", data] if data else []
    scale = (size / DETECT_SIZE) ** 2
    estimate = STARTUP_SECONDS["detect"] + _work_seconds(base, "detect", train, test, epochs, scale, machine)
    cut = "" if epochs == ARTICLE_EPOCHS["detect"] else (
        f"{epochs} of the study's {ARTICLE_EPOCHS['detect']} epochs: its 200-epoch time is projected from them")
    return _judged(Step(f"detect-{base}", "detect", tuple(argv), estimate, epochs, cut), base, batch, size,
                   train + test, machine)


def sweep_step(quick: bool, machine: Machine, steps: int | None = None,
                batches: tuple[int, ...] | None = None) -> Step:
    models = QUICK_SWEEP["models"] if quick else LEADERGPU_MODELS
    batches = batches or (QUICK_SWEEP["batches"] if quick else LEADERGPU_BATCHES)
    counts = sorted({1, machine.devices})
    steps = steps or (QUICK_SWEEP["steps"] if quick else SWEEP_STEPS)
    warmup = 1 if quick else SWEEP_WARMUP
    argv = ("synthetic", "--models", ",".join(models), "--batch-sizes", ",".join(map(str, batches)),
            "--devices", ",".join(map(str, counts)), "--steps", str(steps), "--warmup-steps", str(warmup))
    rate = machine.peak_gflops * SWEEP_UTILISATION  # per device; n devices take n times the images
    work = sum((steps + warmup) * batch * 3 * SWEEP_GFLOPS[model] / rate for model in models for batch in batches)
    estimate = STARTUP_SECONDS["synthetic"] + len(counts) * (len(models) * len(batches) * SWEEP_CHILD_SECONDS + work)
    full = (steps, batches) == (SWEEP_STEPS, LEADERGPU_BATCHES) or quick
    cut = "" if full else f"{steps} timed steps, batch sizes {','.join(map(str, batches))} of the study's grid"
    return Step("synthetic-leadergpu", "synthetic", argv, estimate, None, cut)


def model_step_name(path: str) -> str:
    """A model step's name: infer- and the file's name without its suffix (a SavedModel: its folder's)."""
    import re
    from pathlib import PurePath

    return "infer-" + (re.sub(r"[^a-z0-9_.-]+", "-", PurePath(path.rstrip("/")).stem.lower()).strip("-") or "model")


def _model_step(path: str, quick: bool, data: str | None, machine: Machine) -> Step:
    duration_s = MODEL_DURATION_S[quick]
    argv = ["infer", "--model", path, "--scenario", ",".join(MODEL_SCENARIOS)]
    argv += ["--limit", str(MODEL_QUICK_IMAGES), "--duration", f"{duration_s:g}"] if quick else []
    argv += ["--data", data] if data else []
    test = MODEL_QUICK_IMAGES if quick else STANDIN_IMAGES["detect"][1]
    speed = REFERENCE_PEAK["detect"] / machine.peak_gflops
    estimate = (STARTUP_SECONDS["infer"] + len(MODEL_SCENARIOS) * (duration_s + MODEL_TEST_SECONDS)
                + 2 * test * MODEL_SECONDS * speed)
    return Step(model_step_name(path), "infer", tuple(argv), estimate)


def check_study(study: str) -> None:
    """Raises UserError unless `study` names a study (or all)."""
    if study not in (*STUDIES, "all"):
        raise UserError(f"unknown study {study!r}: choose from {', '.join(STUDIES)}, all")


def build(study: str, machine: Machine, *, quick: bool = False, data_classify: str | None = None,
          data_detect: str | None = None, with_detect: bool = True, models: tuple[str, ...] = ()) -> Plan:
    """The study's steps in the order they run (`all`: the L40S study's, then LeaderGPU's); each of `models` (a
    detector file of the user's) an `infer` step after the L40S study's detectors. Raises UserError for models
    given to the LeaderGPU study alone, or two whose step names would be the same."""
    check_study(study)
    if models and study == "leadergpu":
        raise UserError("--model adds a step to the l40s study (set beside MLPerf's detection rows); the leadergpu "
                        "study is the synthetic sweep alone: give l40s or all")
    names = [model_step_name(path) for path in models]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise UserError(f"--model: two files would make the same step {twice[0]}: give files of different names")
    steps: list[Step] = []
    if study in ("l40s", "all"):
        steps += [classify_step(base, quick, data_classify, machine) for base in CLASSIFY]
        if with_detect:
            steps += [detect_step(base, quick, data_detect, machine) for base in DETECT]
        steps += [_model_step(path, quick, data_detect, machine) for path in models]
    if study in ("leadergpu", "all"):
        steps.append(sweep_step(quick, machine))
    return Plan(study, tuple(steps), quick)


def parse_budget(text: str) -> float:
    """'45m', '1h30m', '90s', '2h' -> seconds. Raises UserError on anything else or on 0."""
    import re

    match = re.fullmatch(r"\s*(?:(\d+(?:\.\d+)?)h)?\s*(?:(\d+(?:\.\d+)?)m)?\s*(?:(\d+(?:\.\d+)?)s)?\s*", text or "")
    if not match or not any(match.groups()):
        raise UserError(f"--budget takes a duration such as 45m, 1h30m or 900s. Received: {text!r}")
    hours, minutes, seconds = (float(g) if g else 0.0 for g in match.groups())
    total = 3600 * hours + 60 * minutes + seconds
    if total <= 0:
        raise UserError(f"--budget must be above 0. Received: {text!r}")
    return total


def duration(seconds: float) -> str:
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"
