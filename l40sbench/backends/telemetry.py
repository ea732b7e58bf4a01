"""Where a run's telemetry comes from: NVML on NVIDIA GPUs (nvidia-ml-py), else RAPL's powercap counters and
cpufreq on the CPU, else nothing, with the reason. The readers; core.telemetry samples and sums them.

Independent of the Keras backend: NVML and the powercap files describe the machine, whichever framework
drives it.
"""

from __future__ import annotations

from pathlib import Path

from l40sbench.core.telemetry import CounterTotal, Source

POWERCAP = Path("/sys/class/powercap")
CPUFREQ = Path("/sys/devices/system/cpu")
# NVML's clock-event reasons that slow the device against its will (idle and the application-clock setting
# are not throttling): thermal, power cap and hardware slowdown.
THROTTLE_REASONS = {
    "nvmlClocksEventReasonSwPowerCap": "power cap",
    "nvmlClocksEventReasonHwSlowdown": "hardware slowdown",
    "nvmlClocksEventReasonHwThermalSlowdown": "hardware thermal slowdown",
    "nvmlClocksEventReasonHwPowerBrakeSlowdown": "hardware power brake",
    "nvmlClocksEventReasonSwThermalSlowdown": "software thermal slowdown",
}


def nvml_source(nvml=None) -> tuple[Source | None, str]:
    """NVML over every visible GPU (power and energy summed, the lowest clocks, the highest temperature);
    (None, why not) without a driver or a GPU. `nvml`: the pynvml module, or a stand-in for tests."""
    if nvml is None:
        try:
            import pynvml as nvml
        except ImportError as exc:
            return None, f"nvidia-ml-py is not installed ({exc})"
    try:
        nvml.nvmlInit()
        handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(nvml.nvmlDeviceGetCount())]
    except Exception as exc:  # NVMLError_LibraryNotFound / DriverNotLoaded on a machine without a GPU
        return None, f"NVML: {exc}"
    if not handles:
        return None, "NVML: no GPU"
    masks = {name: getattr(nvml, key) for key, name in THROTTLE_REASONS.items() if hasattr(nvml, key)}

    def read() -> dict:
        power = energy = 0.0
        clocks, memory, temperature, busy, throttle = [], [], [], [], set()
        for handle in handles:
            power += nvml.nvmlDeviceGetPowerUsage(handle) / 1000.0  # mW
            energy += nvml.nvmlDeviceGetTotalEnergyConsumption(handle) / 1000.0  # mJ since the driver loaded
            clocks.append(nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM))
            memory.append(nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_MEM))
            temperature.append(nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU))
            busy.append(nvml.nvmlDeviceGetUtilizationRates(handle).gpu)
            active = nvml.nvmlDeviceGetCurrentClocksEventReasons(handle)
            throttle |= {name for name, mask in masks.items() if active & mask}
        return {"power_w": power, "energy_j": energy, "clock_mhz": float(min(clocks)),
                "memory_clock_mhz": float(min(memory)), "temperature_c": float(max(temperature)),
                "utilisation_percent": sum(busy) / len(busy), "throttle": tuple(sorted(throttle))}

    def text(value) -> str:
        return value.decode() if isinstance(value, bytes) else str(value)

    facts = {"driver": text(nvml.nvmlSystemGetDriverVersion()),
             "power_limit_w": [nvml.nvmlDeviceGetEnforcedPowerLimit(h) / 1000.0 for h in handles],
             "application_clocks_mhz": [[nvml.nvmlDeviceGetApplicationsClock(h, nvml.NVML_CLOCK_SM),
                                         nvml.nvmlDeviceGetApplicationsClock(h, nvml.NVML_CLOCK_MEM)]
                                        for h in handles]}
    return Source("nvml", read, facts), ""


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


def source() -> tuple[Source | None, str]:
    """The machine's telemetry source, or (None, why there is none)."""
    found, nvml_why = nvml_source()
    if found is not None:
        return found, ""
    found, rapl_why = rapl_source()
    if found is not None:
        return found, ""
    return None, f"no NVIDIA GPU ({nvml_why}) and no CPU energy counter ({rapl_why})"


def facts() -> dict:
    """What env records of the device's power settings (a GPU's driver, power limit and application clocks);
    empty without NVML. A kept peak file is reused only where these match."""
    found, _ = nvml_source()
    return dict(found.facts or {}) if found is not None else {}
