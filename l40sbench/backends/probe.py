"""`python -m l40sbench.backends.probe NAME`: the devices Keras backend NAME would compute on, as one JSON line.

A child process per backend: each framework claims its devices when imported, and `env` asks all of them
side by side without loading any in its own process.
"""

from __future__ import annotations

import json
import sys

from l40sbench.backends import load


def main(name: str) -> int:
    print(json.dumps([d.to_dict() for d in load(name).devices()]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
