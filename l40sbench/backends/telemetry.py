"""Where a run's telemetry comes from: NVML on NVIDIA GPUs (nvidia-ml-py), else RAPL's powercap counters and
cpufreq on the CPU, else nothing, with the reason. The readers; core.telemetry samples and sums them.

Independent of the Keras backend: NVML and the powercap files describe the machine, whichever framework
drives it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from l40sbench.backends.cuda_driver import LIMIT_SECONDS
from l40sbench.backends.nvml_boards import mig_uuids, text
from l40sbench.core.deadline import within
from l40sbench.core.devices import Device, gpus
from l40sbench.core.telemetry import POWER_CAP, CounterTotal, Source

POWERCAP = Path("/sys/class/powercap")
CPUFREQ = Path("/sys/devices/system/cpu")
# NVML's clock-event reasons that slow the device against its will (idle and the application-clock setting
# are not throttling). The power cap is where a heavy, sustained GPU job normally runs: core.telemetry
# records its share of a phase as information, and only the others make a phase unstable.
THROTTLE_REASONS = {
    "nvmlClocksEventReasonSwPowerCap": POWER_CAP,
    "nvmlClocksEventReasonHwSlowdown": "hardware slowdown",
    "nvmlClocksEventReasonHwThermalSlowdown": "hardware thermal slowdown",
    "nvmlClocksEventReasonHwPowerBrakeSlowdown": "hardware power brake",
    "nvmlClocksEventReasonSwThermalSlowdown": "software thermal slowdown",
}


@dataclass(frozen=True)
class Board:
    """One GPU as NVML sees it: NVML's index (PCI bus order), its UUID, name and PCI bus id."""

    index: int
    uuid: str
    name: str
    pci_bus_id: str
    handle: object = None
    mig_uuids: tuple[str, ...] = ()  # its MIG instances (MIG-...), whose telemetry is the board's

    def describe(self) -> dict:
        return {"nvml_index": self.index, "uuid": self.uuid, "name": self.name, "pci_bus_id": self.pci_bus_id}


def nvml_boards(nvml) -> list[Board]:
    """Every board NVML sees, in its order (PCI bus order, whatever CUDA_VISIBLE_DEVICES holds)."""
    boards = []
    for index in range(nvml.nvmlDeviceGetCount()):
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
        boards.append(Board(index, text(nvml.nvmlDeviceGetUUID(handle)), text(nvml.nvmlDeviceGetName(handle)),
                            text(nvml.nvmlDeviceGetPciInfo(handle).busId), handle, mig_uuids(nvml, handle)))
    return boards


def cuda_order(boards: list[Board], environ: Mapping[str, str]) -> tuple[list[Board] | None, str]:
    """The boards in the order CUDA numbers them after CUDA_VISIBLE_DEVICES, from NVML's facts alone; (None,
    why) where they cannot say it. Used only where the driver gave no UUID for a device.

    CUDA numbers boards fastest first unless CUDA_DEVICE_ORDER=PCI_BUS_ID, breaking ties by PCI bus: on a host
    of one GPU model that is PCI order, NVML's own; on a host of mixed models NVML cannot say CUDA's order.
    CUDA_VISIBLE_DEVICES then picks from that order by index or by UUID (a prefix will do), and stops at the
    first entry that names no board, as CUDA does.
    """
    ordered = sorted(boards, key=lambda b: b.pci_bus_id.lower())
    if environ.get("CUDA_DEVICE_ORDER") != "PCI_BUS_ID" and len({b.name for b in boards}) > 1:
        return None, ("GPUs of several models and CUDA_DEVICE_ORDER is not PCI_BUS_ID: CUDA's fastest-first "
                      "order cannot be read from NVML, and the driver gave no UUID")
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return ordered, ""
    picked = []
    for entry in (e.strip() for e in visible.split(",")):
        if entry.isdigit() and int(entry) < len(ordered):
            match = ordered[int(entry)]
        else:
            found = [b for b in ordered if entry and b.uuid.startswith(entry if entry.startswith("GPU-")
                                                                        else f"GPU-{entry}")]
            if len(found) != 1:
                break
            match = found[0]
        if match in picked:
            break
        picked.append(match)
    return picked, ""


def used_boards(boards: list[Board], used: Sequence[Device],
                environ: Mapping[str, str]) -> tuple[list[Board] | None, str]:
    """The NVML boards of the GPUs a run uses: by the UUID the driver gave each device (a MIG instance's
    parent board), else by its CUDA ordinal in cuda_order; (None, why) where a device cannot be placed."""
    by_uuid = {**{mig: b for b in boards for mig in b.mig_uuids}, **{b.uuid: b for b in boards}}
    order: list[Board] | None = None
    found = []
    for device in gpus(used):
        if device.uuid:
            if device.uuid not in by_uuid:
                return None, f"{device.name}'s UUID {device.uuid} is not among NVML's boards"
            found.append(by_uuid[device.uuid])
            continue
        if order is None:
            order, why = cuda_order(boards, environ)
            if order is None:
                return None, why
        if device.index >= len(order):
            return None, f"{device.name} is CUDA device {device.index}; CUDA_VISIBLE_DEVICES leaves {len(order)}"
        found.append(order[device.index])
    return found, ""


def nvml_source(nvml=None, used: Sequence[Device] = (), environ: Mapping[str, str] | None = None
                ) -> tuple[Source | None, str]:
    """NVML over the boards of the GPUs in `used` and no others: each board's power, energy, clocks,
    temperature, utilisation and clock-event reasons, and the totals over those boards (power and energy
    summed, the lowest clocks, the highest temperature); the processes on them for core.neighbours. (None,
    why not) without a driver, a GPU, or a GPU among `used`. `nvml`: the pynvml module, or a stand-in."""
    if not gpus(used):
        return None, "the run uses no GPU"
    if nvml is None:
        try:
            import pynvml as nvml
        except ImportError as exc:
            return None, f"nvidia-ml-py is not installed ({exc})"
    try:
        within(LIMIT_SECONDS, nvml.nvmlInit)  # a stuck driver never returns from it
        boards = nvml_boards(nvml)
    except Exception as exc:  # NVMLError_LibraryNotFound / DriverNotLoaded on a machine without a GPU
        return None, f"NVML: {exc}"
    if not boards:
        return None, "NVML: no GPU"
    mine, why = used_boards(boards, used, os.environ if environ is None else environ)
    if mine is None:
        return None, f"NVML: {why}"
    masks = {name: getattr(nvml, key) for key, name in THROTTLE_REASONS.items() if hasattr(nvml, key)}

    def board(b: Board) -> dict:
        active = nvml.nvmlDeviceGetCurrentClocksEventReasons(b.handle)
        return {"uuid": b.uuid, "power_w": nvml.nvmlDeviceGetPowerUsage(b.handle) / 1000.0,  # mW
                "energy_j": nvml.nvmlDeviceGetTotalEnergyConsumption(b.handle) / 1000.0,  # mJ since load
                "clock_mhz": float(nvml.nvmlDeviceGetClockInfo(b.handle, nvml.NVML_CLOCK_SM)),
                "memory_clock_mhz": float(nvml.nvmlDeviceGetClockInfo(b.handle, nvml.NVML_CLOCK_MEM)),
                "temperature_c": float(nvml.nvmlDeviceGetTemperature(b.handle, nvml.NVML_TEMPERATURE_GPU)),
                "utilisation_percent": float(nvml.nvmlDeviceGetUtilizationRates(b.handle).gpu),
                "throttle": tuple(sorted(name for name, mask in masks.items() if active & mask))}

    def read() -> dict:
        each = [board(b) for b in mine]
        return {"power_w": sum(r["power_w"] for r in each), "energy_j": sum(r["energy_j"] for r in each),
                "clock_mhz": min(r["clock_mhz"] for r in each),
                "memory_clock_mhz": min(r["memory_clock_mhz"] for r in each),
                "temperature_c": max(r["temperature_c"] for r in each),
                "utilisation_percent": sum(r["utilisation_percent"] for r in each) / len(each),
                "throttle": tuple(sorted({t for r in each for t in r["throttle"]})), "boards": tuple(each)}

    def processes() -> list[dict]:
        seen = []
        for b in mine:
            for kind, call in (("compute", "nvmlDeviceGetComputeRunningProcesses"),
                               ("graphics", "nvmlDeviceGetGraphicsRunningProcesses")):
                for p in getattr(nvml, call)(b.handle) or ():
                    memory = getattr(p, "usedGpuMemory", None)
                    seen.append({"pid": int(p.pid), "board": b.uuid, "kind": kind,
                                 "memory_mb": memory / 2**20 if isinstance(memory, int) else None})
        return seen

    instances = [d.uuid for d in gpus(used) if d.uuid and d.uuid.startswith("MIG-")]
    facts = {"driver": text(nvml.nvmlSystemGetDriverVersion()),
             "boards": [b.describe() for b in mine],
             **({"mig_instances": instances, "mig_note": "MIG instances: the readings are their parent boards' "
                 "(NVML reads no power or clocks per instance)"} if instances else {}),
             "boards_seen": len(boards),
             "power_limit_w": [nvml.nvmlDeviceGetEnforcedPowerLimit(b.handle) / 1000.0 for b in mine],
             "application_clocks_mhz": [[nvml.nvmlDeviceGetApplicationsClock(b.handle, nvml.NVML_CLOCK_SM),
                                         nvml.nvmlDeviceGetApplicationsClock(b.handle, nvml.NVML_CLOCK_MEM)]
                                        for b in mine]}
    return Source("nvml", read, facts, processes), ""


def rapl_source(root: Path = POWERCAP, cpus: Path = CPUFREQ) -> tuple[Source | None, str]:
    """RAPL's package counters (every top-level powercap zone, summed) and cpufreq's current clocks where
    present; (None, why not) where no zone's energy_uj is readable."""
    zones = sorted(p for p in root.glob("*-rapl:*") if p.name.count(":") == 1) if root.is_dir() else []
    readable = []
    for zone in zones:
        try:
            int((zone / "energy_uj").read_text())
            readable.append((zone, int((zone / "max_energy_range_uj").read_text())))
        except (OSError, ValueError):
            continue
    if not readable:
        why = (f"no RAPL zone under {root}" if not zones else
               f"RAPL's energy_uj under {root} is not readable (root only on most kernels)")
        return None, why
    frequencies = sorted(cpus.glob("cpu[0-9]*/cpufreq/scaling_cur_freq"))
    total = CounterTotal([wrap / 1e6 for _, wrap in readable])

    def read() -> dict:
        energy = total.update([int((zone / "energy_uj").read_text()) / 1e6 for zone, _ in readable])
        mhz = [int(f.read_text()) / 1000.0 for f in frequencies]
        return {"energy_j": energy, "clock_mhz": sum(mhz) / len(mhz) if mhz else None}

    return Source("rapl", read, {"rapl_zones": [zone.name for zone, _ in readable]}), ""


def source(used: Sequence[Device]) -> tuple[Source | None, str]:
    """The telemetry source of the devices a run uses, or (None, why there is none): NVML over the run's
    GPUs, else (a run on the CPU) RAPL. A GPU run without NVML gets none: the CPU's counters would not
    describe the device that did the work."""
    if gpus(used):
        return nvml_source(used=used)
    found, rapl_why = rapl_source()
    if found is not None:
        return found, ""
    return None, f"the run uses no GPU, and no CPU energy counter ({rapl_why})"


def facts(used: Sequence[Device]) -> dict:
    """What env records of the power settings of the GPUs a run uses (the driver, each board's UUID, power
    limit and application clocks); empty off NVML. A kept peak file is reused only where these match."""
    found, _ = nvml_source(used=used) if gpus(used) else (None, "")
    return dict(found.facts or {}) if found is not None else {}
