"""Tables of ``perflab history``: the list of recorded runs and a benchmark's trend.

Render only: the runs and trends come from :mod:`perflab.history`; escaping of
names is done by :mod:`perflab.report.console` for each output.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from perflab.model.history import RunInfo, Trend
from perflab.report.compare_table import format_p
from perflab.report.table import Table
from perflab.units import format_rate, format_time

#: Longest command line shown in the run list, characters.
COMMAND_CHARS = 60


def _commit(run: RunInfo) -> str:
    if not run.git_commit:
        return "–"
    return run.git_commit[:8] + ("+" if run.git_dirty else "")


def _command(run: RunInfo) -> str:
    text = " ".join(
        run.command_line[1:] if run.command_line[:1] == ["perflab"] else run.command_line
    )
    return text if len(text) <= COMMAND_CHARS else text[: COMMAND_CHARS - 1] + "…"


def runs_table(runs: Sequence[RunInfo], total: int, path: Any) -> Table:
    """The run list, newest first.

    Columns: run id, kind, start time (UTC), commit (``+``: uncommitted changes),
    branch, fingerprint hash (first 8 digits), benchmarks, tags, command.
    """
    table = Table(
        title=f"history {path}: {len(runs)} of {total} runs, newest first",
        columns=[
            "run",
            "kind",
            "started (UTC)",
            "commit",
            "branch",
            "fingerprint",
            "benchmarks",
            "tags",
            "command",
        ],
        align=["r", "l", "l", "l", "l", "l", "r", "l", "l"],
    )
    for run in runs:
        table.rows.append(
            [
                f"#{run.id}",
                run.kind,
                run.created.replace("+00:00", "Z"),
                _commit(run),
                run.git_branch or "–",
                run.fingerprint[:8],
                str(run.benchmarks),
                ", ".join(run.tags) or "–",
                _command(run),
            ]
        )
    table.footnotes.append(
        "commit+ : the working tree had uncommitted changes; fingerprint: "
        "hash of machine, CPU, kernel, Python and perflab version (runs "
        "with equal hashes are comparable)"
    )
    return table


def format_value(value: float, unit: str) -> str:
    """A trend value in its unit: times as times, rates as rates, counts (Ir) as counts,
    "–" for NaN."""
    if not math.isfinite(value):
        return "–"
    if unit == "Ir":  # --count instructions: a count per op
        from perflab.report.count_table import format_count

        return format_count(value)
    return format_rate(value) if unit == "1/s" else format_time(value)


def trend_table(trend: Trend, limit: int | None = None) -> Table:
    """One benchmark's trend, oldest first (commit order), the last ``limit`` runs.

    Columns: run, commit, started, the median (or percentile / rate) with its 95% CI,
    the change from the previous run, and marks: ``fingerprint changed`` and
    ``change point`` (with the step's size).
    """
    what = {
        "time": "median time per op",
        "p50": "p50 latency",
        "p99": "p99 latency",
        "rate": "achieved rate",
    }.get(trend.metric, trend.metric)
    shown = trend.points[-limit:] if limit else trend.points
    first = len(trend.points) - len(shown)
    table = Table(
        title=f"{trend.bench}: {what}, {len(trend.points)} runs in commit order",
        columns=["run", "commit", "started (UTC)", what, "95% CI", "vs previous", "marks"],
        align=["r", "l", "l", "r", "l", "r", "l"],
    )
    steps = {c.index: c for c in trend.changes}
    moved = set(trend.fingerprint_changes)
    left = {x.index: x.reason for x in trend.left_out}
    previous = trend.points[first - 1].row.value if first > 0 else math.nan
    for i, point in enumerate(shown, start=first):
        row, run = point.row, point.run
        ci = (
            f"{format_value(row.ci_low, row.unit)} – {format_value(row.ci_high, row.unit)}"
            if math.isfinite(row.ci_low) and math.isfinite(row.ci_high)
            else "–"
        )
        change = (
            f"{row.value / previous - 1:+.1%}"
            if math.isfinite(previous) and math.isfinite(row.value) and previous > 0
            else "–"
        )
        marks = []
        if row.failed:
            marks.append("failed")
        if i in moved:
            marks.append("fingerprint changed")
        if i in steps:
            marks.append(f"change point {steps[i].point.ratio - 1:+.1%}")
        if i in left:
            marks.append(f"left out: {_short(left[i])}")
        table.rows.append(
            [
                f"#{run.id}",
                _commit(run),
                run.created.replace("+00:00", "Z"),
                format_value(row.value, row.unit),
                ci,
                change,
                ", ".join(marks),
            ]
        )
        if math.isfinite(row.value):
            previous = row.value
    if first:
        table.footnotes.append(
            f"the {first} older runs are not shown (--limit); change points use them all"
        )
    for change in trend.changes:
        c = change.point
        table.footnotes.append(
            f"change point in {change.commit_range} (runs #{change.last_before.run.id} → "
            f"#{change.first_after.run.id}): {format_value(c.before, trend.unit)} → "
            f"{format_value(c.after, trend.unit)} ({c.ratio - 1:+.1%}, Welch p = {format_p(c.p_value)})"
        )
    if trend.newest is not None:
        table.footnotes.append(trend.newest.words("slower" if trend.unit == "s" else "higher"))
    if trend.note:
        table.footnotes.append(f"no change point can be found yet: {trend.note}")
    elif not trend.changes:
        table.footnotes.append("no change point (PELT on log values; see docs/history.md)")
    for x in trend.left_out:
        if trend.newest is None or x.index != trend.newest.index:
            table.footnotes.append(f"run #{trend.points[x.index].run.id} left out: {x.reason}")
    if trend.left_out:
        table.footnotes.append(
            "left out: kept in the table but not in the change-point search (an isolated "
            "outlier, the newest run far from the trend, or a run --exclude-dirty / "
            "--exclude-tag names)"
        )
    return table


def _short(reason: str) -> str:
    """The mark of a left-out run: its reason's first words ("newest run", "outlier",
    "dirty working tree", "tagged busy"); the footnotes give the rest."""
    return reason.split(":")[0].split(",")[0].split(" (")[0]


def trend_records(trends: Sequence[Trend]) -> list[dict[str, Any]]:
    """CSV records of trends: one per point, values in base units (s or 1/s)."""
    out = []
    for trend in trends:
        steps = {c.index for c in trend.changes}
        left = {x.index: x.reason for x in trend.left_out}
        for i, point in enumerate(trend.points):
            run, row = point.run, point.row
            out.append(
                {
                    "benchmark": trend.bench,
                    "metric": trend.metric,
                    "unit": row.unit,
                    "run": run.id,
                    "commit": run.git_commit or "",
                    "dirty": run.git_dirty,
                    "started": run.created,
                    "fingerprint": run.fingerprint,
                    "value": row.value,
                    "ci_low": row.ci_low,
                    "ci_high": row.ci_high,
                    "failed": row.failed,
                    "change_point": i in steps,
                    "left_out": left.get(i, ""),
                }
            )
    return out


def run_records(runs: Sequence[RunInfo]) -> list[dict[str, Any]]:
    """CSV records of the run list."""
    return [
        {
            "run": r.id,
            "kind": r.kind,
            "started": r.created,
            "commit": r.git_commit or "",
            "branch": r.git_branch or "",
            "dirty": r.git_dirty,
            "fingerprint": r.fingerprint,
            "benchmarks": r.benchmarks,
            "tags": " ".join(r.tags),
            "command": " ".join(r.command_line),
            "results_path": r.results_path or "",
        }
        for r in runs
    ]
