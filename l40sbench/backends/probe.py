"""`python -m l40sbench.backends.probe NAME`: the devices Keras backend NAME would compute on, its version and
how many GPUs it sees (and where none, why: backends.gpu_gate.View), as one JSON line.

A child process per backend: each framework claims its devices when imported, and `env` asks all of them
side by side without loading any in its own process.
"""

from __future__ import annotations

import json
import sys

from l40sbench.backends import load


def main(name: str) -> int:
    from l40sbench.backends.gpu_gate import View, first_line
    from l40sbench.backends.gpu_views import VIEWS

    module = load(name)
    view = VIEWS[name]()
    try:
        devices = [d.to_dict() for d in module.devices()]
    except Exception as exc:  # a framework that cannot start: the view carries why, once
        devices, view = [], view if view.said else View(0, first_line(exc), view.built_for)
    print(json.dumps({"version": module.version(), "view": view.to_dict(), "devices": devices}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
