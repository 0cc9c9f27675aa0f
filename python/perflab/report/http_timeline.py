"""The timeline tables of ``perflab http``: per interval of each step offered, achieved,
errors, latency percentiles and send lag; the capacity read off a ramp; and the
status-code distribution of every step (as oha prints it)."""

from __future__ import annotations

from perflab.analyze.http import StepSummary, Sweep
from perflab.analyze.http_timeline import SUSTAIN, RampCapacity
from perflab.model import HttpStep, Results
from perflab.report.table import KEY, Table
from perflab.units import format_time

#: Most timeline rows printed per step; a longer timeline shows every k-th interval.
MAX_ROWS = 30

TIMELINE_COLUMNS = [
    "t",
    "offered",
    "achieved",
    "errors/s",
    "p50",
    "p99",
    "p99.9",
    "send lag p99",
]


def _us(value: float | None) -> str:
    return "—" if value is None else format_time(value / 1e6)


def timeline_table(step: HttpStep, summary: StepSummary) -> Table | None:
    """One step's timeline as a table (None when the step has none): a row per interval,
    or every k-th interval of a long one (said in a footnote)."""
    tl = step.timeline
    if tl is None or not len(tl):
        return None
    stride = -(-len(tl) // MAX_ROWS)
    achieved = tl.achieved_rate()
    table = Table(
        f"timeline of {summary.label} (every {tl.interval_s * stride:g} s)",
        list(TIMELINE_COLUMNS),
        align=["r"] * len(TIMELINE_COLUMNS),
        fold=[KEY, KEY, KEY, 2, 3, KEY, 1, 2],
    )
    for j in range(0, len(tl), stride):
        offered = tl.offered_rate[j]
        table.rows.append(
            [
                f"{tl.t_s[j]:g} s" + (" (warmup)" if tl.t_s[j] < step.warmup_s - 1e-9 else ""),
                "—" if offered is None else f"{offered:,.0f}/s",
                f"{achieved[j]:,.0f}/s",
                f"{tl.errors[j] / tl.interval_s:,.0f}",
                _us(tl.p50_us[j]),
                _us(tl.p99_us[j]),
                _us(tl.p999_us[j]),
                _us(tl.send_lag_p99_us[j]),
            ]
        )
    table.footnotes.append(
        "offered = the load shape's mean rate over the interval; achieved = OK responses "
        "completed in it ÷ its length; latency (from the intended send time) and send lag "
        "are of the requests intended in it"
        + (f"; every {stride}th interval shown, all are in the results file" if stride > 1 else "")
    )
    if summary.ramp is not None:
        table.footnotes.append(ramp_capacity_text(summary.ramp))
    return table


def ramp_capacity_text(cap: RampCapacity) -> str:
    """One line saying what the ramp's timeline says about capacity."""
    if cap.at_least:
        return (
            f"capacity from the ramp: at least {cap.estimate_rate:,.0f}/s (achieved tracked "
            "offered to the end)"
        )
    tracked = "" if cap.tracked_rate is None else f", last tracked {cap.tracked_rate:,.0f}/s"
    rise = (
        f"; p99 {_us(cap.p99_before_us)} before, {_us(cap.p99_after_us)} after"
        if cap.p99_before_us is not None and cap.p99_after_us is not None
        else ""
    )
    return (
        f"capacity from the ramp: {cap.estimate_rate:,.0f}/s, the median achieved rate of "
        f"the {SUSTAIN} intervals from the knee at {cap.knee_t_s:g} s on ({tracked.lstrip(', ')}"
        f"{'; ' if tracked else ''}median of all after it {cap.plateau_rate or 0:,.0f}/s{rise})"
    )


def timeline_tables(results: Results, sweep: Sweep) -> list[Table]:
    """The timeline table of each shaped step (of the one step of a one-step run: a
    sweep's timelines are in the chart and the HTML report, not one table per step);
    responses by status are :mod:`perflab.report.http_status`'s table."""
    steps = results.benchmarks[0].steps
    return [
        t
        for step, s in zip(steps, sweep.steps)
        if (step.shape or len(steps) == 1) and (t := timeline_table(step, s)) is not None
    ]
