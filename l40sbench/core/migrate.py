"""Records written by earlier versions of the suite, brought to today's shape in one step where they are read
(core.reading.read_result_file, reference.load, and a sweep's sweep.json on --resume); no other module reads an older shape.

- env.calibration (a float32 matmul and a 3x3 conv rate, before the peak per precision was measured) becomes
  an env.peak holding those two figures, its theoretical basis saying where they come from;
- an environment without a Keras backend ran on TensorFlow: the suite's records from before other backends,
  and the studies' (Keras on TensorFlow, the TF Object Detection API). A record's config is left as it is:
  a study's names no backend, so it matches any (report.inputs.backend).
"""

from __future__ import annotations

from l40sbench.core.utilisation import SOURCE_MEASURED

CALIBRATION_BASIS = "unknown: an older record's calibration (a float32 matmul and a 3x3 conv rate only)"
DEFAULT_BACKEND = "tensorflow"


def upgrade(record: dict) -> dict:
    """`record` in today's shape (a new dict; the one given is not changed)."""
    if "env" not in record:
        return dict(record)
    return {**record, "env": {"backend": DEFAULT_BACKEND, **upgrade_env(record["env"] or {})}}


def upgrade_state(state: dict) -> dict:
    """A sweep's sweep.json in today's shape: the peak beside its settings and in its environment."""
    env = upgrade_env(state.get("env") or {})
    peak = state.get("peak") or env.get("peak") or upgrade_env(state).get("peak")
    return {**state, "env": env, **({"peak": peak} if peak else {})}


def upgrade_env(env: dict) -> dict:
    """An environment block with env.peak, made from its calibration where it has only that."""
    old = env.get("calibration")
    if env.get("peak") or not old:
        return env
    peak = {"matmul": {"float32": {"precision": "float32", "gflops": old.get("matmul_gflops")}},
            "conv_float32_gflops": old.get("conv_gflops"), "theoretical_float32_gflops": None,
            "theoretical_basis": CALIBRATION_BASIS, "float32_measured_over_theoretical": None,
            "source": SOURCE_MEASURED}
    return {**env, "peak": peak}
