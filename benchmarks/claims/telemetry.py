"""Claims on what watching a run costs it: the telemetry sampler, `env`."""

from __future__ import annotations

from pathlib import Path

from benchmarks.claims.figures import figure, timed_rounds, turns


def _stand_in():
    """A reader doing what RAPL's does (sysfs-style file reads), where the machine has no NVML or RAPL."""
    from l40sbench.core.telemetry import Source

    files = [Path("/proc/stat")] + sorted(Path("/sys/devices/system/cpu").glob("cpu[0-9]*/cpufreq/scaling_cur_freq"))
    return Source("stand-in (file reads)", lambda: {"energy_j": float(sum(len(f.read_bytes()) for f in files
                                                                          if f.exists()))})


def sampler_cost(sizes: dict) -> dict:
    """A Keras model's compiled single-image forward (the probe's call) in blocks, the sampler off and on in
    turns; the machine's own reader (NVML, RAPL) where there is one, else the stand-in."""
    import keras
    import numpy as np

    from l40sbench.backends import load
    from l40sbench.backends.telemetry import source
    from l40sbench.core.telemetry import Sampler

    kernels = load("tensorflow")
    size = sizes["size"]
    model = getattr(keras.applications, {"mobilenetv2": "MobileNetV2", "vgg19": "VGG19"}[sizes["model"]])(
        weights=None, input_shape=(size, size, 3))
    forward = kernels.forward(model, size, xla=False)
    image = np.random.default_rng(0).integers(0, 255, (size, size, 3), dtype=np.uint8)
    for _ in range(20):
        forward(image)
    reader = source(kernels.devices()[:1])[0] or _stand_in()

    def around(sampling: bool):
        if not sampling:
            return None
        sampler = Sampler(reader)
        sampler.start()
        return sampler.stop

    timed = turns(lambda: forward(image), lambda: forward(image), sizes["blocks"], sizes["calls"], around)
    return {"ratio": figure(timed["ratios"], "x"), "without": figure(timed["a"], "s"),
            "with": figure(timed["b"], "s")}


def env_time(sizes: dict) -> dict:
    seconds, _ = timed_rounds(["env"], sizes["rounds"], check=True)
    return {"seconds": figure(seconds, "s")}
