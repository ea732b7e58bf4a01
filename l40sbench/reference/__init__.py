"""The studies' published figures, shipped as result records, loaded by name.

`l40s`: the L40S study's classification and detection tables (six records).
`leadergpu-2017`: every LeaderGPU table, one synthetic record per machine.
Reports, compare and cost take these names wherever they take a result file.
"""

from __future__ import annotations

import json
from importlib import resources

REFERENCES = {"l40s": "l40s.json", "leadergpu-2017": "leadergpu_2017.json"}


def load(name: str) -> list[dict]:
    """The records of one reference; KeyError for an unknown name."""
    text = resources.files(__package__).joinpath(REFERENCES[name]).read_text(encoding="utf-8")
    return json.loads(text)
