"""The native clock probes through their Python bindings (real clocks, generous bounds:
the machine is shared, so timings only have to be plausible, not precise)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from perflab import _core as core

HAS_TSC = core.clock_read("tsc") is not None


def test_snapshot_reads_every_clock_in_order() -> None:
    a = core.clock_snapshot()
    time.sleep(0.001)
    b = core.clock_snapshot()
    assert len(a) == 5
    for i in range(4):
        assert b[i] - a[i] >= 900_000, (a, b)  # each OS clock saw the 1 ms sleep
    assert abs(a[1] - time.time_ns()) < 10**9, "second item is REALTIME"
    assert (a[4] is None) == (not HAS_TSC)


def test_unknown_clock_names_are_value_errors() -> None:
    with pytest.raises(ValueError, match="unknown clock .sundial.; known: monotonic"):
        core.clock_read("sundial")
    with pytest.raises(ValueError):
        core.clock_resolution_within("sundial")


@pytest.mark.skipif(not HAS_TSC, reason="no rdtsc on this CPU")
def test_tsc_rate_from_two_references_matches_a_calibration() -> None:
    start = core.tsc_reference()
    time.sleep(0.05)
    rate = core.tsc_rate(start, core.tsc_reference())
    assert rate == pytest.approx(core.tsc_calibrate(20_000_000), rel=1e-4)
    assert core.tsc_rate(start, start) is None, "no time passed: no rate"


def test_true_ns_is_the_kernel_monotonic_raw() -> None:
    a = time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW)
    b = core.true_ns()
    c = time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW)
    assert a <= b <= c


def test_coarse_resolution_is_a_jiffy_and_fine_clocks_resolve_below_a_microsecond() -> None:
    coarse = core.clock_resolution_within("monotonic_coarse", 3, 200_000_000)
    fine = core.clock_resolution_within("monotonic", 1000, 50_000_000)
    assert coarse is not None and 100_000 <= coarse[0] <= 20_000_000
    assert fine is not None and fine[0] < 1_000 and fine[1] == 0


def test_probe_returns_windows_events_and_gap() -> None:
    t0 = time.monotonic()
    raw = core.clock_probe(100_000_000, 10_000_000, 50_000_000, core.tsc_calibrate(5_000_000))
    took = time.monotonic() - t0
    assert 0.1 <= took < 5, "bounded by true time"
    assert set(raw) == {
        "iterations",
        "windows",
        "events",
        "events_dropped",
        "backward",
        "longest_gap",
        "torn_reads",
    }
    assert 8 <= len(raw["windows"]) <= 13  # ~100 ms / 10 ms windows, plus start and end
    assert raw["iterations"] > 1000 and raw["torn_reads"] < raw["iterations"]
    assert raw["backward"] == {"monotonic": 0, "realtime": 0, "monotonic_raw": 0, "boottime": 0}
    before, after = raw["longest_gap"]
    assert after[0] >= before[0]


def test_sleeps_last_at_least_what_was_asked_and_respect_the_budget() -> None:
    got = core.sleep_durations(1_000_000, 1000, 20_000_000)
    assert 1 <= len(got) <= 25
    assert all(d >= 1_000_000 for d in got)


def test_timer_slack_matches_proc() -> None:
    proc = Path("/proc/self/timerslack_ns")
    slack = core.timer_slack_ns()
    assert slack is not None and slack > 0
    if proc.exists():
        assert slack == int(proc.read_text())


def test_ntp_state_has_its_fields() -> None:
    state = core.ntp_state()
    if state is None:
        pytest.skip("adjtimex refused here")
    assert {
        "state",
        "status",
        "synchronised",
        "freq_ppm",
        "offset_ns",
        "maxerror_us",
        "esterror_us",
    } <= set(state)
    assert abs(state["freq_ppm"]) <= 600  # the kernel clamps frequency to ±500 ppm


def test_hypervisor_signature_names_the_hypervisor_the_cpu_flag_hints_at() -> None:
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    signature = core.hypervisor_signature()
    if " hypervisor" not in flags:
        assert signature is None
    elif signature is not None:
        assert 0 < len(signature) <= 12
