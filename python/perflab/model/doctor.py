"""The doctor's report: what ``perflab doctor`` measured about this machine, and its verdicts.

Plain dataclasses, JSON-ready (:meth:`DoctorReport.to_dict`): the probes
(:mod:`perflab.engines.doctor`) fill them, the verdicts
(:mod:`perflab.analyze.doctor_verdicts`) judge them, the tables
(:mod:`perflab.report.doctor_table`) render them. Times are in ns unless a name says
otherwise. The ``perflab doctor --json`` document (schema ``doctor``,
``perflab/schemas/doctor.schema.json``, version :data:`SCHEMA_VERSION`) is written by
:meth:`DoctorReport.document` and read back by :meth:`DoctorReport.from_dict`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

#: The document's schema (``perflab/schemas/doctor.schema.json``) and ``kind``.
SCHEMA = "doctor"
#: Version of the doctor document (its ``doctor_schema_version``).
SCHEMA_VERSION = 1


@dataclass
class ClockFigures:
    """One clock's figures.

    Attributes:
        name: "monotonic", "tsc", …
        available: False when this machine can't read it (then every figure is None).
        read_cost_ns: native cost of one read, ns.
        python_read_cost_ns: cost of one read from Python, ns
            (``time.clock_gettime_ns``; for the TSC, ``perflab._core.clock_read``).
        resolution_ns: smallest non-zero step seen between reads, ns.
        backward_steps: reads that went backwards (resolution loop + probe).
    """

    name: str
    available: bool
    read_cost_ns: float | None = None
    python_read_cost_ns: float | None = None
    resolution_ns: float | None = None
    backward_steps: int | None = None


@dataclass
class Step:
    """A jump of one or more clocks between two consecutive reads of the probe.

    Attributes:
        sizes_ns: clock → size of its jump beyond its normal rate, ns (+ forward).
        against: the reference it was measured against ("tsc" or "monotonic").
        at: wall-clock time just before the step (REALTIME, ISO 8601, local).
        offset_s: seconds into the probe (reference clock).
    """

    sizes_ns: dict[str, int]
    against: str
    at: str
    offset_s: float


@dataclass
class CrossChecks:
    """What the tight-loop probe saw, in seconds, ns and ppm.

    Attributes:
        duration_s: length of the probe on the reference clock, s.
        reference: "tsc" or "monotonic" (what rates and steps are measured against).
        reads: snapshots taken (each reads every clock once).
        torn_reads: snapshots discarded because a preemption split them (their
            clocks were read at different moments, so they can't be compared).
        rates: clock → its rate against the reference (1.0 is right); the
            median over 10 ms windows.
        slew_ppm: (MONOTONIC rate / MONOTONIC_RAW rate − 1) × 10⁶: NTP slewing.
        suspend_ns: BOOTTIME − MONOTONIC growth during the probe (time suspended), ns.
        suspended_since_boot_s: BOOTTIME − MONOTONIC now, s.
        steps: jumps seen (at most the first 4096 divergent read pairs are analysed).
        events_dropped: divergent read pairs beyond that cap, not analysed.
        backward: clock → backward steps during the probe.
        longest_gap_ns / longest_gap_offset_s / longest_gap_at: the widest gap
            between consecutive reads (preemption, steal), when and where.
        ntp: the kernel's NTP state (adjtimex), or None when not available.
    """

    duration_s: float
    reference: str
    reads: int
    torn_reads: int
    rates: dict[str, float]
    slew_ppm: float | None
    suspend_ns: int
    suspended_since_boot_s: float
    steps: list[Step]
    events_dropped: int
    backward: dict[str, int]
    longest_gap_ns: int
    longest_gap_offset_s: float
    longest_gap_at: str
    ntp: dict[str, Any] | None = None


@dataclass
class SleepFigures:
    """Actual durations of one requested sleep length.

    Attributes:
        request_ns: the requested sleep, ns.
        count: sleeps made.
        p50_ns / p99_ns: percentiles of the actual durations, ns.
        max_overshoot_ns: longest actual − requested, ns.
    """

    request_ns: int
    count: int
    p50_ns: float
    p99_ns: float
    max_overshoot_ns: float


@dataclass
class CpuLoad:
    """CPU settings and how busy the machine was during the probe.

    Attributes:
        cpu_count / usable_cpus: logical CPUs, and those this process may use.
        governor, boost, smt, isolated_cpus: see :mod:`perflab.environment` (None: not available).
        load_average: 1, 5 and 15-minute load averages.
        memory_pressure: PSI memory stall shares in % over the last 10 s.
        steal_ns: machine-wide CPU steal during the probe, ns (all CPUs summed).
        steal_fraction: steal_ns / (probe length × CPUs).
        context_switches: machine-wide context switches during the probe.
        involuntary_switches / voluntary_switches: this process's, during the probe.
    """

    cpu_count: int | None
    usable_cpus: int | None
    governor: str | None
    boost: bool | None
    smt: bool | None
    isolated_cpus: str | None
    load_average: list[float] | None
    memory_pressure: dict[str, float] | None
    steal_ns: int | None = None
    steal_fraction: float | None = None
    context_switches: int | None = None
    involuntary_switches: int = 0
    voluntary_switches: int = 0


@dataclass
class StateFigures:
    """One series' speed states. Times in ns or ms as named; spreads and shares unitless.

    Attributes:
        timings: timings classified.
        dropped: timings left out because they waited for a core (CPU < 90% of wall).
        median_ns: median timing, ns.
        states: 2 when two speed states were found, else 1.
        threshold_ns: timings above it are slow, ns (None with one state).
        fast_ns / slow_ns: median timing in each state, ns (slow_ns None with one state).
        separation: Ashman's D of the fitted mixture (None when not fitted).
        slow_share: share of the timed time spent in the slow state, 0–1.
        switches: changes of state seen.
        mean_state_ms: timed time ÷ runs of one state, ms.
        mean_slow_ms / mean_fast_ms: the same per state, ms (None when never in it).
        lag1_autocorrelation: of the log timings, winsorized at the 1st/99th percentiles
            (None when no timing varies).
        single_spread: relative SD of single timings: the states' part and the robust
            within-state part (module docstring, step 5).
        adjacent_spread: robust relative SD of the ratio of two adjacent timings
            (1.4826·MAD of the log ratios).
    """

    timings: int
    dropped: int
    median_ns: float
    states: int
    threshold_ns: float | None
    fast_ns: float
    slow_ns: float | None
    separation: float | None
    slow_share: float
    switches: int
    mean_state_ms: float
    mean_slow_ms: float | None
    mean_fast_ms: float | None
    lag1_autocorrelation: float | None
    single_spread: float
    adjacent_spread: float


@dataclass
class PairFigures:
    """Two CPUs timing the loop at the same moments.

    Attributes:
        cpus: the two CPUs the processes were pinned to.
        pairs: simultaneous timing pairs.
        same_state_share: share of pairs where both CPUs were in the same state.
        chance_same_share: what independent states would give (from each CPU's slow share).
        kappa: Cohen's κ = (same − chance) / (1 − chance): agreement beyond chance, 0
            (none) to 1 (always the same state); None when chance is 1.
        side_by_side_spread: robust relative SD of the ratio of simultaneous timings.
        each: each CPU's own figures.
    """

    cpus: list[int]
    pairs: int
    same_state_share: float
    chance_same_share: float
    kappa: float | None
    side_by_side_spread: float
    each: list[StateFigures] = field(default_factory=list)


@dataclass
class SpeedStates:
    """What ``perflab doctor``'s speed-state probe found.

    Attributes:
        loops: iterations of the reference loop per timing.
        loop_ns: median timing alone, ns (≈ 50 µs by calibration).
        duration_s: length of each series, s.
        alone: one process timing the loop back to back.
        two_cpus: two processes on two CPUs at once (None: not measured, see the note).
        two_cpus_note: why the two-CPU figures are missing ("" when present).
        advice: what the figures mean for measuring here, in plain words.
    """

    loops: int
    loop_ns: float
    duration_s: float
    alone: StateFigures
    two_cpus: PairFigures | None
    two_cpus_note: str
    advice: str

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SpeedStates:
        """The inverse of ``dataclasses.asdict``. Raises KeyError/TypeError when malformed."""
        two = d.get("two_cpus")
        pair = None
        if two is not None:
            pair = PairFigures(**{**two, "each": [StateFigures(**e) for e in two["each"]]})
        return cls(**{**d, "alone": StateFigures(**d["alone"]), "two_cpus": pair})


@dataclass
class Check:
    """One verdict.

    Attributes:
        name: a short id ("clock_steps", "rate_vs_tsc", …).
        status: "ok", "warn", "fail", or "n/a" (the machine doesn't expose it).
        detail: one sentence of evidence.
        action: one sentence of what to do ("" when nothing needs doing).
    """

    name: str
    status: str
    detail: str
    action: str = ""


@dataclass
class DoctorReport:
    """Everything doctor measured, and its verdicts.

    Attributes:
        created: ISO-8601 UTC start time.
        duration_s: requested probe length, s.
        elapsed_s: how long the whole doctor run took, s.
        clocksource: current / available clocksources, TSC flags, TSC rate, hypervisor.
        clocks: per clock figures, by name.
        cross_checks: the probe's cross-checks.
        timer_slack_ns: this thread's timer slack, ns.
        sleep: one entry per requested sleep length.
        cpu: CPU settings and load.
        checks: the verdicts.
        speed_states: the machine's speed states (None: not measured, see the note).
        speed_states_note: why they are missing ("" when measured).
    """

    created: str
    duration_s: float
    elapsed_s: float
    clocksource: dict[str, Any]
    clocks: dict[str, ClockFigures]
    cross_checks: CrossChecks
    timer_slack_ns: int | None
    sleep: list[SleepFigures]
    cpu: CpuLoad
    checks: list[Check] = field(default_factory=list)
    speed_states: SpeedStates | None = None
    speed_states_note: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON form: top-level clocksource, clocks, cross_checks, sleep, cpu, checks,
        speed_states (null when not measured) and speed_states_note."""
        return asdict(self)

    def document(
        self, command_line: Sequence[str], perflab_version: str, environment: dict[str, Any]
    ) -> dict[str, Any]:
        """The ``--json`` document: a header (tool, kind, :data:`SCHEMA_VERSION`, the
        perflab version and ``command_line``), :meth:`to_dict`'s sections at top level, and
        the machine's ``environment`` fingerprint (:mod:`perflab.environment`)."""
        return {
            "tool": "perflab",
            "kind": SCHEMA,
            "doctor_schema_version": SCHEMA_VERSION,
            "perflab_version": perflab_version,
            "command_line": list(command_line),
            **self.to_dict(),
            "environment": environment,
        }

    @classmethod
    def from_dict(cls, document: dict[str, Any]) -> DoctorReport:
        """The report of a ``perflab doctor --json`` document (checked against its schema
        first: ``perflab.schema.validate(document, "doctor")``). Extra keys (tool, kind,
        environment, …) are ignored; documents from before the speed states have none.
        Raises KeyError/TypeError on a malformed document."""
        cross = dict(document["cross_checks"])
        cross["steps"] = [Step(**s) for s in cross["steps"]]
        return cls(
            document["created"],
            document["duration_s"],
            document["elapsed_s"],
            document["clocksource"],
            {k: ClockFigures(**v) for k, v in document["clocks"].items()},
            CrossChecks(**cross),
            document["timer_slack_ns"],
            [SleepFigures(**s) for s in document["sleep"]],
            CpuLoad(**document["cpu"]),
            [Check(**c) for c in document["checks"]],
            SpeedStates.from_dict(states) if (states := document.get("speed_states")) else None,
            document.get("speed_states_note", ""),
        )

    @property
    def failed(self) -> bool:
        """True when any check failed."""
        return any(c.status == "fail" for c in self.checks)
