"""A record's peak read back, and the utilisation arithmetic: achieved GFLOP/s over the peak of the
precision a run computes in (l40sbench.peak measures the peaks)."""

from __future__ import annotations

SOURCE_MEASURED = "measured in this run"
SOURCE_FILE = "read from"

# The peak a run's --precision is divided by. float32 on a GPU runs as TF32 where
# TensorFlow's TF32 execution is on (its default on Ampere and later).
RUN_PRECISION_PEAK = {"fp32": "float32", "mixed_bfloat16": "bfloat16", "mixed_float16": "float16"}


FALLBACK = "float32 (no "  # how peak_for's name starts where a precision has no peak of its own


def peak_for(peak: dict | None, run_precision: str) -> tuple[str | None, float | None]:
    """(name of the peak, its GFLOP/s per device) that a run in `run_precision` is divided by.

    float32 on a GPU with TF32 measured is divided by the TF32 peak (TensorFlow's
    default math there). A precision this device has no peak for falls back to
    float32 and says so in the name. (None, None) for a record without env.peak.
    """
    if not peak or not peak.get("matmul"):
        return None, None
    matmul = peak["matmul"]
    wanted = RUN_PRECISION_PEAK.get(run_precision, run_precision)
    if wanted == "float32" and "tf32" in matmul and peak.get("tf32_enabled", True):
        wanted = "tf32"
    if wanted in matmul:
        return wanted, matmul[wanted]["gflops"]
    return f"{FALLBACK}{wanted} peak on this device)", matmul["float32"]["gflops"]


def peak_over_devices(per_device_gflops: float | None, kind: str, devices: int) -> float | None:
    """The peak `devices` devices reach together: N x one GPU's; a CPU's logical devices share one CPU, whose
    measured peak is already the whole machine's."""
    if per_device_gflops is None:
        return None
    return per_device_gflops * (devices if kind == "GPU" else 1)


def utilisation(achieved_gflops: float | None, peak_gflops: float | None) -> float | None:
    """achieved / peak as a fraction, None when either is unknown."""
    if not achieved_gflops or not peak_gflops:
        return None
    return achieved_gflops / peak_gflops


def run_utilisation(peak: dict | None, precision: str, forward_gflops: float | None, *,
                    train_gflops_per_image: float | None, train_convention: str,
                    train_images_per_second: float | None, inference_images_per_second: float | None,
                    devices: int = 1, device_kind: str = "CPU") -> dict:
    """How close a classify or detect run came to its devices' peak, in training and in inference.

    Achieved GFLOP/s = GFLOP per image x images/s: `train_gflops_per_image` per trained image (counted from
    the training step, or a multiple of the forward, as `train_convention` says), one forward per inferred
    image. Both are divided by the peak of the run's precision: training's over the `devices` it trained on
    (peak_over_devices), inference's over the one device the probe serves on.
    """
    name, peak_gflops = peak_for(peak, precision)
    train_peak = peak_over_devices(peak_gflops, device_kind, devices)
    train = (train_gflops_per_image * train_images_per_second
             if train_gflops_per_image and train_images_per_second else None)
    inference = forward_gflops * inference_images_per_second if forward_gflops and inference_images_per_second else None
    return {
        "peak": name, "peak_gflops": peak_gflops, "train_peak_gflops": train_peak, "train_peak_devices": devices,
        "forward_gflops_per_image": forward_gflops,
        "train_flops_per_image": train_convention, "train_gflops_per_image": train_gflops_per_image,
        "train_achieved_gflops": train,
        "train": utilisation(train, train_peak), "inference_achieved_gflops": inference,
        "inference": utilisation(inference, peak_gflops),
    }




def measured_in_this_run(peak: dict) -> bool:
    """Whether a record's env.peak was measured by its own run (records older than the peak file were)."""
    return peak.get("source", SOURCE_MEASURED) == SOURCE_MEASURED



def summary(peak: dict | None) -> str:
    """One line for the environment block: each precision's peak, the conv rate, measured / theoretical."""
    if not peak:
        return "-"
    parts = [f"{name} {p['gflops']:.1f}" for name, p in peak["matmul"].items()]
    text = f"matmul {', '.join(parts)} GFLOP/s; 3x3 conv float32 {peak['conv_float32_gflops']:.1f} GFLOP/s"
    ratio = peak.get("float32_measured_over_theoretical")
    if ratio:
        text += f"; float32 {100 * ratio:.0f} % of theoretical {peak['theoretical_float32_gflops']:.0f} GFLOP/s"
    else:
        text += f"; theoretical {peak.get('theoretical_basis') or 'unknown'}"
    if not measured_in_this_run(peak):
        text += f"; {peak['source']} (measured {peak.get('measured_utc', 'at an unknown time')})"
    return text


def rates(env: dict) -> tuple[float | None, float | None]:
    """(float32 matmul GFLOP/s, conv GFLOP/s) of a record's env.peak; (None, None) without one."""
    if not env.get("peak"):
        return None, None
    return env["peak"]["matmul"]["float32"]["gflops"], env["peak"]["conv_float32_gflops"]
