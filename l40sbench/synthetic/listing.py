"""`synthetic --list`: each model's input size, parameters and forward GFLOPs, counted from the built model."""

from __future__ import annotations

from collections.abc import Callable

from l40sbench.core.text import format_table
from l40sbench.synthetic.models import MODELS, STUDY_ORDER


def model_facts(name: str, on_built: Callable | None = None) -> dict:
    """Builds the model once and counts what --list prints; `on_built(spec, model)`, where given, runs first."""
    import keras

    from l40sbench.backends.tf_flops import forward_gflops

    spec = MODELS.get(name)
    model = spec.build()
    if on_built is not None:
        on_built(spec, model)
    facts = {"model": name, "size": spec.size, "params": int(model.count_params()),
             "gflops": forward_gflops(model, spec.size), "source": spec.source}
    del model
    keras.backend.clear_session()
    return facts


def print_models(log: Callable[[str], None]) -> None:
    rows = []
    for index, name in enumerate(STUDY_ORDER, start=1):
        log(f"[{index}/{len(STUDY_ORDER)}] building {name} to count it ...")
        facts = model_facts(name)
        rows.append((name, f"{facts['size']}x{facts['size']}", f"{facts['params']:,}", f"{facts['gflops']:.3f}",
                     facts["source"], MODELS.get(name).study_batch or "-"))
    print(format_table(("model", "input", "parameters", "GFLOPs/image (forward)", "built from",
                        "study batch/GPU"), rows))
    print("\nGFLOPs: TensorFlow's profiler over the traced inference graph (a multiply-add counts 2); "
          "a training step costs about 3x.")
