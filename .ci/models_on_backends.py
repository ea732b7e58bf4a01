"""Every registered synthetic model built and run once on the Keras backend KERAS_BACKEND names.

Checks what the sweep needs of each backend: the twelve models build, hold their published parameter
count, and a forward pass gives 1000 probabilities. Not a speed figure; too slow for CI (a few minutes).

Usage: KERAS_BACKEND=jax .venv/bin/python .ci/models_on_backends.py   (or torch, tensorflow)
"""

from __future__ import annotations

import sys
import time


def main() -> int:
    import keras
    import numpy as np

    from l40sbench.synthetic.models import MODELS

    failed = []
    for name in MODELS.names():
        spec = MODELS.get(name)
        started = time.perf_counter()
        try:
            model = spec.build()
            counted = spec.count_params(model)
            held = abs(counted - spec.published_params) <= spec.params_tolerance * spec.published_params + 0.5
            shape = tuple(model.predict_on_batch(np.zeros((1, spec.size, spec.size, 3), "float32")).shape)
        except Exception as exc:  # noqa: BLE001 - every model's outcome is reported
            print(f"{name}: FAILED {type(exc).__name__}: {str(exc).splitlines()[0][:200]}", flush=True)
            failed.append(name)
            continue
        print(f"{name}: {counted:,} parameters ({'as published' if held else 'NOT as published'}), output "
              f"{shape}, {time.perf_counter() - started:.1f} s", flush=True)
        if not held or shape != (1, 1000):
            failed.append(name)
        keras.backend.clear_session()
    print(f"{keras.backend.backend()}: {len(MODELS.names()) - len(failed)} of {len(MODELS.names())} models ok"
          + (f"; failed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
