"""What the SUT hands LoadGen in accuracy mode, and LoadGen's accuracy log read back.

MLPerf's accuracy mode issues every sample once and logs each response's bytes (as hex) in
mlperf_log_accuracy.json; the benchmark's own script then scores that log. Here a response is one sample's
outputs from the runtime's call, every array as JSON with its dtype and shape (exact for float32 values,
and a shared log file can hold no code), so the log decodes back to the arrays the probe scored.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

ACCURACY_LOG = "mlperf_log_accuracy.json"


def encode(outputs, position: int) -> bytes:
    """Sample `position` of a batch call's outputs (a dict of arrays with the batch first, or one array)."""
    named = outputs if isinstance(outputs, dict) else {"output": outputs}
    sample = {}
    for name, array in named.items():
        values = np.asarray(array)[position:position + 1]
        sample[name] = {"dtype": str(values.dtype), "shape": list(values.shape), "values": values.ravel().tolist()}
    return json.dumps(sample).encode()


def decode(data: bytes) -> dict[str, np.ndarray]:
    sample = json.loads(data)
    return {name: np.asarray(item["values"], dtype=item["dtype"]).reshape(item["shape"]) for name, item in sample.items()}


def read_accuracy_log(path: Path) -> tuple[dict[str, np.ndarray], int]:
    """LoadGen's accuracy log as one array per output name, samples in library order; and how many entries
    it held (every sample once, or the log is not a whole accuracy run).

    Raises:
      ValueError: a sample missing or logged twice.
    """
    entries = json.loads(path.read_text())
    by_index = {}
    for entry in entries:
        if entry["qsl_idx"] in by_index:
            raise ValueError(f"sample {entry['qsl_idx']} answered twice in {path.name}")
        by_index[entry["qsl_idx"]] = decode(bytes.fromhex(entry["data"]))
    missing = sorted(set(range(len(by_index))) - set(by_index))
    if missing or not by_index:
        raise ValueError(f"{path.name} lacks samples {missing[:5] or 'all'}")
    ordered = [by_index[i] for i in range(len(by_index))]
    return {name: np.concatenate([sample[name] for sample in ordered]) for name in ordered[0]}, len(entries)
