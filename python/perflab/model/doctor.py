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

    def to_dict(self) -> dict[str, Any]:
        """JSON form: top-level clocksource, clocks, cross_checks, sleep, cpu, checks."""
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
        environment, …) are ignored. Raises KeyError/TypeError on a malformed document."""
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
        )

    @property
    def failed(self) -> bool:
        """True when any check failed."""
        return any(c.status == "fail" for c in self.checks)
