"""The table of ``perflab cmd`` results: one row per command, then footnotes.

:func:`cmd_table` turns :class:`perflab.analyze.cmd.CommandSummary` objects into the
neutral :class:`perflab.report.table.Table` that the console, Markdown and CSV writers
render; :func:`summary_records` makes the CSV records.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from perflab.analyze.cmd import CMD_CAVEATS, CommandSummary, SpawnOverhead
from perflab.model import Results
from perflab.report.notes import CMD_CODES, legend
from perflab.report.run_table import caveat_lines
from perflab.report.table import KEY, NOTE, Table, estimate_cell
from perflab.units import format_bytes, format_ratio, format_time

#: hyperfine's -u and --sort mean-time (:func:`configure`)
_TIME_UNIT: tuple[str, float] | None = None
_SORT_BY_TIME = False


def configure(time_unit: tuple[str, float] | None = None, sort_by_time: bool = False) -> None:
    """This process's cmd tables: every time in ``time_unit`` ((name, seconds per unit),
    hyperfine's ``-u``; None: each in its own), rows sorted by median when
    ``sort_by_time`` (hyperfine's ``--sort mean-time``; else the commands' order)."""
    global _TIME_UNIT, _SORT_BY_TIME
    _TIME_UNIT, _SORT_BY_TIME = time_unit, sort_by_time


def _t(seconds: float) -> str:
    return format_time(seconds, _TIME_UNIT)


def _median_cell(s: CommandSummary) -> str:
    """``283 ms ± 2.1%``, or ``283 ms (161 ms–611 ms)`` for a lopsided CI, as run prints."""
    return estimate_cell(s.median_s, s.median.ci_low, s.median.ci_high, _t) if s.ok else "–"


def _real_cell(s: CommandSummary) -> str:
    return f"{_t(s.real_s)} ± {_t(s.std_s)}" if s.ok else "–"


_CODES = {"budget": "B", "max-runs": "R", "interrupted": "I"}


def _notes(s: CommandSummary) -> str:
    """Short codes (:data:`perflab.report.notes.CMD_CODES`, one legend under the table)."""
    if s.stop_reason == "failed":
        return "FAILED"
    codes = [_CODES[s.stop_reason]] if s.stop_reason in _CODES else []
    codes += ["U"] if any(c.kind == "unstable" for c in s.warnings) else []
    codes += ["O"] if s.outliers else []
    codes += ["S"] if any(c.kind == "near the spawn cost" for c in s.warnings) else []
    return " ".join(codes)


COLUMNS = [
    "command",
    "runs",
    "median ± CI",
    "user",
    "system",
    "total",
    "real (mean ± σ)",
    "CPU/wall",
    "max RSS",
    "× fastest",
    "verdict",
    "notes",
]


def cmd_table(
    summaries: Sequence[CommandSummary],
    overhead: SpawnOverhead | None = None,
    settings: dict[str, Any] | None = None,
    rss_floor_bytes: int | None = None,
    verbose: bool = False,
) -> Table:
    """The table of ``perflab cmd``: one row per command, then footnotes.

    Columns: command, runs (+ failed), median ± CI, user, system, total, real
    (mean ± σ), CPU/wall, max RSS, × fastest (or × reference) with its CI, the verdict
    against it (as ``perflab compare`` decides, at the run's --threshold), notes.
    A max RSS within 5% of ``rss_floor_bytes`` (what an empty process reads)
    is shown as "≤ floor": the true value is somewhere below. On a narrow terminal
    the columns fold away in this order: CPU/wall, system, user, real, total, max RSS,
    runs; × fastest (the ratio the verdict reads) always shows. ``overhead``: the run's spawn overhead, named in a footnote
    (:func:`perflab.analyze.cmd.spawn_overhead`). Caveats are grouped by kind, one line
    each naming the commands with the advice once, or one line per command and caveat
    with ``verbose`` (as ``run``'s, :func:`perflab.report.run_table.caveat_lines`).
    """
    settings = settings or {}
    if _SORT_BY_TIME:
        summaries = sorted(summaries, key=lambda s: s.median_s if s.ok else math.inf)
    columns = list(COLUMNS)
    if settings.get("reference") is not None:
        columns[9] = "× reference"
    table = Table(
        _title(settings),
        columns,
        align=["l"] + ["r"] * 9 + ["l", "l"],
        fold=[KEY, 7, KEY, 3, 2, 5, 4, 1, 6, KEY, KEY, NOTE],
    )
    for s in summaries:
        table.rows.append(_row(s, rss_floor_bytes))
    table.footnotes = _footnotes(summaries, overhead, settings, verbose)
    used = sorted({c for row in table.rows for c in row[-1].split() if c in CMD_CODES})
    if used:
        table.footnotes.append(legend(used, CMD_CODES, verbose))
    if rss_floor_bytes:
        table.footnotes.append(
            f"max RSS can't read below {format_bytes(rss_floor_bytes)}: "
            "the kernel counts the spawning helper's memory until exec"
        )
    if any(math.isfinite(s.tree_rss_peak_bytes) for s in summaries):
        _add_memory_columns(table, summaries)
    return table


#: columns added after "max RSS" by --memory
MEMORY_COLUMNS = ["RSS peak (tree)", "RSS growth"]


def _add_memory_columns(table: Table, summaries: Sequence[CommandSummary]) -> None:
    """``--memory``: the summed RSS of each command's process tree, at its peak and its
    growth over a run (medians over runs), after "max RSS"; they fold away first."""
    at = table.columns.index("max RSS") + 1
    table.columns[at:at] = MEMORY_COLUMNS
    table.align[at:at] = ["r", "r"]
    table.fold[at:at] = [1, 1]
    for row, s in zip(table.rows, summaries):
        growth = s.tree_rss_growth_bytes
        row[at:at] = [
            format_bytes(s.tree_rss_peak_bytes) if math.isfinite(growth) else "–",
            ("+" if growth > 0 else "") + format_bytes(growth) if math.isfinite(growth) else "–",
        ]
    table.footnotes.append(
        "--memory: RSS peak (tree) = the highest summed resident memory of the command and "
        "every process it started, read from /proc by the spawning helper at each interval "
        "(shared pages count once per process, as psrecord --include-children), and never "
        "below max RSS when that is over twice the empty process's; RSS growth "
        "= its last reading − its first; medians over runs. max RSS is the kernel's peak of "
        "the largest single process (wait4, as /usr/bin/time -v)"
    )


def _title(settings: dict[str, Any]) -> str:
    if settings.get("interleave", True):
        return "commands (interleaved in randomized blocks)"
    return "commands (one after another, --no-interleave)"


def _ratio_cell(s: CommandSummary) -> str:
    if s.reference:
        return format_ratio(1.0)
    return format_ratio(s.ratio.value, s.ratio.ci_low, s.ratio.ci_high) if s.ratio else "–"


def _rss_cell(s: CommandSummary, floor: int | None) -> str:
    if not s.ok:
        return "–"
    if floor and s.max_rss_bytes <= floor * 1.05:
        return f"≤ {format_bytes(floor)}"
    return format_bytes(s.max_rss_bytes)


def _row(s: CommandSummary, rss_floor_bytes: int | None = None) -> list[str]:
    runs = f"{s.runs}" + (f" +{s.failed} failed" if s.failed else "")
    cells = [s.label, runs, _median_cell(s)]
    cells += [_t(v) if s.ok and math.isfinite(v) else "–" for v in (s.user_s, s.sys_s, s.total_s)]
    cells += [
        _real_cell(s),
        f"{s.cpu_wall:.2f}" if math.isfinite(s.cpu_wall) else "–",
        _rss_cell(s, rss_floor_bytes),
        _ratio_cell(s),
        s.verdict or ("reference" if s.reference else "–"),
        _notes(s),
    ]
    return cells


def _footnotes(
    summaries: Sequence[CommandSummary],
    overhead: SpawnOverhead | None,
    settings: dict[str, Any],
    verbose: bool = False,
) -> list[str]:
    lines = [f"{s.label}: {s.error}" for s in summaries if s.error]
    lines += caveat_lines([(s.label, s.warnings) for s in summaries], verbose, CMD_CAVEATS)
    if overhead is not None:
        lines.append(spawn_overhead_line(overhead))
    ref = next((s for s in summaries if s.reference), None)
    if ref is not None:
        word = "the reference" if settings.get("reference") is not None else "the fastest"
        lines.append(
            f"× = median ÷ the median of {word} ({ref.label}), with its 95% CI; "
            "user/system/total/real are means per run; max RSS is the median peak"
        )
        threshold = settings.get("threshold", 0.02)
        lines.append(
            f"verdict: against {word}, from the CI of ×: faster or slower when it "
            f"lies wholly beyond ±{threshold:.1%}, same when wholly within, else "
            "inconclusive (--threshold; gate with --fail-on)"
        )
    return lines


def spawn_overhead_line(overhead: SpawnOverhead) -> str:
    """One line: median and 5th–95th percentile of the empty-process wall time."""
    return (
        f"spawn overhead (an empty process, {overhead.runs} runs): median "
        f"{format_time(overhead.p50_s)}, 5–95% {format_time(overhead.p5_s)}–"
        f"{format_time(overhead.p95_s)}; included in every time above, not subtracted"
    )


def summary_records(summaries: Sequence[CommandSummary]) -> list[dict[str, object]]:
    """Flat records for CSV: numbers in base units (s, B), one per command."""
    records = []
    for s in summaries:
        record = {k: v for k, v in s.to_dict().items() if k not in ("unit", "ratio", "warnings")}
        record["ratio"], record["ratio_low"], record["ratio_high"] = (
            (s.ratio.value, s.ratio.ci_low, s.ratio.ci_high) if s.ratio else ("", "", "")
        )
        record["error"] = s.error or ""
        records.append(record)
    return records


def print_cmd(
    results: Results,
    summaries: Sequence[CommandSummary],
    overhead: SpawnOverhead | None,
    fmt: str,
    verbose: bool = False,
) -> None:
    """Print a ``cmd`` run's table on stdout as a rich table, Markdown or CSV.

    Args:
        results: the results file (settings, RSS floor, interruption).
        summaries: its summaries (:func:`perflab.analyze.cmd.summarize_results`).
        overhead: its spawn overhead (:func:`perflab.analyze.cmd.spawn_overhead`).
        fmt: "table", "markdown" or "csv".
        verbose: every caveat of every command in full (default: grouped by kind).
    """
    from perflab.report import console

    console.emit(
        fmt,
        lambda: cmd_tables(results, summaries, overhead, verbose),
        lambda: summary_records(summaries),
    )


def cmd_tables(
    results: Results,
    summaries: Sequence[CommandSummary],
    overhead: SpawnOverhead | None,
    verbose: bool = False,
) -> list[Table]:
    """The tables of a ``cmd`` results file (one), with its interruption noted (arguments
    as :func:`print_cmd`)."""
    table = cmd_table(summaries, overhead, results.settings, results.rss_floor_bytes, verbose)
    if results.interrupted:
        table.footnotes.append(
            "interrupted (Ctrl-C or a stop signal: SIGTERM, SIGHUP): the "
            "runs finished before it are shown"
        )
    return [table]


def hyperfine_document(results: Results, summaries: Sequence[CommandSummary]) -> dict[str, Any]:
    """hyperfine's ``--export-json`` document of a ``cmd`` run (times in seconds).

    ``results``: one object per command with hyperfine's keys (command, mean, stddev,
    median, user, system, min, max, times, exit_codes, parameters), so scripts that read
    hyperfine's file read this one; ``"tool": "perflab"`` marks it as perflab's. Failed
    runs are left out of ``times`` and the statistics, as hyperfine leaves out none but
    fails instead: ``exit_codes`` holds one code per time, as hyperfine's does (a code
    other than 0 is a run kept by ``--ignore-failure``, hyperfine's ``-i``), and the
    failed runs' codes are kept apart in ``failed_exit_codes`` (perflab's key; null for
    a run killed by a signal or timed out). ``user`` and ``system`` are left out when
    unknown (read from a file without them), as hyperfine's keys hold numbers only.
    """
    from perflab.analyze.cmd import timed_runs

    def number(value: float) -> float | None:
        return value if math.isfinite(value) else None

    out = []
    for bench, s in zip(results.benchmarks, summaries):
        runs = [r for r in bench.runs if not r.warmup]
        timed = timed_runs(bench)
        cpu = {"user": s.user_s, "system": s.sys_s} if math.isfinite(s.total_s) else {}
        out.append(
            {
                "command": s.label,
                "mean": number(s.mean_s),
                "stddev": number(s.std_s),
                "median": number(s.median_s),
                **cpu,
                "min": number(s.min_s),
                "max": number(s.max_s),
                "times": [r.wall_ns * 1e-9 for r in timed],
                "exit_codes": [r.exit_code for r in timed],
                "failed_exit_codes": [
                    r.exit_code if r.exit_code >= 0 and not r.timed_out else None
                    for r in runs
                    if not r.ok
                ],
                "parameters": {k: str(v) for k, v in bench.params.items()},
            }
        )
    return {"tool": "perflab", "results": out}


def hyperfine_json(results: Results, summaries: Sequence[CommandSummary]) -> str:
    """The text of ``--export-json``: :func:`hyperfine_document` as indented JSON."""
    import json

    return json.dumps(hyperfine_document(results, summaries), indent=2) + "\n"
