"""perflab doctor's analysis and verdicts on synthetic probes (a fake native core):
deterministic steps, rates, gaps, missing TSC and a machine without /sys."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from perflab import environment
from perflab.analyze import doctor_verdicts
from perflab.engines import doctor
from perflab.model import doctor as doctor_model
from perflab.report import console
from perflab.report.doctor_table import check_records, doctor_tables

MS, S = 1_000_000, 1_000_000_000
T0_REALTIME = 1_780_000_000 * S  # 2026-05-28, the wall clock at the probe's start
Snap = tuple[int, int, int, int, int | None]


class Timeline:
    """Synthetic clocks: each OS clock runs at ``rates[c]`` × true time plus its steps;
    the TSC ticks 3 per true ns (None when ``tsc`` is False)."""

    def __init__(
        self,
        rates: dict[str, float] | None = None,
        steps: list[tuple[int, dict[str, int]]] | None = None,
        tsc: bool = True,
        suspend: tuple[int, int] | None = None,
    ) -> None:
        self.rates = {c: 1.0 for c in doctor.SNAPSHOT_CLOCKS} | (rates or {})
        self.steps = steps or []
        self.tsc = tsc
        self.suspend = suspend  # (at true ns, length): BOOTTIME jumps, the rest don't

    def snap(self, t: int) -> Snap:
        base = {
            "monotonic": 500 * S,
            "realtime": T0_REALTIME,
            "monotonic_raw": 499 * S,
            "boottime": 500 * S,
        }
        out = []
        for clock in doctor.SNAPSHOT_CLOCKS:
            value = base[clock] + round(self.rates[clock] * t)
            value += sum(sizes.get(clock, 0) for at, sizes in self.steps if at <= t)
            if clock == "boottime" and self.suspend and self.suspend[0] <= t:
                value += self.suspend[1]
            out.append(value)
        return (*out, 7 * S + 3 * t if self.tsc else None)  # type: ignore[return-value]

    def probe(self, duration_ns: int, gap: tuple[int, int] = (300 * MS, 4 * MS)) -> dict[str, Any]:
        windows = [self.snap(t) for t in range(0, duration_ns + 1, doctor.WINDOW_NS)]
        # Event pairs are consecutive reads, so they never overlap: a step inside the
        # longest gap shows in the gap's pair only, as the native probe would report it.
        events = [
            (self.snap(at - 100), self.snap(at + 100))
            for at, _ in self.steps
            if not gap[0] < at <= gap[0] + gap[1]
        ]
        gap_pair = (self.snap(gap[0]), self.snap(gap[0] + gap[1]))
        return {
            "iterations": 1_000_000,
            "windows": windows,
            "events": events + [gap_pair],
            "events_dropped": 0,
            "torn_reads": 3,
            "backward": {c: 0 for c in doctor.SNAPSHOT_CLOCKS},
            "longest_gap": gap_pair,
        }


class FakeNative:
    """The native probes doctor calls, answering from a :class:`Timeline`."""

    def __init__(
        self, timeline: Timeline, overshoot_ns: int = 60_000, ntp: dict[str, Any] | None = None
    ) -> None:
        self.timeline = timeline
        self.overshoot_ns = overshoot_ns
        self.ntp = ntp

    def clock_read(self, clock: str) -> int | None:
        return None if clock == "tsc" and not self.timeline.tsc else 1

    def clock_read_cost_ns(self, clock: str, reads: int) -> float:
        return 20.0

    def clock_resolution_within(
        self, clock: str, min_steps: int, max_ns: int
    ) -> tuple[int, int] | None:
        return (4 * MS, 0) if "coarse" in clock else (1 if clock == "tsc" else 20, 0)

    def tsc_calibrate(self, span_ns: int) -> float | None:
        return 3.0 if self.timeline.tsc else None

    def clock_probe(
        self, duration_ns: int, window_ns: int, event_floor_ns: int, ticks_per_ns: float | None
    ) -> dict[str, Any]:
        return self.timeline.probe(duration_ns)

    def sleep_durations(self, request_ns: int, count: int, budget_ns: int) -> list[int]:
        return [request_ns + self.overshoot_ns] * min(count, 50)

    def timer_slack_ns(self) -> int:
        return 50_000

    def ntp_state(self) -> dict[str, Any] | None:
        return self.ntp


def fake_speed_states(series_s: float) -> doctor_model.SpeedStates:
    """What the speed-state probe returns, from synthetic series (two states 2× apart,
    a third of the time slow; the two CPUs share them): no clock, no real loop."""
    from perflab.analyze import speed_states
    from tests.analyze.test_speed_states import _timed, switching

    wall, slow = switching(4_000, 12, 24, 2.0, 21, spikes=0)
    twin = (
        50_000.0
        * np.where(slow, 2.0, 1.0)
        * np.exp(np.random.default_rng(22).normal(0, 0.01, slow.size))
    )
    alone = speed_states.series_figures(wall)
    pair = speed_states.pair_figures(_timed(wall), _timed(twin), [0, 1])
    return doctor_model.SpeedStates(
        960, alone.median_ns, series_s, alone, pair, "", speed_states.advice(alone, pair)
    )


@pytest.fixture(scope="module", autouse=True)
def _no_real_speed_probe() -> Any:
    """The speed-state probe times a real loop for a second or two: a fake here."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("perflab.engines.speed_states.probe", fake_speed_states)
        yield


def test_the_speed_states_are_reported_judged_and_round_trip(
    healthy: doctor_model.DoctorReport,
) -> None:
    states = healthy.speed_states
    assert states is not None and states.duration_s == pytest.approx(1 / 3)
    assert states.alone.states == 2 and states.two_cpus is not None
    check = _check(healthy, "speed_states")
    assert check.status == "warn" and check.detail == states.advice
    assert "compare paired (perflab run groups, --compare-to REF)" in check.detail
    assert "--compare-to REF" in check.action
    document = json.loads(json.dumps(healthy.to_dict()))
    assert doctor_model.DoctorReport.from_dict(document).speed_states == states
    table = next(t for t in doctor_tables(healthy) if t.title.startswith("speed states"))
    cells = dict((row[0], row[1]) for row in table.rows)
    assert cells["slow share"] == f"{states.alone.slow_share:.0%} of the time"
    assert cells["states"].startswith("two: fast ") and "(2.0" in cells["states"]
    assert cells["what this means"] == states.advice
    assert cells["two CPUs: same state"].startswith(f"{states.two_cpus.same_state_share:.0%} of ")
    old = {k: v for k, v in document.items() if not k.startswith("speed_states")}
    assert doctor_model.DoctorReport.from_dict(old).speed_states is None


def test_a_machine_too_busy_for_the_speed_probe_says_why() -> None:
    def too_busy(series_s: float) -> doctor_model.SpeedStates:
        raise ValueError("3 timings ran undisturbed; at least 50 are needed to see speed states")

    report = doctor.run(0.5, FakeNative(Timeline()), speed=too_busy)
    assert report.speed_states is None
    check = _check(report, "speed_states")
    assert check.status == "n/a" and "3 timings ran undisturbed" in check.detail
    table = next(t for t in doctor_tables(report) if t.title == "speed states")
    assert table.rows == [["speed states", "not measured: " + report.speed_states_note]]


def _check(report: doctor_model.DoctorReport, name: str) -> doctor_model.Check:
    return next(c for c in report.checks if c.name == name)


@pytest.fixture(scope="module")
def healthy() -> doctor_model.DoctorReport:
    ntp = {
        "state": 0,
        "status": 0,
        "synchronised": True,
        "freq_ppm": 12.5,
        "offset_ns": 0,
        "maxerror_us": 10,
        "esterror_us": 2,
    }
    return doctor.run(1.0, FakeNative(Timeline(), ntp=ntp))


def test_a_healthy_machine_passes_the_clock_checks(healthy: doctor_model.DoctorReport) -> None:
    for name in (
        "clock_steps",
        "rate_vs_tsc",
        "slewing",
        "suspend",
        "backward_steps",
        "ntp",
        "read_cost",
        "resolution",
        "sleep",
    ):
        assert _check(healthy, name).status == "ok", _check(healthy, name)
    assert healthy.cross_checks.reference == "tsc"
    assert healthy.cross_checks.rates["monotonic"] == pytest.approx(1.0)
    assert not healthy.failed
    assert {c.status for c in healthy.checks} <= {"ok", "warn", "fail", "n/a"}


def test_the_json_document_has_the_promised_keys(healthy: doctor_model.DoctorReport) -> None:
    data = json.loads(json.dumps(healthy.to_dict()))
    assert {"clocksource", "clocks", "checks", "cross_checks", "sleep", "cpu"} <= set(data)
    assert {"read_cost_ns", "resolution_ns"} <= set(data["clocks"]["monotonic"])
    assert all({"name", "status", "detail"} <= set(c) for c in data["checks"])
    assert data["clocks"]["tsc"]["resolution_ns"] == pytest.approx(1 / 3)


def test_resolution_verdict_names_the_shortest_resolvable_timing(
    healthy: doctor_model.DoctorReport,
) -> None:
    mono = healthy.clocks["monotonic"]
    floor = (mono.python_read_cost_ns + 20) / 0.001 * 1e-9
    from perflab.units import format_time

    assert (
        f"timings below {format_time(floor)} are not resolvable"
        in _check(healthy, "resolution").detail
    )


def test_clocks_at_twice_the_rate_fail_against_the_tsc() -> None:
    fast = {c: 2.0 for c in doctor.SNAPSHOT_CLOCKS}
    report = doctor.run(1.0, FakeNative(Timeline(rates=fast)))
    check = _check(report, "rate_vs_tsc")
    assert check.status == "fail"
    assert check.detail.startswith("MONOTONIC runs at 2.000× the TSC")
    assert "libfaketime" in check.action
    # A 4 ms preemption at 2× is not a step: every clock moved by rate × time.
    assert _check(report, "clock_steps").status == "ok"
    assert _check(report, "slewing").status == "ok", "RAW is faked too: only the TSC tells"
    assert report.failed


def test_a_step_of_every_os_clock_fails_with_its_size_and_time() -> None:
    step = {c: S for c in doctor.SNAPSHOT_CLOCKS}
    report = doctor.run(3.0, FakeNative(Timeline(steps=[(1200 * MS, step)])))
    (found,) = report.cross_checks.steps
    assert found.sizes_ns == {c: pytest.approx(S, abs=2) for c in doctor.SNAPSHOT_CLOCKS}
    assert found.against == "tsc" and found.offset_s == pytest.approx(1.2, abs=1e-3)
    when = dt.datetime.fromtimestamp((T0_REALTIME + 1200 * MS) / 1e9).astimezone()
    check = _check(report, "clock_steps")
    assert check.status == "fail"
    assert check.detail.startswith(f"clock stepped +1.000 s at {when:%H:%M:%S} (1.2 s into")
    assert "results spanning that moment are unusable" in check.detail
    assert _check(report, "rate_vs_tsc").status == "ok", "a step doesn't spoil the median rate"


def test_a_realtime_only_step_warns() -> None:
    report = doctor.run(2.0, FakeNative(Timeline(steps=[(500 * MS, {"realtime": -2 * S})])))
    check = _check(report, "clock_steps")
    assert check.status == "warn"
    assert "clock stepped -2.000 s" in check.detail and "REALTIME against the TSC" in check.detail


def test_without_a_tsc_steps_are_measured_against_monotonic() -> None:
    timeline = Timeline(steps=[(700 * MS, {"realtime": 5 * S})], tsc=False)
    report = doctor.run(2.0, FakeNative(timeline))
    assert report.cross_checks.reference == "monotonic"
    assert report.clocks["tsc"].available is False
    assert _check(report, "tsc").status == "n/a"
    assert _check(report, "tsc").detail.startswith("not available: no rdtsc")
    assert _check(report, "rate_vs_tsc").status == "n/a"
    assert report.cross_checks.steps[0].sizes_ns == {"realtime": 5 * S}
    assert _check(report, "clock_steps").status == "warn"
    console.markdown(doctor_tables(report))  # renders without the TSC


def test_a_suspend_fails() -> None:
    report = doctor.run(1.0, FakeNative(Timeline(suspend=(400 * MS, 30 * S))))
    assert report.cross_checks.suspend_ns == 30 * S
    assert _check(report, "suspend").status == "fail"


def test_a_machine_without_sys_or_proc_says_not_available(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(environment, "_read", lambda path: None)
    monkeypatch.setattr(environment, "_cpuid_hypervisor", lambda: None)
    report = doctor.run(1.0, FakeNative(Timeline()))
    for name in (
        "clocksource",
        "governor",
        "boost",
        "smt",
        "isolated_cpus",
        "steal",
        "memory_pressure",
        "hypervisor",
        "ntp",
    ):
        check = _check(report, name)
        assert check.status == "n/a" and check.detail.startswith("not available"), check
    text = console.markdown(doctor_tables(report))
    assert "not available" in text and "### verdicts" in text
    assert console.csv_text(check_records(report)).startswith("name,status,detail,action")


@pytest.mark.parametrize(
    ("overshoot", "status"), [(60_000, "ok"), (2 * MS, "warn"), (15 * MS, "fail")]
)
def test_sleep_overshoot_verdicts(overshoot: int, status: str) -> None:
    report = doctor.run(0.5, FakeNative(Timeline(), overshoot_ns=overshoot))
    assert _check(report, "sleep").status == status
    assert report.sleep[1].p50_ns == 1 * MS + overshoot


def _with_cpu(report: doctor_model.DoctorReport, **changes: Any) -> doctor_model.DoctorReport:
    import dataclasses

    return dataclasses.replace(report, cpu=dataclasses.replace(report.cpu, **changes))


@pytest.mark.parametrize(
    ("changes", "name", "status"),
    [
        ({"steal_fraction": 0.05, "steal_ns": 10}, "steal", "warn"),
        ({"steal_fraction": 0.2, "steal_ns": 10}, "steal", "fail"),
        ({"steal_fraction": 0.0, "steal_ns": 0}, "steal", "ok"),
        ({"load_average": [5.0, 1.0, 1.0], "usable_cpus": 2}, "load", "warn"),
        ({"load_average": [0.5, 1.0, 1.0], "usable_cpus": 2}, "load", "ok"),
        ({"governor": "powersave"}, "governor", "warn"),
        ({"governor": "performance"}, "governor", "ok"),
        ({"boost": True}, "boost", "warn"),
        ({"memory_pressure": {"some_avg10": 25.0}}, "memory_pressure", "warn"),
        ({"involuntary_switches": 1000}, "context_switches", "warn"),
        ({"involuntary_switches": 2}, "context_switches", "ok"),
    ],
)
def test_cpu_and_load_verdicts(
    healthy: doctor_model.DoctorReport, changes: dict[str, Any], name: str, status: str
) -> None:
    check = next(
        c for c in doctor_verdicts.verdicts(_with_cpu(healthy, **changes)) if c.name == name
    )
    assert check.status == status, check
    if status != "ok":
        assert check.action, "a warning says what to do"


@settings(max_examples=40, deadline=None)
@given(
    rate=st.floats(min_value=0.5, max_value=2.0),
    at=st.integers(min_value=50 * MS, max_value=950 * MS),
    size=st.integers(min_value=2 * MS, max_value=100 * S).map(lambda v: v),
    sign=st.sampled_from([1, -1]),
    clock=st.sampled_from(doctor.SNAPSHOT_CLOCKS),
)
@example(rate=1.0, at=300_000_001, size=2 * MS, sign=1, clock="monotonic")  # inside the gap
def test_analysis_recovers_rate_and_step(
    rate: float, at: int, size: int, sign: int, clock: str
) -> None:
    timeline = Timeline(
        rates={c: rate for c in doctor.SNAPSHOT_CLOCKS}, steps=[(at, {clock: sign * size})]
    )
    cross = doctor.analyze_probe(timeline.probe(S), 3.0)
    assert cross.rates["monotonic"] == pytest.approx(rate, rel=1e-6)
    (step,) = cross.steps
    assert step.sizes_ns == {clock: pytest.approx(sign * size, abs=5)}
    # The step is placed at the start of the read pair that caught it: 200 ns wide, or
    # the 4 ms longest gap (300–304 ms) when the step fell inside that gap.
    in_gap = 300 * MS < at <= 304 * MS
    width_s = 4e-3 if in_gap else 2e-7
    assert step.offset_s <= at * 1e-9 + 1e-9 <= step.offset_s + width_s + 1e-6


def test_analysis_needs_two_snapshots() -> None:
    raw = Timeline().probe(S)
    raw["windows"] = raw["windows"][:1]
    with pytest.raises(ValueError, match="fewer than two"):
        doctor.analyze_probe(raw, 3.0)


def test_the_default_run_asks_the_native_probes_for_under_ten_seconds() -> None:
    """Doctor's length is the true-time budgets it hands the native probes (TSC
    calibration, each clock's resolution search and read loops, the cross-check probe,
    the sleeps, the two speed-state series): for the default --duration they add up to under 10 s, the issue's
    target, whatever the machine's speed (the native side stops each at its budget)."""
    import argparse

    from perflab.commands import doctor as doctor_command
    from perflab.units import parse_positive_duration

    asked_ns: list[float] = []

    class Recording(FakeNative):
        def tsc_calibrate(self, span_ns: int) -> float | None:
            asked_ns.append(span_ns)
            return super().tsc_calibrate(span_ns)

        def clock_resolution_within(
            self, clock: str, min_steps: int, max_ns: int
        ) -> tuple[int, int] | None:
            asked_ns.append(max_ns)
            return super().clock_resolution_within(clock, min_steps, max_ns)

        def clock_read_cost_ns(self, clock: str, reads: int) -> float:
            cost = super().clock_read_cost_ns(clock, reads)
            asked_ns.append(reads * cost)
            return cost

        def clock_probe(self, duration_ns: int, *rest: Any) -> dict[str, Any]:
            asked_ns.append(duration_ns)
            return super().clock_probe(duration_ns, *rest)

        def sleep_durations(self, request_ns: int, count: int, budget_ns: int) -> list[int]:
            asked_ns.append(budget_ns)
            return super().sleep_durations(request_ns, count, budget_ns)

    parser = argparse.ArgumentParser()
    doctor_command.add_arguments(parser)
    default_s = parse_positive_duration(parser.parse_args([]).duration, "--duration")

    def speed(series_s: float) -> doctor_model.SpeedStates:
        asked_ns.append(2 * series_s * 1e9)  # one series alone, one on two CPUs
        return fake_speed_states(series_s)

    report = doctor.run(default_s, Recording(Timeline()), speed=speed)
    assert report.duration_s == default_s == 3.0
    assert default_s * 1e9 in asked_ns  # the probe got the whole --duration
    assert sum(asked_ns) * 1e-9 < 10, sorted(asked_ns)
