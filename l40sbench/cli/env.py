"""`env`: what this machine is and what a run would use, the first thing to run on a rented machine and the
block to paste into a bug report (as `python -m torch.utils.collect_env` or `yolo checks`)."""

from __future__ import annotations

import json

from l40sbench.cli.common import log


def add(subparsers) -> None:
    p = subparsers.add_parser(
        "env",
        help="what this machine is and which devices a run would use (paste it into a bug report)",
        description=(
            "Prints the environment block every record carries (Python, OS, CPU, the suite's commit and "
            "versions), each installed Keras backend with the devices it would compute on (each asked in a "
            "child process of its own), the GPUs the CUDA driver shows this process with their UUIDs, the "
            "telemetry source a run would read (NVML over the run's GPUs, RAPL on a CPU, or why none), the "
            "neighbours now (other processes busy over half a second, the hypervisor's steal, other processes "
            "on the GPUs), and the kept peak where $L40SBENCH_PEAK_FILE names one. Under 10 s without --peak. The "
            "driver is asked first, within 10 s: one that does not answer (a stuck driver) is reported, and no "
            "backend is asked (each would hang on it)."
        ),
    )
    p.add_argument("--json", action="store_true", help="one JSON object on stdout instead of the text")
    p.add_argument("--peak", action="store_true",
                   help="measure this device's peak now on --backend (about 20 s on a CPU)")
    p.add_argument("--backend", choices=("tensorflow", "jax", "torch"), default=None,
                   help="the backend a run would use (default: $KERAS_BACKEND, else tensorflow)")
    p.set_defaults(func=run)


def would_use(name: str, block: dict, driver) -> str:
    """One backend's answer to the renter's question: what a run would compute on now, and where the driver
    shows GPUs it cannot use, why and the fix that fits the cause."""
    from l40sbench.backends.gpu_gate import FIX, View, fix_for, shown_text

    gpus = [vars(d) for d in driver.devices]

    head = f"{name} {block['version']} would use:"
    if not block["installed"]:
        return f"{name}: not installed"
    if "error" in block:
        error = block["error"]
        return f"{head} unknown: {error if error.startswith('not asked') else 'asking it failed: ' + error}"
    view = block.get("gpu_view") or {}
    on_gpu = [d for d in block["devices"] if d["kind"] == "GPU"]
    if on_gpu:
        placed = {d.get("uuid") for d in on_gpu}  # a device without the driver's UUID cannot be placed: no claim
        skipped = [g for g in gpus if g["uuid"] not in placed] if None not in placed else []
        return f"{head} " + "; ".join(f"GPU {d['index']} {d['model']}" + (f" {d['memory_mb'] / 1024:.0f} GiB" if
                                      d.get("memory_mb") else "") for d in on_gpu) + (
            f"; skips {shown_text(skipped)}: {', '.join(g['uuid'] for g in skipped)}" if skipped else "")
    cpu = f"{head} the CPU ({block['devices'][0]['model']})" if block["devices"] else f"{head} the CPU"
    if not gpus:
        return f"{cpu}; the CUDA driver shows no GPU"
    fix = fix_for(name, driver, View.from_dict(view)) if view else FIX[name]
    return f"{cpu}, though the driver shows {shown_text(gpus)}: {view.get('said') or 'no reason given'}; fix: {fix}"


def _first_lines(facts: dict) -> list[str]:
    """What a run would compute on, on each installed backend (the chosen one marked *), the driver and what
    each backend was built for, the boards' power limits and clocks, and whether the host is quiet now."""
    from l40sbench.backends.cuda_driver import DriverView

    driver = DriverView.from_dict(facts["cuda_driver"])
    lines = [("* " if name == facts["backend"] else "  ") + would_use(name, block, driver)
             for name, block in facts["backends"].items()]
    built = ", ".join(f"{name} CUDA {(b.get('gpu_view') or {}).get('built_for')}" for name, b in facts["backends"].items()
                      if (b.get("gpu_view") or {}).get("built_for"))
    lines.append(f"CUDA driver: {driver.said or facts['cuda_driver_version'] or 'none'}"
                 + (f" (NVML driver {facts['telemetry']['nvml_driver']})" if facts["telemetry"].get("nvml_driver") else "")
                 + (f"; built for: {built}" if built else ""))
    boards = facts["telemetry"]["nvml_boards"]
    for b in boards if isinstance(boards, list) else ():
        clocks = (f"SM clock {b['sm_clock_mhz']} of {b['max_sm_clock_mhz']} MHz" if b.get("sm_clock_mhz") is not None
                  else "SM clock not read")
        limit = f"power limit {b['power_limit_w']:.0f} W" if b.get("power_limit_w") is not None else "power limit not read"
        lines.append(f"  {b['name']} ({b['uuid']}): {limit}, {clocks}")
    reasons = facts["neighbours_now"]["reasons"]
    lines.append("host now: busy, figures taken now would be unstable: " + "; ".join(reasons) if reasons
                 else "host now: quiet (no neighbour over the stability limits)")
    return lines


def _text(facts: dict) -> list[str]:
    lines = [*_first_lines(facts), "",
             f"l40sbench {facts['l40sbench']} (commit {facts['suite_commit']})",
             f"python {facts['python']} on {facts['os']}", f"cpu: {facts['cpu']} ({facts['cpu_count']} cores)",
             "versions: " + ", ".join(f"{k} {v}" for k, v in facts["versions"].items() if v)]
    for name, block in facts["backends"].items():
        if block.get("devices"):
            lines.append(f"backend {name}'s devices: " + "; ".join(
                f"{d['name']} {d['model']}" + (f" {d['uuid']}" if d.get("uuid") else "") for d in block["devices"]))
    gpus = facts["cuda_driver_gpus"]
    lines.append("CUDA driver's GPUs: " + ("; ".join(f"{g['ordinal']}: {g['name']} {g['uuid']} {g['memory_mb']:.0f} MB"
                                              for g in gpus) if gpus else "no GPU visible to this process"))
    t = facts["telemetry"]
    lines.append(f"telemetry: {t['source']}" if t["source"] else f"telemetry: none ({t['why_none']})")
    if isinstance(t["nvml_boards"], list):
        lines += [f"  NVML board {b['nvml_index']}: {b['name']} {b['uuid']} {b['pci_bus_id']}"
                  + (" (used)" if b["used"] else "") for b in t["nvml_boards"]]
    n = facts["neighbours_now"]
    steal = f"{100 * n['steal_share']:.1f} %" if n["steal_share"] is not None else "unknown"
    lines.append(f"neighbours now: others used {100 * n['cpu_share_others']:.0f} % of the CPU, steal {steal} "
                 "(the verdict: 'host now' above)")
    peak = facts["peak"]
    if peak is None:
        lines.append("peak: none kept (--peak measures it; $L40SBENCH_PEAK_FILE keeps one)")
    elif "error" in peak:
        lines.append(f"peak: {peak['source']}: {peak['error']}")
    else:
        rates = ", ".join(f"{p} {g:.0f}" for p, g in peak["matmul_gflops"].items() if g)
        lines.append(f"peak ({peak['source']}): {peak['device']}: matmul GFLOP/s {rates}")
    return lines


def run(args) -> int:
    from l40sbench.backends import requested

    backend = requested(args.backend)
    if args.peak:
        from l40sbench.cli.device_flags import gate_devices

        gate_devices(args, backend)
        log(f"measuring this device's peak on {backend} ...")
    from l40sbench.machine import collect

    facts = collect(backend, args.peak)
    if args.json:
        print(json.dumps(facts, indent=2, sort_keys=True, default=str))
    else:
        print("\n".join(_text(facts)))
    return 0
