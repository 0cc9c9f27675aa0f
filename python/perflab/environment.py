"""The environment fingerprint written into every results file.

It says where numbers came from so that comparisons across machines can be
flagged: machine, OS, interpreter, clock source, virtualization, governor and
load. Every probe degrades to None ("not available") instead of failing, e.g.
inside containers without /sys.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

from perflab.units import format_time

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
    return {
        "model": model or platform.processor() or None,
        "tsc_flags": {f: f in flags for f in _TSC_FLAGS} if flags else None,
        "hypervisor_flag": "hypervisor" in flags if flags else None,
        "has_tsc": "tsc" in flags if flags else None,
    }


#: CPUID hypervisor vendor signatures → the names systemd-detect-virt uses.
_HYPERVISOR_SIGNATURES = {
    "KVMKVMKVM": "kvm",
    "Microsoft Hv": "microsoft",
    "VMwareVMware": "vmware",
    "XenVMMXenVMM": "xen",
    "TCGTCGTCGTCG": "qemu",
    "VBoxVBoxVBox": "oracle",
    " lrpepyh  vr": "parallels",
    "bhyve bhyve ": "bhyve",
    "ACRNACRNACRN": "acrn",
}


def _cpuid_hypervisor() -> str | None:
    """The hypervisor named by its CPUID signature (needs the native core), or None."""
    try:
        from perflab import _core
    except ImportError:
        return None
    signature = _core.hypervisor_signature()
    if signature is None:
        return None
    return _HYPERVISOR_SIGNATURES.get(signature, signature.strip())


def virtualization() -> str | None:
    """The hypervisor ("kvm", "xen", "microsoft", …, or "none"), or None if unknown.

    Sources in order: the CPUID hypervisor signature, /sys/hypervisor/type,
    DMI vendor strings, then the bare ``hypervisor`` CPU flag (systemd-detect-virt
    uses the same evidence).
    """
    found = _cpuid_hypervisor() or _read("/sys/hypervisor/type")
    if found:
        return found
    vendor = (_read("/sys/class/dmi/id/sys_vendor") or "").lower()
    product = (_read("/sys/class/dmi/id/product_name") or "").lower()
    for needle, name in (
        ("kvm", "kvm"),
        ("qemu", "kvm"),
        ("vmware", "vmware"),
        ("microsoft", "microsoft"),
        ("xen", "xen"),
        ("amazon", "kvm"),
        ("google", "kvm"),
        ("virtualbox", "oracle"),
    ):
        if needle in vendor or needle in product:
            return name
    info = cpu_info()
    if info["hypervisor_flag"]:
        return "unknown hypervisor"
    return "none" if info["hypervisor_flag"] is False else None


def clocksource() -> dict[str, Any]:
    """Current and available clocksources from sysfs (None when not available)."""
    available = _read(_SYS_CLOCKSOURCE / "available_clocksource")
    return {
        "current": _read(_SYS_CLOCKSOURCE / "current_clocksource"),
        "available": available.split() if available else None,
    }


def governor() -> str | None:
    """CPU frequency governor of cpu0, or None when cpufreq is not exposed."""
    return _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")


def boost() -> bool | None:
    """Whether turbo/boost is enabled (cpufreq ``boost``, or intel_pstate's
    ``no_turbo`` inverted), or None when neither file exists (e.g. in VMs)."""
    value = _read("/sys/devices/system/cpu/cpufreq/boost")
    if value in ("0", "1"):
        return value == "1"
    no_turbo = _read("/sys/devices/system/cpu/intel_pstate/no_turbo")
    return no_turbo == "0" if no_turbo in ("0", "1") else None


def smt() -> bool | None:
    """Whether simultaneous multithreading (hyper-threading) is active, or None."""
    value = _read("/sys/devices/system/cpu/smt/active")
    return value == "1" if value in ("0", "1") else None


def isolated_cpus() -> str | None:
    """CPUs isolated from the scheduler (``isolcpus=``), e.g. "2-3"; "" when none;
    None when not available."""
    return _read("/sys/devices/system/cpu/isolated")


def usable_cpus() -> int | None:
    """CPUs this process may run on (its affinity mask), or None."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None


def memory_pressure() -> dict[str, float] | None:
    """Memory pressure (PSI) from /proc/pressure/memory: the share of the last 10 s in
    which some / all tasks stalled on memory, in % ({"some_avg10", "full_avg10"}), or None."""
    text = _read("/proc/pressure/memory")
    if not text:
        return None
    out = {}
    for line in text.splitlines():
        kind, *pairs = line.split()
        values = dict(p.split("=", 1) for p in pairs)
        if "avg10" in values:
            out[f"{kind}_avg10"] = float(values["avg10"])
    return out or None


def cpu_counters() -> dict[str, int] | None:
    """Machine-wide counters from /proc/stat: steal time (ns, all CPUs summed) and
    context switches since boot, or None when /proc/stat is unreadable."""
    text = _read("/proc/stat")
    if not text:
        return None
    out = {}
    for line in text.splitlines():
        fields = line.split()
        if fields[0] == "cpu" and len(fields) > 8:
            out["steal_ns"] = int(fields[8]) * 1_000_000_000 // os.sysconf("SC_CLK_TCK")
        elif fields[0] == "ctxt":
            out["context_switches"] = int(fields[1])
    return out or None


def os_name() -> str:
    """:func:`platform.platform`'s string ("Linux-6.1.0-x86_64-with-glibc2.36"), on Linux
    without the ``uname -p`` subprocess it starts (a fork and exec: ≈ 4 ms of CPU in each
    short ``perflab http`` process, issue 30) for a processor field that Linux's
    ``uname -p`` reports as "unknown" or as the machine, both of which
    :func:`platform.platform` leaves out. Where ``uname -p`` names the CPU instead (some
    distributions, e.g. Gentoo), :func:`platform.platform` adds that name and this does
    not: the field is shown (``host``), never compared, and ``cpu_model`` names the CPU.
    Elsewhere :func:`platform.platform` itself."""
    if sys.platform != "linux":
        return platform.platform()
    uname = os.uname()
    libc, version = platform.libc_ver()
    return _platform_words(uname.sysname, uname.release, uname.machine, "with", libc + version)


def _platform_words(*words: str) -> str:
    """The words joined as :func:`platform.platform` joins them: by ``-``, empty ones
    left out, characters unfit for a file name as ``-``, "unknown" dropped, no ``--``,
    no trailing ``-``."""
    text = "-".join(w.strip() for w in words if w)
    for char in ' /\\:;"()':
        text = text.replace(char, "_" if char == " " else "-")
    text = text.replace("unknown", "")
    while "--" in text:
        text = text.replace("--", "-")
    return text.rstrip("-")


def load_average() -> list[float] | None:
    """1, 5 and 15-minute load averages, or None."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def fingerprint(perflab_version: str) -> dict[str, Any]:
    """The fingerprint at the start of a run (call :func:`finish` at the end).

    Returns:
        JSON-ready dict: hostname, machine, cpu_model, cpu_count, usable_cpus,
        kernel, os, python {implementation, version, executable, free_threaded},
        perflab_version, clocksource {current, available}, has_tsc, tsc_flags,
        virtualization, governor, boost, smt, isolated_cpus, clock_integrity
        (the per-sample thresholds), load_average_start. Unknown values are None.
    """
    from perflab import clock_rule

    cpu = cpu_info()
    return {
        "hostname": platform.node(),
        "machine": platform.machine(),
        "cpu_model": cpu["model"],
        "cpu_count": os.cpu_count(),
        "usable_cpus": usable_cpus(),
        "kernel": platform.release(),
        "os": os_name(),
        "python": {
            "implementation": platform.python_implementation(),
            "version": platform.python_version(),
            "executable": sys.executable,
            "free_threaded": not getattr(sys, "_is_gil_enabled", lambda: True)(),
        },
        "perflab_version": perflab_version,
        "clocksource": clocksource(),
        "has_tsc": cpu["has_tsc"],
        "tsc_flags": cpu["tsc_flags"],
        "virtualization": virtualization(),
        "governor": governor(),
        "boost": boost(),
        "smt": smt(),
        "isolated_cpus": isolated_cpus(),
        "clock_integrity": clock_rule.settings(),
        "load_average_start": load_average(),
    }


def finish(env: dict[str, Any]) -> dict[str, Any]:
    """Add the end-of-run figures (load average at the end) to a fingerprint."""
    env["load_average_end"] = load_average()
    return env


def _text(value: Any) -> str:
    """A fingerprint value in words: None → "not available", bools → on/off."""
    if value is None:
        return "not available"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, list):
        return " ".join(str(v) for v in value) or "none"
    return str(value) if value != "" else "none"


def _tsc_text(env: dict[str, Any]) -> str:
    flags = env.get("tsc_flags")
    if env.get("has_tsc") is False:
        return "no TSC"
    if not flags:
        return "not available"
    have = [f for f, on in flags.items() if on]
    missing = [f for f, on in flags.items() if not on]
    return " ".join(have) + (f" (missing: {' '.join(missing)})" if missing else "")


def _integrity_text(integ: dict[str, Any] | None) -> str:
    if not integ:
        return "not recorded"
    return (
        f"a sample is flagged when MONOTONIC and REALTIME, MONOTONIC_RAW or the TSC "
        f"differ by more than {format_time(integ['abs_tolerance_ns'] * 1e-9)} + "
        f"{integ['rel_tolerance']:.1%} of its length"
    )


#: Fingerprint keys :func:`describe` puts into words; any other key is shown as JSON.
_DESCRIBED = {
    "hostname",
    "os",
    "cpu_model",
    "cpu_count",
    "usable_cpus",
    "machine",
    "kernel",
    "python",
    "perflab_version",
    "clocksource",
    "has_tsc",
    "tsc_flags",
    "virtualization",
    "governor",
    "boost",
    "smt",
    "isolated_cpus",
    "load_average_start",
    "load_average_end",
    "clock_integrity",
}


def describe(env: dict[str, Any]) -> list[tuple[str, str]]:
    """The fingerprint as (label, text) lines for people, in a fixed order.

    Missing keys (older files) and unknown values read "not available"; keys
    added by others (not known here) follow as JSON, so nothing is hidden.
    """
    py = env.get("python") or {}
    source = env.get("clocksource") or {}
    loads = [env.get("load_average_start"), env.get("load_average_end")]
    return [
        ("host", f"{_text(env.get('hostname'))} ({_text(env.get('os'))})"),
        (
            "CPU",
            f"{_text(env.get('cpu_model'))}, {_text(env.get('cpu_count'))} CPUs "
            f"({_text(env.get('usable_cpus'))} usable), {_text(env.get('machine'))}",
        ),
        ("kernel", _text(env.get("kernel"))),
        (
            "python",
            f"{_text(py.get('implementation'))} {_text(py.get('version'))}"
            + (" free-threaded" if py.get("free_threaded") else "")
            + f" ({_text(py.get('executable'))})",
        ),
        ("perflab", _text(env.get("perflab_version"))),
        (
            "clocksource",
            f"{_text(source.get('current'))} (available: {_text(source.get('available'))})",
        ),
        ("TSC flags", _tsc_text(env)),
        ("virtualization", _text(env.get("virtualization"))),
        ("governor", _text(env.get("governor"))),
        ("boost / SMT", f"{_text(env.get('boost'))} / {_text(env.get('smt'))}"),
        ("isolated CPUs", _text(env.get("isolated_cpus"))),
        ("load average", " → ".join(_text(x) for x in loads) + " (1, 5, 15 min; start → end)"),
        ("clock checks", _integrity_text(env.get("clock_integrity"))),
    ] + [(key, json.dumps(value)) for key, value in env.items() if key not in _DESCRIBED]


#: Fingerprint fields that matter for comparability, with what a difference means.
_FINGERPRINT: tuple[tuple[str, str, str], ...] = (
    ("hostname", "machine", "A and B were measured on different machines"),
    ("cpu_model", "CPU", "times from different CPUs are not comparable"),
    ("cpu_count", "CPU count", "scheduling and background noise differ"),
    ("virtualization", "virtualization", "a hypervisor adds steal time and clock noise"),
    ("clocksource.current", "clocksource", "timer cost and resolution differ"),
    ("governor", "CPU frequency governor", "use 'performance' on both for stable clocks"),
    ("kernel", "kernel", "system call costs may differ"),
    (
        "python.implementation",
        "Python implementation",
        "the interpreter, not the code, may explain the difference",
    ),
    (
        "python.version",
        "Python version",
        "the interpreter, not the code, may explain the difference",
    ),
    ("perflab_version", "perflab version", "the measurement method may differ"),
)


def _dig(env: dict[str, Any], dotted: str) -> Any:
    value: Any = env
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def environment_differences(env_a: dict[str, Any], env_b: dict[str, Any]) -> list[str]:
    """Plain-words warnings where the fingerprints of A and B differ, or a machine was busy.

    Fields missing on either side are not compared. A comparison across
    machines is flagged, never refused.

    Returns:
        One sentence per difference, e.g. "CPU differs: A 'X', B 'Y': times
        from different CPUs are not comparable".
    """
    out = []
    for key, what, meaning in _FINGERPRINT:
        va, vb = _dig(env_a, key), _dig(env_b, key)
        if va is not None and vb is not None and va != vb:
            out.append(f"{what} differs: A {va!r}, B {vb!r}: {meaning}")
    for side, env in (("A", env_a), ("B", env_b)):
        load, cpus = env.get("load_average_start"), env.get("cpu_count")
        if load and cpus and load[0] >= cpus:
            out.append(
                f"{side}'s machine was busy at the start (load {load[0]:g} on {cpus} "
                "CPUs): its numbers may be noisier"
            )
    return out
