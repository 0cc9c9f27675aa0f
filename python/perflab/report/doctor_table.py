"""Tables of a ``perflab doctor`` report: clock source, clocks, cross-checks, sleeps,
CPU and load, verdicts.

Each function turns part of a :class:`perflab.model.doctor.DoctorReport` into the
neutral :class:`perflab.report.table.Table` that the console and Markdown writers
render, so every format shows the same cells.
"""

from __future__ import annotations

from typing import Any

from perflab.model.doctor import DoctorReport, Step
from perflab.report.table import KEY, NOTE, Table
from perflab.units import format_time, significant

_STATUS = {"ok": "ok", "warn": "WARN", "fail": "FAIL", "n/a": "n/a"}


def _t(ns: float | None) -> str:
    return format_time(ns * 1e-9) if ns is not None else "–"


def _na(value: Any) -> str:
    if value is None:
        return "not available"
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value) if value != "" else "none"


def _rate(rate: float | None) -> str:
    """A clock rate against the TSC: ppm near 1, a factor when far off."""
    if rate is None:
        return "–"
    if abs(rate - 1) > 0.01:
        return f"{rate:.3f}×"
    return f"{(rate - 1) * 1e6:+,.1f} ppm"


def _kv(title: str, rows: list[tuple[str, str]], footnotes: list[str] | None = None) -> Table:
    return Table(
        title,
        ["item", "value"],
        [list(r) for r in rows],
        ["l", "l"],
        footnotes or [],
        fold=[KEY, NOTE],
    )


def source_table(r: DoctorReport) -> Table:
    """Clock source, TSC, hypervisor, NTP state and timer slack."""
    src, ntp = r.clocksource, r.cross_checks.ntp
    flags = src.get("tsc_flags") or {}
    tsc = (
        "not available"
        if not src.get("has_tsc")
        else (
            (f"{src['tsc_ghz']:.4f} GHz; " if src.get("tsc_ghz") else "")
            + (" ".join(f if on else f"no-{f}" for f, on in flags.items()) or "flags not available")
        )
    )
    ntp_text = (
        "not available"
        if ntp is None
        else (
            f"{'synchronised' if ntp['synchronised'] else 'not synchronised'} (state {ntp['state']}), "
            f"frequency {ntp['freq_ppm']:+.3f} ppm, offset {_t(ntp['offset_ns'])}, "
            f"estimated error {_t(ntp['esterror_us'] * 1e3)}"
        )
    )
    return _kv(
        "clock source",
        [
            (
                "clocksource",
                f"{_na(src.get('current'))} "
                f"(available: {' '.join(src.get('available') or []) or 'not available'})",
            ),
            ("TSC", tsc),
            ("hypervisor", _na(src.get("virtualization"))),
            ("NTP (adjtimex)", ntp_text),
            ("timer slack", _t(r.timer_slack_ns)),
        ],
    )


def clocks_table(r: DoctorReport) -> Table:
    """One row per clock: read cost (native, Python), resolution, backward steps, rate."""
    table = Table(
        "clocks",
        [
            "clock",
            "native read",
            "Python read",
            "resolution",
            "backward steps",
            f"rate vs {r.cross_checks.reference.upper()}",
        ],
        align=["l", "r", "r", "r", "r", "r"],
        fold=[KEY, KEY, 3, 2, 1, KEY],
    )
    for name, c in r.clocks.items():
        if not c.available:
            table.rows.append([name.upper(), "not available", "–", "–", "–", "–"])
            continue
        table.rows.append(
            [
                name.upper(),
                _t(c.read_cost_ns),
                _t(c.python_read_cost_ns),
                _t(c.resolution_ns),
                "–" if c.backward_steps is None else f"{c.backward_steps:,}",
                _rate(r.cross_checks.rates.get(name)),
            ]
        )
    table.footnotes = [
        "Python read: time.clock_gettime_ns(); for the TSC, perflab._core."
        "clock_read (there is no Python API for rdtsc)",
        "resolution: the smallest non-zero step seen between consecutive reads",
    ]
    return table


def _step_row(step: Step) -> tuple[str, str]:
    sizes = ", ".join(f"{c.upper()} {s / 1e9:+.3f} s" for c, s in step.sizes_ns.items())
    return (
        "clock step",
        f"{step.at} ({step.offset_s:.2f} s into the probe): {sizes} "
        f"against the {step.against.upper()}",
    )


def cross_table(r: DoctorReport) -> Table:
    """What the tight-loop probe saw: steps, slewing, suspend, rates, the longest gap."""
    x = r.cross_checks
    rows = [_step_row(s) for s in x.steps[:10]] or [("clock steps", "none")]
    if len(x.steps) > 10:
        rows.append(("clock steps", f"{len(x.steps) - 10} more (see --json)"))
    worst = max(x.rates.values(), key=lambda v: abs(v - 1)) if x.rates else None
    rows += [
        ("slewing (MONOTONIC vs RAW)", "–" if x.slew_ppm is None else f"{x.slew_ppm:+,.2f} ppm"),
        (
            "suspend (BOOTTIME − MONOTONIC)",
            f"{_t(x.suspend_ns)} during the probe, "
            f"{format_time(x.suspended_since_boot_s)} since boot",
        ),
        (f"OS clocks vs {x.reference.upper()}", "–" if x.reference != "tsc" else _rate(worst)),
        (
            "longest gap between reads",
            f"{_t(x.longest_gap_ns)} at {x.longest_gap_at} "
            f"({x.longest_gap_offset_s:.2f} s into the probe)",
        ),
        ("torn reads discarded", f"{x.torn_reads:,} of {x.reads:,}"),
    ]
    return _kv(
        f"cross-checks over the probe ({x.duration_s:.1f} s, {x.reads:,} reads, "
        f"against the {x.reference.upper()})",
        rows,
    )


def sleep_table(r: DoctorReport) -> Table:
    """Actual durations of requested sleeps."""
    table = Table(
        "sleep accuracy",
        ["requested", "sleeps", "p50", "p99", "max overshoot"],
        align=["r"] * 5,
        fold=[KEY, 1, KEY, KEY, 2],
    )
    for s in r.sleep:
        table.rows.append(
            [_t(s.request_ns), f"{s.count:,}", _t(s.p50_ns), _t(s.p99_ns), _t(s.max_overshoot_ns)]
        )
    table.footnotes = [
        f"clock_nanosleep(CLOCK_MONOTONIC), relative; timer slack {_t(r.timer_slack_ns)}"
    ]
    return table


def cpu_table(r: DoctorReport) -> Table:
    """CPU settings, and how busy the machine was during the probe."""
    c = r.cpu
    psi = c.memory_pressure
    loads = " ".join(f"{v:.2f}" for v in c.load_average) if c.load_average else "not available"
    steal = (
        "not available"
        if c.steal_fraction is None
        else f"{_t(c.steal_ns)} ({c.steal_fraction:.2%} of CPU time)"
    )
    switches = (
        f"this process: {c.involuntary_switches:,} involuntary, "
        f"{c.voluntary_switches:,} voluntary; machine: "
        + ("not available" if c.context_switches is None else f"{c.context_switches:,}")
    )
    return _kv(
        "CPU and load",
        [
            ("CPUs", f"{_na(c.cpu_count)} ({_na(c.usable_cpus)} usable)"),
            ("governor", _na(c.governor)),
            ("boost / turbo", _na(c.boost)),
            ("SMT", _na(c.smt)),
            ("isolated CPUs", _na(c.isolated_cpus)),
            ("load average (1, 5, 15 min)", loads),
            (
                "memory pressure",
                "not available"
                if not psi
                else ", ".join(f"{k.replace('_avg10', '')} {v:.1f}%" for k, v in psi.items())
                + " of the last 10 s",
            ),
            ("steal during the probe", steal),
            ("context switches during the probe", switches),
        ],
    )


def _pct(share: float | None) -> str:
    """A spread or share in percent: one decimal below 10% ("0.6%"), none above."""
    if share is None or share != share:
        return "–"
    return f"{share:.1%}" if share < 0.1 else f"{share:.0%}"


def _fixed(value: float | None) -> str:
    """A figure to two decimals; "–" for a missing one (NaN is written null in JSON)."""
    return "–" if value is None or value != value else f"{value:.2f}"


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{significant(value, 2)} ms"


def speed_table(r: DoctorReport) -> Table:
    """The machine's speed states: alone, on two CPUs at once, and what they mean."""
    s = r.speed_states
    if s is None:
        why = r.speed_states_note or "a report from before perflab doctor measured them"
        return _kv("speed states", [("speed states", f"not measured: {why}")])
    a, two = s.alone, s.two_cpus
    states = (
        "one"
        if a.states == 1
        else f"two: fast {_t(a.fast_ns)}, slow {_t(a.slow_ns)} ({a.slow_ns / a.fast_ns:.2f}×; "
        f"threshold {_t(a.threshold_ns)}, separation D {a.separation:.1f})"
    )
    length = (
        "– (one state)"
        if a.states == 1
        else f"{_ms(a.mean_state_ms)} (slow {_ms(a.mean_slow_ms)}, fast {_ms(a.mean_fast_ms)}; "
        f"{a.switches:,} switches)"
    )
    rows = [
        (
            "loop",
            f"{_t(s.loop_ns)} per timing ({s.loops:,} iterations), {significant(s.duration_s, 2)} s per "
            f"series; {a.timings:,} timings alone ({a.dropped:,} that waited for a core left out)",
        ),
        ("states", states),
        ("slow share", f"{a.slow_share:.0%} of the time"),
        ("mean state length", length),
        ("lag-1 autocorrelation", _fixed(a.lag1_autocorrelation)),
        ("single timings spread", _pct(a.single_spread)),
        ("adjacent pairs spread", _pct(a.adjacent_spread)),
    ]
    if two is None:
        rows.append(("two CPUs", f"not measured: {s.two_cpus_note}"))
    else:
        rows += [
            (
                "two CPUs: same state",
                f"{two.same_state_share:.0%} of {two.pairs:,} simultaneous timings on CPUs "
                f"{two.cpus[0]} and {two.cpus[1]} (chance {two.chance_same_share:.0%}, "
                f"κ {_fixed(two.kappa)}); slow share {two.each[0].slow_share:.0%} and "
                f"{two.each[1].slow_share:.0%}",
            ),
            ("two CPUs: side-by-side spread", _pct(two.side_by_side_spread)),
        ]
    rows.append(("what this means", s.advice))
    return _kv("speed states (a fixed loop timed back to back)", rows)


def verdicts_table(r: DoctorReport) -> Table:
    """The checks: status, name, evidence and what to do."""
    table = Table(
        "verdicts",
        ["status", "check", "evidence", "what to do"],
        [[_STATUS[c.status], c.name, c.detail, c.action] for c in r.checks],
        ["l", "l", "l", "l"],
        fold=[KEY, KEY, NOTE, NOTE],
    )
    counts = {s: sum(c.status == s for c in r.checks) for s in _STATUS}
    table.footnotes = [
        ", ".join(f"{n} {s}" for s, n in counts.items())
        + f"; doctor took {r.elapsed_s:.1f} s; exit code 1 when a check fails"
    ]
    return table


def doctor_tables(r: DoctorReport) -> list[Table]:
    """Every table of the report, in reading order."""
    return [
        source_table(r),
        clocks_table(r),
        cross_table(r),
        sleep_table(r),
        cpu_table(r),
        speed_table(r),
        verdicts_table(r),
    ]


def check_records(r: DoctorReport) -> list[dict[str, object]]:
    """The checks as flat records (for CSV)."""
    return [
        {"name": c.name, "status": c.status, "detail": c.detail, "action": c.action}
        for c in r.checks
    ]
