"""The environment fingerprint written into every results file.

It says where numbers came from so that comparisons across machines can be
flagged: machine, OS, interpreter, clock source, virtualization, governor and
load. Every probe degrades to None ("not available") instead of failing, e.g.
inside containers without /sys.
"""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path
from typing import Any

_SYS_CLOCKSOURCE = Path("/sys/devices/system/clocksource/clocksource0")
_TSC_FLAGS = ("constant_tsc", "nonstop_tsc", "tsc_reliable", "tsc_known_freq")


def _read(path: str | Path) -> str | None:
    """Stripped contents of a text file, or None when it can't be read."""
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def cpu_info() -> dict[str, Any]:
    """CPU model, TSC flags and whether a hypervisor flag is set, from /proc/cpuinfo."""
    text = _read("/proc/cpuinfo") or ""
    model, flags = None, set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name" and model is None:
            model = value.strip()
        elif key.strip() == "flags" and not flags:
            flags = set(value.split())
    return {"model": model or platform.processor() or None,
            "tsc_flags": {f: f in flags for f in _TSC_FLAGS} if flags else None,
            "hypervisor_flag": "hypervisor" in flags if flags else None,
            "has_tsc": "tsc" in flags if flags else None}


def virtualization() -> str | None:
    """The hypervisor vendor ("kvm", "xen", "none", …) from DMI/sysfs, or None if unknown."""
    hv_type = _read("/sys/hypervisor/type")
    if hv_type:
        return hv_type
    vendor = (_read("/sys/class/dmi/id/sys_vendor") or "").lower()
    product = (_read("/sys/class/dmi/id/product_name") or "").lower()
    for needle, name in (("kvm", "kvm"), ("qemu", "kvm"), ("vmware", "vmware"),
                         ("microsoft", "hyperv"), ("xen", "xen"), ("amazon", "kvm"),
                         ("google", "kvm"), ("virtualbox", "virtualbox")):
        if needle in vendor or needle in product:
            return name
    info = cpu_info()
    if info["hypervisor_flag"]:
        return "unknown hypervisor"
    return "none" if info["hypervisor_flag"] is False else None


def clocksource() -> dict[str, Any]:
    """Current and available clocksources from sysfs (None when not available)."""
    available = _read(_SYS_CLOCKSOURCE / "available_clocksource")
    return {"current": _read(_SYS_CLOCKSOURCE / "current_clocksource"),
            "available": available.split() if available else None}


def governor() -> str | None:
    """CPU frequency governor of cpu0, or None when cpufreq is not exposed."""
    return _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")


def load_average() -> list[float] | None:
    """1, 5 and 15-minute load averages, or None."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def fingerprint(perflab_version: str) -> dict[str, Any]:
    """The fingerprint at the start of a run (call :func:`finish` at the end).

    Returns:
        JSON-ready dict: hostname, machine, cpu_model, cpu_count, kernel, os,
        python {implementation, version, executable, free_threaded},
        perflab_version, clocksource, tsc_flags, virtualization, governor,
        load_average_start.
    """
    cpu = cpu_info()
    return {
        "hostname": platform.node(), "machine": platform.machine(),
        "cpu_model": cpu["model"], "cpu_count": os.cpu_count(),
        "kernel": platform.release(), "os": platform.platform(),
        "python": {"implementation": platform.python_implementation(),
                   "version": platform.python_version(), "executable": sys.executable,
                   "free_threaded": not getattr(sys, "_is_gil_enabled", lambda: True)()},
        "perflab_version": perflab_version, "clocksource": clocksource(),
        "tsc_flags": cpu["tsc_flags"], "virtualization": virtualization(),
        "governor": governor(), "load_average_start": load_average(),
    }


def finish(env: dict[str, Any]) -> dict[str, Any]:
    """Add the end-of-run figures (load average at the end) to a fingerprint."""
    env["load_average_end"] = load_average()
    return env
