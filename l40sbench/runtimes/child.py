"""The timing child: `python -m l40sbench.runtimes.child REQUEST.json`.

Loads one runtime's model, times the inputs one at a time with the core probe (warm-up excluded),
and writes every output (outputs.npz) and the figures (the request's `result` file). It imports the
runtime it times and nothing else heavy, so a native crash here costs one row and no record.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np

from l40sbench.core.records import to_json, write_atomic
from l40sbench.core.timing import probe_interleaved


def write_images(path: Path, images: list) -> None:
    """The decoded images, in order, as one .npz every child reads (each may have its own size)."""
    np.savez(path, **{f"{i:06d}": image for i, image in enumerate(images)})


def read_images(path: Path) -> list[np.ndarray]:
    """write_images' images back, in order."""
    with np.load(path) as archive:
        return [archive[key] for key in sorted(archive.files)]


def stack_outputs(outputs: list[dict]) -> dict[str, np.ndarray]:
    """Per-image output dicts -> one array per name, images along the first axis."""
    return {name: np.concatenate([np.asarray(out[name]) for out in outputs]) for name in outputs[0]}


def run(request: dict) -> dict:
    from l40sbench.runtimes.registry import load

    started = time.perf_counter()
    loaded = load(request["runtime"], Path(request["artifact"]), request["precision"], request["threads"],
                  request["file_precision"])
    load_seconds = time.perf_counter() - started
    clock = None
    if request.get("decoding"):  # a detector file's format: its host stages around the call (runtimes.staged)
        from l40sbench.runtimes.staged import Decoding, StageClock, staged

        clock = StageClock()
        loaded = staged(loaded, Decoding.from_dict(request["decoding"]), clock)
    images = read_images(Path(request["inputs"]))
    outputs: list[dict] = []
    from l40sbench.data.images import MODEL_CALL

    calls = {MODEL_CALL: lambda i: outputs.append(loaded.call(images[i]))}
    files = request.get("files") or ()
    if len(files) == len(images):  # the file's way to a label, in the same rotation as the tf probe's
        from l40sbench.data.images import file_stages

        calls.update(file_stages(files, request["image_size"], lambda image: loaded.call(image[None]),
                                 lambda out: int(np.argmax(next(iter(out.values()))))))
    timed = probe_interleaved(calls, range(len(images)), warmup=request["warmup"])
    stats = timed[MODEL_CALL]
    np.savez(request["outputs"], **stack_outputs(outputs))
    return {"stats": dataclasses.asdict(stats), "precision": loaded.precision, "threads": loaded.threads,
            "version": loaded.version, "settings": loaded.settings, "load_seconds": load_seconds,
            "device": loaded.device,
            "stages_mean_ms": clock.means_ms(request["warmup"]) if clock is not None else
            {name: s.mean_ms for name, s in timed.items()} if len(calls) > 1 else {}}


def main(argv: list[str]) -> int:
    request = json.loads(Path(argv[0]).read_text())
    write_atomic(Path(request["result"]), to_json(run(request)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
