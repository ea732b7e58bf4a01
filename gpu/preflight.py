"""Before the GPU run spends device time on work: every piece it needs, one line per missing piece, exit 2.

    python gpu/preflight.py --backends jax,torch [--peer] [--cpu-ok] [--free-gib 16]

Checks, in about 10 s (each backend's interpreter in parallel): the modules the run imports (NumPy, SciPy,
OpenCV, matplotlib, Keras and the two wheels it brings, nvidia-ml-py, this checkout's l40sbench; plotly, which
the report page needs, as a note where missing); Keras
importing on each backend and that backend's devices (the suite's own device records: a GPU must be among
them); torch and timm where the peer rows run (--peer); NVML reading the boards, the driver, each board's
free memory and power limit; the wheels' versions against this checkout's pins. --cpu-ok (the rehearsal on
a CPU) turns a missing GPU or NVML into a note. Prints `preflight: ...` lines; missing pieces go to stderr.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MODULES = ("numpy", "scipy", "cv2", "matplotlib", "keras", "namex", "optree", "pynvml", "l40sbench")
# What the run can do without, and what it then leaves out: a note, not a refusal.
OPTIONAL = {"plotly": "the studies' report pages (report.md is written without them)"}
PEER_MODULES = ("torch", "timm")
# What l40sbench imports that the GPU run never reaches (no TensorFlow there, so no detection; the default
# runtime only; no LoadGen): tests/test_gpu_run.py checks that every third-party module l40sbench imports is in
# MODULES, OPTIONAL, a backend, or here.
NOT_ON_THE_GPU_RUN = {
    "tensorflow": "not on the GPU machine", "tf_keras": "Model Garden's Keras 2 (detection)",
    "official": "Model Garden (detection)", "tensorflow_datasets": "--data tfds:", "pycocotools": "detection's mAP",
    "defusedxml": "Pascal VOC (detection)", "onnxruntime": "--runtimes", "openvino": "--runtimes",
    "ai_edge_litert": "--runtimes", "onnx": "--runtimes (reading an ONNX export's inputs)",
    "mlperf_loadgen": "infer --scenario",
}
WHEELS = ("keras", "namex", "optree", "plotly", "narwhals")
BACKEND_CHECK = """
import json, os, sys
import keras
from l40sbench.backends import load
devices = load(os.environ["KERAS_BACKEND"]).devices()
print("DEVICES", json.dumps({"keras": keras.__version__, "devices": [[d.kind, d.name, d.model] for d in devices]}))
"""


def _import_error(module: str) -> str | None:
    try:
        importlib.import_module(module)
    except Exception as error:  # noqa: BLE001 - whatever stops the import is the line to print
        return f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
    return None


def _backend(name: str, timeout: float) -> tuple[list, str | None]:
    """(the backend's device records, why it failed) from a fresh interpreter with KERAS_BACKEND set."""
    try:
        done = subprocess.run([sys.executable, "-c", BACKEND_CHECK], capture_output=True, text=True,
                              timeout=timeout, env={**os.environ, "KERAS_BACKEND": name})
    except subprocess.TimeoutExpired:
        return [], f"Keras on {name} did not list its devices within {timeout:.0f} s"
    if done.returncode != 0 or "DEVICES" not in done.stdout:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return [], f"Keras on {name} does not start: {last}"
    return json.loads(done.stdout.split("DEVICES", 1)[1])["devices"], None


def _nvml(free_gib: float) -> tuple[list[str], list[str]]:
    """(what NVML read, what is wrong) for every board it sees."""
    from l40sbench.backends.nvml_boards import read

    nvml = read()
    if nvml.said:
        return [], [nvml.said]
    seen, wrong = [f"driver {nvml.driver}"], []
    for b in nvml.boards:
        free, total, limit = b["memory_free_gib"], b["memory_gib"], b["power_limit_w"]
        if free is None:
            seen.append(f"board {b['index']} {b['name']}: NVML does not say its memory")
            wrong.append(f"board {b['index']}: NVML does not say its free memory")
            continue
        seen.append(f"board {b['index']} {b['name']}: {free:.1f} of {total:.1f} GiB free, power limit "
                    + (f"{limit:.0f} W" if limit is not None else "not said"))
        if free < free_gib:
            wrong.append(f"board {b['index']} has {free:.1f} GiB free, under the {free_gib:g} GiB wanted")
    if not nvml.boards:
        wrong.append("NVML sees no board")
    return seen, wrong


def _pins() -> dict[str, str]:
    text = (REPO / "pyproject.toml").read_text()
    return {name: found.group(1) for name in WHEELS if (found := re.search(rf'"{name}==([^";]+)', text))}


def preflight(backends: list[str], peer: bool, cpu_ok: bool, free_gib: float, timeout: float = 60.0
              ) -> tuple[list[str], list[str]]:
    """(lines of what is there, lines of what is missing)."""
    ok, missing = [f"Python {sys.version.split()[0]} at {sys.executable}"], []
    if backends:  # Keras picks its backend when first imported, and defaults to the absent tensorflow
        os.environ.setdefault("KERAS_BACKEND", backends[0])
    wanted = dict.fromkeys(MODULES + tuple(backends) + (PEER_MODULES if peer else ()))
    for module in wanted:
        wanted[module] = why = _import_error(module)
        (missing if why else ok).append(f"module {module}: {why}" if why else f"module {module}")
    for module, without in OPTIONAL.items():
        why = _import_error(module)
        ok.append(f"module {module}: {why}; the run goes on without {without}" if why else f"module {module}")
    backends = [name for name in backends if not wanted[name]]  # a backend that does not import: said above
    pins = _pins()
    for wheel in WHEELS:
        try:
            have = importlib.metadata.version(wheel)
        except importlib.metadata.PackageNotFoundError:
            continue  # its import failed above
        if wheel in pins and have != pins[wheel]:
            missing.append(f"{wheel} {have} is here, this checkout pins {pins[wheel]}")
        else:
            where = Path(importlib.import_module(wheel).__file__).parent.parent
            ok.append(f"{wheel} {have} from {where}")
    with ThreadPoolExecutor(max(1, len(backends))) as pool:
        checks = dict(zip(backends, pool.map(lambda name: _backend(name, timeout), backends)))
    for name, (devices, why) in checks.items():
        if why:
            missing.append(why)
            continue
        gpus = [d for d in devices if d[0] == "GPU"]
        ok.append(f"{name} devices: {', '.join(f'{kind} {label} ({model})' for kind, label, model in devices)}")
        if not gpus:
            (ok if cpu_ok else missing).append(f"{name} sees no GPU" + (" (a CPU rehearsal)" if cpu_ok else ""))
    seen, wrong = _nvml(free_gib)
    ok.extend(f"NVML {line}" for line in seen)
    (ok if cpu_ok else missing).extend(f"{line}" + (" (a CPU rehearsal)" if cpu_ok else "") for line in wrong)
    return ok, missing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backends", default="jax,torch", help="the Keras backends the run uses (default jax,torch)")
    parser.add_argument("--peer", action="store_true", help="the timm peer runs: torch and timm must import")
    parser.add_argument("--cpu-ok", action="store_true", help="a CPU rehearsal: no GPU or NVML is a note")
    parser.add_argument("--free-gib", type=float, default=16.0, help="free memory each board needs (GiB)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    backends = [name for name in args.backends.split(",") if name]
    ok, missing = preflight(backends, args.peer, args.cpu_ok, args.free_gib)
    for line in ok:
        print(f"preflight: ok       {line}")
    for line in missing:
        print(f"preflight: MISSING  {line}", file=sys.stderr)
    took = time.perf_counter() - started
    if missing:
        print(f"preflight: {len(missing)} missing piece(s) in {took:.1f} s: nothing was run", file=sys.stderr)
        return 2
    print(f"preflight: everything is there ({took:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
