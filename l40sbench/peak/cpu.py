"""The theoretical CPU peak: physical cores x maximum GHz x float32 FLOP per cycle of the core type."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Theoretical:
    """cores x GHz x FLOP per cycle, or None with the reason in `basis`."""

    float32_gflops: float | None
    basis: str



def cpu_facts(cpuinfo: str) -> dict:
    """vendor, family, model, model name, flags and physical cores of the CPUs /proc/cpuinfo lists."""
    facts: dict = {"cores": set()}
    record: dict = {}
    for line in cpuinfo.splitlines() + [""]:
        if not line.strip():
            if record:
                facts.setdefault("vendor", record.get("vendor_id"))
                facts.setdefault("family", int(record.get("cpu family", -1)))
                facts.setdefault("model", int(record.get("model", -1)))
                facts.setdefault("name", record.get("model name", ""))
                facts.setdefault("flags", set(record.get("flags", "").split()))
                # SMT siblings share a core id: they add no FMA units.
                facts["cores"].add((record.get("physical id"), record.get("core id") or record.get("processor")))
            record = {}
            continue
        key, _, value = line.partition(":")
        record[key.strip()] = value.strip()
    facts["physical_cores"] = len(facts.pop("cores"))
    return facts


def fp32_flop_per_cycle(facts: dict) -> tuple[int | None, str]:
    """float32 FLOP one core does per cycle at most (FMA units x lanes x 2), and the core it assumes."""
    vendor, family, model, flags = facts.get("vendor"), facts.get("family"), facts.get("model"), facts.get("flags", set())
    if vendor == "AuthenticAMD":
        if family == 26:
            return 64, "Zen 5 (two 512-bit FMA pipes)"
        if family == 25:
            zen4 = 0x10 <= model <= 0x1F or 0x60 <= model <= 0x7F or 0xA0 <= model <= 0xAF
            return 32, "Zen 4 (AVX-512 on two 256-bit FMA pipes)" if zen4 else "Zen 3 (two 256-bit FMA pipes)"
        if family == 23:
            return (32, "Zen 2 (two 256-bit FMA pipes)") if model >= 0x30 else (16, "Zen / Zen+ (128-bit FMA pipes)")
    if vendor == "GenuineIntel" and "fma" in flags:
        if "avx512f" in flags:
            return None, "Intel with AVX-512: one or two 512-bit FMA units depending on the SKU"
        return 32, "Intel AVX2 (two 256-bit FMA units)"
    return None, f"no FLOP-per-cycle figure for {vendor} family {family} model {model}"


def max_ghz(facts: dict, cpufreq: Path = Path("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")) -> tuple[float | None, str]:
    """The cores' maximum clock in GHz, from cpufreq, else a '@ N GHz' in the model name."""
    try:
        return int(cpufreq.read_text().strip()) / 1e6, "cpufreq maximum"
    except (OSError, ValueError):
        pass
    match = re.search(r"@\s*([0-9.]+)\s*GHz", facts.get("name", ""))
    if match:
        return float(match.group(1)), "the model name's nominal clock (turbo may run faster)"
    return None, f"no cpufreq and no GHz in the model name {facts.get('name')!r}"


def theoretical_cpu_peak(cpuinfo: str, cpufreq: Path | None = None) -> Theoretical:
    facts = cpu_facts(cpuinfo)
    flop, core = fp32_flop_per_cycle(facts)
    ghz, clock_source = max_ghz(facts) if cpufreq is None else max_ghz(facts, cpufreq)
    cores = facts["physical_cores"]
    if flop is None or ghz is None:
        return Theoretical(None, f"unknown: {core if flop is None else clock_source}")
    return Theoretical(cores * ghz * flop,
                       f"{cores} cores x {ghz:.2f} GHz ({clock_source}) x {flop} FLOP/cycle ({core})")



def read_text(path: str) -> str:
    """The file's text, empty where it cannot be read."""
    try:
        return Path(path).read_text()
    except OSError:
        return ""
