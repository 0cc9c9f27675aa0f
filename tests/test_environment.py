"""The environment fingerprint: what it records, how it degrades without /proc and /sys,
and how it reads in words."""

from __future__ import annotations

from pathlib import Path

import pytest

from perflab import environment


def test_fingerprint_has_every_field_the_results_file_promises() -> None:
    env = environment.finish(environment.fingerprint("9.9.9"))
    for key in (
        "clocksource",
        "tsc_flags",
        "virtualization",
        "governor",
        "kernel",
        "cpu_model",
        "cpu_count",
        "python",
        "perflab_version",
        "load_average_start",
        "load_average_end",
        "clock_integrity",
        "boost",
        "smt",
        "isolated_cpus",
    ):
        assert key in env, key
    assert env["perflab_version"] == "9.9.9"
    assert {"implementation", "version"} <= set(env["python"])
    assert env["clock_integrity"]["abs_tolerance_ns"] > 0


@pytest.fixture
def bare_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """A container without /proc/cpuinfo, /sys or /proc/pressure (every read fails)."""
    monkeypatch.setattr(environment, "_read", lambda path: None)
    monkeypatch.setattr(environment, "_cpuid_hypervisor", lambda: None)


def test_a_bare_machine_gives_none_not_errors(bare_machine: None) -> None:
    env = environment.fingerprint("1")
    assert env["clocksource"] == {"current": None, "available": None}
    assert env["tsc_flags"] is None and env["has_tsc"] is None
    assert env["virtualization"] is None
    assert env["governor"] is None and env["boost"] is None and env["smt"] is None
    assert environment.memory_pressure() is None and environment.cpu_counters() is None
    lines = dict(environment.describe(env))
    assert lines["clocksource"] == "not available (available: not available)"
    assert lines["TSC flags"] == "not available"
    assert lines["governor"] == "not available"


def test_describe_of_an_old_file_without_the_new_keys() -> None:
    lines = dict(environment.describe({"kernel": "6.1", "load_average_start": [1.0, 2.0, 3.0]}))
    assert lines["kernel"] == "6.1"
    assert lines["load average"].startswith("1.0 2.0 3.0 → not available")
    assert lines["clock checks"] == "not recorded"


def test_describe_names_missing_tsc_flags_and_keeps_unknown_keys() -> None:
    env = {
        "has_tsc": True,
        "tsc_flags": {"constant_tsc": True, "nonstop_tsc": False},
        "gpu": {"model": "none"},
    }
    lines = dict(environment.describe(env))
    assert lines["TSC flags"] == "constant_tsc (missing: nonstop_tsc)"
    assert lines["gpu"] == '{"model": "none"}'
    assert dict(environment.describe({"has_tsc": False}))["TSC flags"] == "no TSC"


def test_proc_parsers(monkeypatch: pytest.MonkeyPatch) -> None:
    files = {
        "/proc/pressure/memory": "some avg10=1.50 avg60=0.10 avg300=0.00 total=12\n"
        "full avg10=0.25 avg60=0.00 avg300=0.00 total=3",
        "/proc/stat": "cpu  1 2 3 4 5 6 7 250 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\nctxt 987\n",
        "/sys/devices/system/cpu/cpufreq/boost": "1",
        "/sys/devices/system/cpu/smt/active": "0",
    }
    monkeypatch.setattr(environment, "_read", lambda path: files.get(str(path)))
    assert environment.memory_pressure() == {"some_avg10": 1.5, "full_avg10": 0.25}
    ticks = environment.os.sysconf("SC_CLK_TCK")
    assert environment.cpu_counters() == {
        "steal_ns": 250 * 1_000_000_000 // ticks,
        "context_switches": 987,
    }
    assert environment.boost() is True and environment.smt() is False


def test_intel_no_turbo_is_read_inverted(monkeypatch: pytest.MonkeyPatch) -> None:
    files = {"/sys/devices/system/cpu/intel_pstate/no_turbo": "1"}
    monkeypatch.setattr(environment, "_read", lambda path: files.get(str(path)))
    assert environment.boost() is False


def test_virtualization_prefers_the_cpuid_signature(monkeypatch: pytest.MonkeyPatch) -> None:
    class Core:
        @staticmethod
        def hypervisor_signature() -> str:
            return "Microsoft Hv"

    monkeypatch.setitem(__import__("sys").modules, "perflab._core", Core)
    monkeypatch.setattr("perflab._core", Core, raising=False)
    assert environment._cpuid_hypervisor() == "microsoft"


def test_real_virtualization_agrees_with_the_cpu_flag() -> None:
    cpuinfo = Path("/proc/cpuinfo")
    if not cpuinfo.exists():
        pytest.skip("no /proc/cpuinfo")
    virt = environment.virtualization()
    if " hypervisor" in cpuinfo.read_text():
        assert virt not in (None, "none")


@pytest.mark.parametrize(
    "words",
    [
        ("Linux", "6.1.0-13-amd64", "x86_64", "", "with", "glibc2.36"),
        ("Linux", "5.1 custom", "aarch64", "with", ""),
        ("a:b", "unknown", "(c)", "with", "musl1.2"),
        ("x", " --y", 'z;"\\/', "with", "glibc2.3"),
    ],
)
def test_platform_words_join_as_platform_platform_does(words: tuple[str, ...]) -> None:
    import platform

    assert environment._platform_words(*words) == platform._platform(*words)  # noqa: SLF001


def test_os_name_is_platform_platform_without_its_subprocess(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import platform
    import subprocess
    import sys

    if sys.platform != "linux":
        pytest.skip("the fast path is Linux's; elsewhere os_name is platform.platform()")
    # `uname -p` on Linux answers "unknown" (GNU coreutils) or the machine (Fedora's
    # patch): platform.platform() leaves both out, so either way the strings agree
    for answer in ("unknown", platform.machine()):
        monkeypatch.setattr(subprocess, "check_output", lambda *a, _v=answer, **k: _v)
        monkeypatch.setattr(platform, "_uname_cache", None)
        platform._platform_cache.clear()  # noqa: SLF001
        assert environment.os_name() == platform.platform()
    spawned: list[object] = []
    monkeypatch.setattr(subprocess, "check_output", lambda *a, **k: spawned.append(a) or "")
    monkeypatch.setattr(platform, "_uname_cache", None)
    environment.os_name()
    assert spawned == []
