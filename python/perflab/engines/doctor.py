"""``perflab doctor``'s probes: what this machine's clocks, sleeps and CPU really do.

Pipeline: measure (through :class:`Native`, the Rust core in real runs and a
fake in tests) → figures (JSON-ready dataclasses, :mod:`perflab.model.doctor`) →
verdicts (:mod:`perflab.analyze.doctor_verdicts`).

Methods:
    * read cost: mean of back-to-back reads in a native tight loop (clockperf), the
      lowest of three loops; the Python cost is the fastest of five loops from Python
      minus the fastest bare loop (timeit's best-of-N);
    * resolution: the smallest non-zero step between consecutive reads
      (coarser than ``clock_getres`` may claim, never finer);
    * cross-checks: a tight loop reads MONOTONIC, REALTIME, MONOTONIC_RAW,
      BOOTTIME and the TSC for ``--duration``; each clock's rate is the median
      over 10 ms windows of Δclock / Δreference (robust to a step inside one
      window), and a step is a pair of consecutive reads whose delta departs
      from that rate by more than :data:`STEP_FLOOR_NS`. The reference is the
      TSC, calibrated against the kernel's MONOTONIC_RAW read by direct system
      call, which no LD_PRELOAD library (libfaketime) can fake; MONOTONIC
      without a TSC;
    * sleep accuracy: durations of relative ``clock_nanosleep`` calls,
      percentiles by linear interpolation (numpy's default);
    * steal and context switches: /proc/stat and ``getrusage`` before and after
      the probe;
    * speed states: a fixed loop timed back to back, alone and on two CPUs at once
      (:mod:`perflab.engines.speed_states`, figures by :mod:`perflab.analyze.speed_states`).
"""

from __future__ import annotations

import datetime as dt
import os
import resource
import time
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from perflab import environment
from perflab.engines import speed_states
from perflab.model.doctor import (
    ClockFigures,
    CpuLoad,
    CrossChecks,
    DoctorReport,
    SleepFigures,
    SpeedStates,
    Step,
)

#: Clocks in report order, with their Linux clock ids for Python reads (None: the TSC).
CLOCK_IDS: dict[str, int | None] = {
    "monotonic": time.CLOCK_MONOTONIC,
    "monotonic_raw": time.CLOCK_MONOTONIC_RAW,
    "monotonic_coarse": 6,
    "realtime": time.CLOCK_REALTIME,
    "realtime_coarse": 5,
    "boottime": time.CLOCK_BOOTTIME,
    "process_cputime": time.CLOCK_PROCESS_CPUTIME_ID,
    "tsc": None,
}
#: The clocks a probe snapshot holds, in tuple order (the TSC is the fifth item).
SNAPSHOT_CLOCKS = ("monotonic", "realtime", "monotonic_raw", "boottime")
#: Rate windows of the probe, ns.
WINDOW_NS = 10_000_000
#: Consecutive reads whose clocks diverge by more than this are kept for step analysis, ns.
EVENT_FLOOR_NS = 20_000
#: A departure from a clock's rate larger than this within one read pair is a step, ns
#: (NTP steps are ≥ 128 ms; read jitter of a slow, interposed clock reaches 100s of µs).
STEP_FLOOR_NS = 1_000_000
#: TSC calibration span, ns.
CALIBRATION_NS = 50_000_000
#: Requested sleeps, ns: 100 µs, 1 ms, 10 ms.
SLEEP_REQUESTS_NS = (100_000, 1_000_000, 10_000_000)
#: Each speed-state series (alone, two CPUs) lasts a third of --duration within these, s.
SPEED_SERIES_MAX_S = 1.0
SPEED_SERIES_MIN_S = 0.05
#: At most this many reads per read-cost figure, and about this long per figure, ns.
NATIVE_READS = 20_000
PYTHON_CALLS = 50_000
PHASE_NS = 20_000_000


class Native(Protocol):
    """The native probes doctor uses (``perflab._core`` satisfies it; tests use fakes)."""

    def clock_read_cost_ns(self, clock: str, reads: int) -> float | None: ...
    def clock_resolution_within(
        self, clock: str, min_steps: int, max_ns: int
    ) -> tuple[int, int] | None: ...
    def clock_read(self, clock: str) -> int | None: ...
    def tsc_calibrate(self, span_ns: int) -> float | None: ...
    def clock_probe(
        self, duration_ns: int, window_ns: int, event_floor_ns: int, ticks_per_ns: float | None
    ) -> dict[str, Any]: ...
    def sleep_durations(self, request_ns: int, count: int, budget_ns: int) -> list[int]: ...
    def timer_slack_ns(self) -> int | None: ...
    def ntp_state(self) -> dict[str, Any] | None: ...


def load_native() -> Any:
    """The native core. Raises UsageError when it is not built."""
    from perflab.errors import UsageError

    try:
        from perflab import _core
    except ImportError:
        raise UsageError(
            "perflab doctor needs the native core, which is not built; "
            "run 'make build' (maturin develop) first"
        ) from None
    return _core


def clock_source(native: Native, ticks_per_ns: float | None) -> dict[str, Any]:
    """Clocksource facts: current, available, TSC presence, flags and rate, hypervisor."""
    cpu = environment.cpu_info()
    has_tsc = native.clock_read("tsc") is not None and cpu["has_tsc"] is not False
    return {
        **environment.clocksource(),
        "has_tsc": has_tsc,
        "tsc_flags": cpu["tsc_flags"],
        "tsc_ghz": ticks_per_ns if has_tsc else None,
        "virtualization": environment.virtualization(),
    }


def _bounded(cost_of: Callable[[int], float | None], most: int) -> float | None:
    """Measure a per-call cost with at most ``most`` calls, fewer when calls are slow
    (an interposed clock can cost 10 µs a read), so each figure takes ≤ ~20 ms."""
    estimate = cost_of(200)
    if not estimate:
        return estimate
    return cost_of(int(min(most, max(200, PHASE_NS / estimate))))


def _best_of_3(cost_ns: Callable[[str, int], float | None], name: str, reads: int) -> float | None:
    """The lowest of three native read-cost loops (a preemption only ever adds time)."""
    costs = [c for c in (cost_ns(name, reads) for _ in range(3)) if c is not None]
    return min(costs) if costs else None


def _python_read_cost_ns(native: Native, name: str) -> float | None:
    from perflab.engines.clocks import python_call_cost_ns

    clock_id = CLOCK_IDS[name]
    func, arg = (native.clock_read, name) if clock_id is None else (time.clock_gettime_ns, clock_id)
    try:
        return _bounded(lambda n: python_call_cost_ns(func, arg, calls=n), PYTHON_CALLS)
    except OSError:
        return None


def clock_figures(native: Native, name: str, ticks_per_ns: float | None) -> ClockFigures:
    """Read cost (native and Python), resolution and backward steps of one clock.

    Costs up to about 100 ms per clock (the coarse clocks need 50 ms to show a few ticks).
    """
    if native.clock_read(name) is None:
        return ClockFigures(name, available=False)
    native_cost = _bounded(lambda n: _best_of_3(native.clock_read_cost_ns, name, n), NATIVE_READS)
    figures = ClockFigures(name, True, native_cost, _python_read_cost_ns(native, name))
    found = native.clock_resolution_within(name, 1000, 50_000_000)
    if found:
        step, figures.backward_steps = found
        scale = 1.0 if name != "tsc" else (1 / ticks_per_ns if ticks_per_ns else None)
        figures.resolution_ns = step * scale if scale else None
    else:
        figures.backward_steps = 0
    return figures


def _snapshots(rows: list[tuple[Any, ...]]) -> tuple[np.ndarray, np.ndarray | None]:
    """Snapshot tuples → (N×4 int64 OS-clock ns, N int64 TSC ticks or None)."""
    os_ns = np.array([r[:4] for r in rows], dtype=np.int64).reshape(-1, 4)
    tsc = [r[4] for r in rows]
    return os_ns, (np.array(tsc, dtype=np.int64) if all(t is not None for t in tsc) else None)


def _reference(
    os_ns: np.ndarray, tsc: np.ndarray | None, ticks_per_ns: float | None
) -> tuple[str, np.ndarray]:
    """The reference clock's ns per row: TSC ns when calibrated, else MONOTONIC."""
    if tsc is not None and ticks_per_ns:
        return "tsc", (tsc - tsc[0]) / ticks_per_ns
    return "monotonic", (os_ns[:, 0] - os_ns[0, 0]).astype(float)


def window_rates(
    windows: list[tuple[Any, ...]], ticks_per_ns: float | None
) -> tuple[str, dict[str, float]]:
    """Each OS clock's rate against the reference: the median over windows of
    Δclock / Δreference (robust: a step spoils one window, not the median).

    Returns:
        (reference name, clock → rate; empty when there are fewer than two windows).
    """
    os_ns, tsc = _snapshots(windows)
    reference, ref = _reference(os_ns, tsc, ticks_per_ns)
    d_ref, d_os = np.diff(ref), np.diff(os_ns, axis=0).astype(float)
    keep = d_ref > 0
    if not keep.any():
        return reference, {}
    ratios = d_os[keep] / d_ref[keep, None]
    return reference, {c: float(np.median(ratios[:, i])) for i, c in enumerate(SNAPSHOT_CLOCKS)}


def _wall(realtime_ns: int) -> str:
    """A REALTIME reading as local ISO-8601 time with milliseconds."""
    return (
        dt.datetime.fromtimestamp(realtime_ns / 1e9).astimezone().isoformat(timespec="milliseconds")
    )


def find_steps(
    events: list[tuple[tuple[Any, ...], tuple[Any, ...]]],
    start: tuple[Any, ...],
    rates: dict[str, float],
    reference: str,
    ticks_per_ns: float | None,
) -> list[Step]:
    """Steps among divergent read pairs: clocks whose delta departs from
    ``rate × Δreference`` by more than :data:`STEP_FLOOR_NS`. O(events)."""
    steps = []
    for a, b in events:
        os_ns, tsc = _snapshots([start, a, b])
        _, ref = _reference(os_ns, tsc, ticks_per_ns if reference == "tsc" else None)
        d_ref = ref[2] - ref[1]
        sizes = {}
        for i, clock in enumerate(SNAPSHOT_CLOCKS):
            if clock == reference or clock not in rates:
                continue
            residual = float(os_ns[2, i] - os_ns[1, i]) - rates[clock] * d_ref
            if abs(residual) > STEP_FLOOR_NS:
                sizes[clock] = round(residual)
        if sizes:
            steps.append(Step(sizes, reference, _wall(int(a[1])), float(ref[1]) * 1e-9))
    return steps


def analyze_probe(
    raw: dict[str, Any], ticks_per_ns: float | None, ntp: dict[str, Any] | None = None
) -> CrossChecks:
    """Derive the cross-checks from a native probe's raw data (``clock_probe``'s dict).

    Raises:
        ValueError: fewer than two window snapshots (the probe did not run).
    """
    windows = raw["windows"]
    if len(windows) < 2:
        raise ValueError("the clock probe returned fewer than two snapshots")
    reference, rates = window_rates(windows, ticks_per_ns)
    os_ns, tsc = _snapshots(windows)
    _, ref = _reference(os_ns, tsc, ticks_per_ns)
    first, last = os_ns[0], os_ns[-1]
    slew = None
    if rates.get("monotonic_raw"):
        slew = (rates["monotonic"] / rates["monotonic_raw"] - 1) * 1e6
    gap_os, gap_tsc = _snapshots([windows[0], *raw["longest_gap"]])
    _, gap_ref = _reference(gap_os, gap_tsc, ticks_per_ns if reference == "tsc" else None)
    return CrossChecks(
        duration_s=float(ref[-1]) * 1e-9,
        reference=reference,
        reads=int(raw["iterations"]),
        torn_reads=int(raw.get("torn_reads", 0)),
        rates=rates,
        slew_ppm=slew,
        suspend_ns=int((last[3] - first[3]) - (last[0] - first[0])),
        suspended_since_boot_s=float(last[3] - last[0]) * 1e-9,
        steps=find_steps(raw["events"], windows[0], rates, reference, ticks_per_ns),
        events_dropped=int(raw["events_dropped"]),
        backward=dict(raw["backward"]),
        longest_gap_ns=int(gap_ref[2] - gap_ref[1]),
        longest_gap_offset_s=float(gap_ref[1]) * 1e-9,
        longest_gap_at=_wall(int(raw["longest_gap"][0][1])),
        ntp=ntp,
    )


def sleep_figures(native: Native, request_ns: int, budget_ns: int) -> SleepFigures:
    """Sleep ``request_ns`` repeatedly within ``budget_ns`` (at least 10 times) and
    summarize the actual durations. Takes about ``budget_ns``."""
    count = max(10, budget_ns // request_ns)
    durations = np.asarray(native.sleep_durations(request_ns, count, budget_ns), dtype=float)
    return SleepFigures(
        request_ns,
        int(durations.size),
        float(np.percentile(durations, 50)),
        float(np.percentile(durations, 99)),
        float(durations.max() - request_ns),
    )


def _activity() -> tuple[dict[str, int] | None, Any]:
    return environment.cpu_counters(), resource.getrusage(resource.RUSAGE_SELF)


def cpu_load(
    before: tuple[dict[str, int] | None, Any],
    after: tuple[dict[str, int] | None, Any],
    probe_s: float,
) -> CpuLoad:
    """CPU settings now, and steal / context switches between two :func:`_activity` readings."""
    cpus = environment.usable_cpus() or 1
    load = CpuLoad(
        os.cpu_count(),
        environment.usable_cpus(),
        environment.governor(),
        environment.boost(),
        environment.smt(),
        environment.isolated_cpus(),
        environment.load_average(),
        environment.memory_pressure(),
    )
    (c0, r0), (c1, r1) = before, after
    if c0 and c1 and "steal_ns" in c0 and "steal_ns" in c1:
        load.steal_ns = c1["steal_ns"] - c0["steal_ns"]
        load.steal_fraction = load.steal_ns / max(probe_s * 1e9 * cpus, 1.0)
    if c0 and c1 and "context_switches" in c0 and "context_switches" in c1:
        load.context_switches = c1["context_switches"] - c0["context_switches"]
    load.involuntary_switches = r1.ru_nivcsw - r0.ru_nivcsw
    load.voluntary_switches = r1.ru_nvcsw - r0.ru_nvcsw
    return load


def speed_series_s(duration_s: float) -> float:
    """Length of each speed-state series for a ``--duration`` of ``duration_s``: a third
    of it, at most :data:`SPEED_SERIES_MAX_S` and at least :data:`SPEED_SERIES_MIN_S`."""
    return min(SPEED_SERIES_MAX_S, max(SPEED_SERIES_MIN_S, duration_s / 3))


def expected_s(duration_s: float) -> float:
    """About how long :func:`run` takes, s: the probe, the sleeps (a third more), the
    per-clock figures (≈ 1 s) and the two speed-state series with their start-up."""
    return duration_s * 4 / 3 + 1 + 2 * speed_series_s(duration_s) + 0.3


def run(
    duration_s: float,
    native: Native | None = None,
    progress: Callable[[str], None] | None = None,
    speed: Callable[[float], SpeedStates] | None = None,
) -> DoctorReport:
    """Measure everything doctor reports; about :func:`expected_s` seconds.

    Args:
        duration_s: length of the cross-check probe, s (> 0); the sleep probes
            take a third of it more, the speed states two series of
            :func:`speed_series_s`.
        native: the native probes (default: ``perflab._core``).
        progress: called with the name of each phase as it starts.
        speed: the speed-state probe, called with the length of a series in s
            (default: :func:`perflab.engines.speed_states.probe`; tests pass a fake).

    Returns:
        The report, verdicts included.

    Raises:
        UsageError: the native core is not built.
    """
    from perflab.analyze.doctor_verdicts import verdicts

    native = native if native is not None else load_native()
    tell = progress or (lambda phase: None)
    started, t0 = dt.datetime.now(dt.UTC), time.monotonic()
    tell("per-clock read cost and resolution")
    ticks = native.tsc_calibrate(CALIBRATION_NS)
    clocks = {name: clock_figures(native, name, ticks) for name in CLOCK_IDS}
    before = _activity()
    tell(f"cross-check probe ({duration_s:g} s)")
    raw = native.clock_probe(int(duration_s * 1e9), WINDOW_NS, EVENT_FLOOR_NS, ticks)
    cross = analyze_probe(raw, ticks, native.ntp_state())
    cpu = cpu_load(before, _activity(), cross.duration_s)
    for name, count in cross.backward.items():
        figures = clocks[name]
        if figures.available:
            figures.backward_steps = (figures.backward_steps or 0) + count
    tell("sleep accuracy")
    budget = int(duration_s * 1e9 / 3 / len(SLEEP_REQUESTS_NS))
    sleeps = [sleep_figures(native, req, budget) for req in SLEEP_REQUESTS_NS]
    series_s = speed_series_s(duration_s)
    tell(f"speed states ({series_s:.2g} s alone, {series_s:.2g} s on two CPUs)")
    states, note = None, ""
    try:
        states = (speed or speed_states.probe)(series_s)
    except ValueError as exc:  # nearly every timing waited for a core
        note = str(exc)
    report = DoctorReport(
        started.isoformat(timespec="seconds"),
        duration_s,
        0.0,
        clock_source(native, ticks),
        clocks,
        cross,
        native.timer_slack_ns(),
        sleeps,
        cpu,
        speed_states=states,
        speed_states_note=note,
    )
    report.checks = verdicts(report)
    report.elapsed_s = time.monotonic() - t0
    return report
