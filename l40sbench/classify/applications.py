"""Every keras.applications constructor as a classify base: found from the installed Keras, written to
applications.json beside this file so that listing and checking bases never imports Keras.

    python -m l40sbench.classify.applications      # writes applications.json (builds each base once)

Each entry's sizes come from the constructor itself: keras.applications states a model's default input
size and its smallest through `imagenet_utils.obtain_input_shape`, which is intercepted here before any
layer is built. A constructor that does not call it (MobileNetV3) is built at its documented ImageNet size,
224, and its smallest size found by building it one pixel below 32. The parameter count is the base's
without its ImageNet top (what classify puts its head on).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

TABLE = Path(__file__).with_name("applications.json")
IMAGENET_SIZE = 224  # keras.applications' size for a constructor that does not state one
SMALLEST = 32  # the smallest input keras.applications accepts where a constructor states none


class _Stated(Exception):
    """Raised from inside a constructor with the sizes it states (default, smallest)."""


def constructors() -> dict[str, object]:
    """name -> constructor, every one keras.applications exports."""
    import keras

    return {name: getattr(keras.applications, name) for name in dir(keras.applications)
            if name[:1].isupper() and callable(getattr(keras.applications, name))}


def module_of(name: str, constructor) -> str:
    """The keras.applications submodule whose preprocess_input goes with this constructor (the one named like
    it where there is one: resnet50 for ResNet50, as before)."""
    import keras

    own = name.lower()
    if hasattr(getattr(keras.applications, own, None), "preprocess_input"):
        return own
    return constructor.__module__.rsplit(".", 1)[-1]


def stated_sizes(constructor) -> tuple[int, int] | None:
    """(default size, smallest size) as the constructor states them, None where it states none; nothing is
    built (the constructor is stopped where it states them)."""
    from keras.src.applications import imagenet_utils

    def stop(input_shape, default_size, min_size, data_format, require_flatten, weights=None):
        raise _Stated(default_size, min_size)

    real = imagenet_utils.obtain_input_shape
    imagenet_utils.obtain_input_shape = stop
    try:
        constructor(include_top=False, weights=None)
    except _Stated as stated:
        return stated.args
    finally:
        imagenet_utils.obtain_input_shape = real
    return None


def _smallest_built(constructor) -> int:
    try:
        constructor(include_top=False, weights=None, input_shape=(SMALLEST - 1, SMALLEST - 1, 3))
    except ValueError:
        return SMALLEST
    return 1


def entry(name: str, constructor) -> dict:
    stated = stated_sizes(constructor)
    default, smallest = stated or (IMAGENET_SIZE, _smallest_built(constructor))
    base = constructor(include_top=False, weights=None, input_shape=(smallest, smallest, 3))
    return {"name": name.lower(), "application": name, "module": module_of(name, constructor),
            "default_size": int(default), "min_size": int(smallest),
            "sizes_from": "the constructor (imagenet_utils.obtain_input_shape)" if stated else
            f"ImageNet's {IMAGENET_SIZE} (the constructor states none); smallest found by building",
            "parameters": int(base.count_params())}


def main() -> int:
    import keras

    found = constructors()
    entries = []
    for index, (name, constructor) in enumerate(sorted(found.items()), 1):
        entries.append(entry(name, constructor))
        keras.backend.clear_session()
        print(f"{index}/{len(found)} {name}: {entries[-1]['default_size']} px, {entries[-1]['parameters']:,} "
              "parameters", file=sys.stderr)
    TABLE.write_text(json.dumps({"keras": keras.__version__, "bases": entries}, indent=1) + "\n")
    print(f"wrote {TABLE}: {len(entries)} bases of keras {keras.__version__}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
