"""The studies' published figures, shipped as result records, loaded by name.

`l40s`: the L40S study's classification and detection tables (six records).
`leadergpu-2017`: every LeaderGPU table, one synthetic record per machine.
`mlperf-v6.0`: MLPerf Inference v6.0's YOLO11 rows for the L40S (reference.mlperf_v60), one record.
Reports, compare and cost take these names wherever they take a result file.
"""

from __future__ import annotations

import json
from importlib import resources

from l40sbench.core.migrate import upgrade

REFERENCES = {"l40s": "l40s.json", "leadergpu-2017": "leadergpu_2017.json", "mlperf-v6.0": "mlperf_v60_yolo.json"}


def load(name: str) -> list[dict]:
    """The records of one reference, as any record is read (core.migrate); KeyError for an unknown name."""
    text = resources.files(__package__).joinpath(REFERENCES[name]).read_text(encoding="utf-8")
    return [upgrade(record) for record in json.loads(text)]
