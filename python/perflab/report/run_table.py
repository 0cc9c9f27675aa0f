"""The run engine's tables: a group of benchmarks (time, CI, ratio to the baseline,
notes), staged and threads-mode tables, their footnotes and caveat lines, and the
summary records written to JSON; each a neutral :class:`perflab.report.table.Table`."""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from typing import Any

from perflab.analyze.run.groups import GroupFigures, StagedRow, ThreadRow
from perflab.analyze.run.summary import CAVEATS, Summary
from perflab.analyze.run.threads import LATENCY_BATCH_NS, MAX_BATCH
from perflab.model.estimate import Estimate
from perflab.report.notes import finish as finish_notes
from perflab.report.notes import row_codes
from perflab.report.table import KEY, NOTE, Table, estimate_cell
from perflab.units import (
    format_bytes,
    format_quantity,
    format_rate,
    format_ratio,
    format_reference,
    format_time,
)


def _ratio_cell(ratio: Estimate | None) -> str:
    return format_ratio(ratio.value, ratio.ci_low, ratio.ci_high) if ratio else "–"


def _time_ci(s: Summary) -> str:
    return estimate_cell(s.median_s, s.ci_low_s, s.ci_high_s) if s.ok else "–"


def _notes(s: Summary, baseline: bool = True) -> str:
    """Short notes, codes explained once (:mod:`perflab.report.notes`), plus "baseline"."""
    return " ".join(row_codes([s]) + (["baseline"] if s.baseline and baseline else []))


def _staged_notes(row: StagedRow) -> str:
    """The codes of every stage of a staged row, once each, plus "baseline" once."""
    stages = list(row.stages.values())
    return " ".join(row_codes(stages) + (["baseline"] if any(s.baseline for s in stages) else []))


def _metric_names(summaries: Sequence[Summary]) -> list[str]:
    return sorted({k for s in summaries for k in s.metrics})


def group_table(
    title: str,
    summaries: Sequence[Summary],
    threaded: bool = False,
    verbose: bool = False,
    threshold: float | None = None,
    in_process: Collection[str] = (),
) -> Table:
    """The per-group table of ``perflab run`` (one row per benchmark).

    Columns: benchmark, time/op ± CI, per 1,000 ops, ops/s, CPU/wall, × best,
    [× baseline, verdict (against the baseline, when the run judged them)], each
    metric and its × best, allocated/op and allocs/op (bytes and blocks a call
    allocates in all, freed or not; only when some benchmark was counted), peak/op (peak traced bytes during a call), kept
    blocks/op (memory blocks still held after a call), GC/1k ops, notes. In a
    group with thread counts (``threaded``) the ratios compare like with like (the
    same thread count) and their headers say so. Caveats are grouped by kind
    unless ``verbose``; ``threshold`` (of the verdicts) is named in their footnote.
    On a narrow terminal columns fold away in this order: per
    1,000 ops, GC/1k ops, kept blocks/op, peak/op, allocs/op, allocated/op, CPU/wall, each metric's × best,
    ops/s, each metric, × best; the ratio the verdict reads (× baseline, or × best
    without a baseline) and the verdict always show. ``in_process``: ids
    measured in the calling process (the pytest plugin's default mode), whose cold call is
    not a fresh process's.
    """
    metrics = _metric_names(summaries)
    has_baseline = any(s.ratio_baseline for s in summaries)
    judged = any(s.verdict for s in summaries)
    alike = " (same threads)" if threaded else ""
    hardware = any(s.instructions_per_op is not None for s in summaries)
    columns = ["benchmark", "time/op ± CI", "per 1,000 ops", "ops/s", "CPU/wall"]
    columns += ["instr/op", "IPC"] if hardware else []
    columns += [f"× best{alike}"]
    columns += [f"× baseline{alike}"] if has_baseline else []
    columns += ["verdict"] if judged else []
    for m in metrics:
        columns += [m, f"{m} × best"]
    totals = _counted(summaries)
    columns += ["allocated/op", "allocs/op"] if totals else []
    columns += ["peak/op", "kept blocks/op", "GC/1k ops", "notes"]
    align = ["l"] + ["r"] * (len(columns) - 2) + ["l"]
    if judged:
        align[columns.index("verdict")] = "l"
    table = Table(title, columns, align=align)
    table.fold = (
        [KEY, KEY, 1, 6, 4]
        + ([2, 2] if hardware else [])
        + ([8] if has_baseline else [KEY])
        + ([KEY] if has_baseline else [])
        + ([KEY] if judged else [])
        + [7, 5] * len(metrics)
        + ([3, 3] if totals else [])
        + [3, 2, 2, NOTE]
    )
    for s in summaries:
        table.rows.append(_group_row(s, metrics, has_baseline, judged, hardware, totals))
    table.footnotes = _footnotes(summaries, verbose, in_process) + _verdict_footnote(
        summaries, threshold
    )
    return table


def _verdict_footnote(summaries: Sequence[Summary], threshold: float | None) -> list[str]:
    """How the in-run verdicts were decided (only where the table shows them)."""
    bases = [s.label for s in summaries if s.baseline]
    if not bases or not any(s.verdict for s in summaries):
        return []
    limit = f"±{threshold:.1%}" if threshold is not None else "± the threshold"
    against = (
        f"the baseline ({bases[0]})"
        if len(bases) == 1
        else f"the baseline case with the same parameters ({', '.join(bases)})"
    )
    pairs = [s.baseline_pairs for s in summaries if s.baseline_pairs]
    how = (
        f"paired: each measured alternately with the baseline, sample by sample, in the "
        f"same worker processes ({min(pairs):,}–{max(pairs):,} pairs; docs/compare.md)"
        if pairs
        else "the ratio of the two medians, measured apart (not paired)"
    )
    return [
        f"verdict: against {against}, from the CI of × baseline: faster "
        f"or slower when it lies wholly beyond {limit}, same when wholly within, else "
        "inconclusive (--threshold; gate with --fail-on)",
        f"× baseline: {how}",
    ]


def _counted(summaries: Sequence[Summary]) -> bool:
    """Whether any benchmark's allocations were counted in all (allocated/op, allocs/op):
    not in files written before the count existed, nor without the native core."""
    return any(s.alloc_total_bytes is not None for s in summaries)


def _group_row(
    s: Summary,
    metrics: list[str],
    has_baseline: bool,
    judged: bool,
    hardware: bool = False,
    totals: bool = True,
) -> list[str]:
    row = [
        s.label,
        _time_ci(s),
        format_time(s.median_s * 1000) if s.ok else "–",
        format_rate(1 / s.median_s) if s.ok and s.median_s > 0 else "–",
        f"{s.cpu_wall:.2f}" if math.isfinite(s.cpu_wall) else "–",
    ]
    if hardware:
        row += [
            format_quantity(s.instructions_per_op, ""),
            f"{s.ipc:.2f}" if s.ipc is not None else "–",
        ]
    row += [_ratio_cell(s.ratio_best)]
    row += [_ratio_cell(s.ratio_baseline)] if has_baseline else []
    row += [s.verdict or ("baseline" if s.baseline else "–")] if judged else []
    for m in metrics:
        row += [
            format_quantity(s.metrics.get(m), s.metric_units.get(m, "")),
            format_ratio(s.metric_ratio_best[m]) if m in s.metric_ratio_best else "–",
        ]
    if totals:
        row += [format_bytes(s.alloc_total_bytes), _blocks_cell(s.alloc_total_blocks)]
    row += [
        format_bytes(s.alloc_peak_bytes),
        _blocks_cell(s.alloc_blocks),
        f"{s.gc_per_1000_ops:.2f}" if math.isfinite(s.gc_per_1000_ops) else "–",
        _notes(s, baseline=not judged),
    ]
    return row


def _blocks_cell(blocks: float | None) -> str:
    """Blocks per op: whole numbers plainly, fractions (``ops=`` batches) to 2 decimals."""
    if blocks is None or not math.isfinite(blocks):
        return "–"
    return f"{blocks:,.0f}" if blocks == int(blocks) else f"{blocks:,.2f}"


def _name(s: Summary) -> str:
    return f"{s.label} [{s.stage}]" if s.stage else s.label


def _footnotes(
    summaries: Sequence[Summary], verbose: bool = False, in_process: Collection[str] = ()
) -> list[str]:
    """Errors and what "op" means always; the per-benchmark lists (caveats with their
    figures, loop overhead, processes × samples, cold calls, the speed reference) only
    with ``verbose``: the notes' codes say which row has what."""
    lines = [f"{_name(s)}: {s.error}" for s in summaries if s.error]
    measured = [s for s in summaries if s.ok]
    if verbose:
        lines += caveat_lines([(_name(s), s.warnings) for s in summaries], verbose)
    if verbose and measured:
        lines.append(
            "loop overhead per op (included in time/op, not subtracted): "
            + ", ".join(f"{_name(s)} {format_time(s.loop_overhead_s)}" for s in measured)
        )
        lines += _count_lines(measured, in_process)
        lines += _cold_lines([s for s in measured if math.isfinite(s.cold_s)], in_process)
        lines += _reference_footnote(measured)
    lines += _ops_footnote(summaries)
    return lines


def _count_lines(summaries: Sequence[Summary], in_process: Collection[str]) -> list[str]:
    """Processes × samples of each benchmark; the pytest plugin's and the API's in-process
    repetitions (ids in ``in_process``) on a line of their own, named as what they are."""

    def counts(chosen: Sequence[Summary]) -> str:
        return ", ".join(
            f"{_name(s)} {s.processes}×{round(s.samples / max(s.processes, 1))} ({s.iterations:,})"
            for s in chosen
        )

    fresh = [s for s in summaries if s.id not in in_process]
    here = [s for s in summaries if s.id in in_process]
    lines = ["processes × samples each (calls per sample): " + counts(fresh)] if fresh else []
    if here:
        lines.append(
            "in-process repetitions × samples each (calls per sample; the "
            "repetitions share one process, so the CI leaves out between-process "
            "variation): " + counts(here)
        )
    return lines


def _cold_lines(summaries: Sequence[Summary], in_process: Collection[str]) -> list[str]:
    """The cold-call footnotes: a fresh worker's first call, or (in-process mode) the first
    call in the calling process, where imports and earlier tests had already run."""
    fresh = [s for s in summaries if s.id not in in_process]
    here = [s for s in summaries if s.id in in_process]
    lines = []
    if fresh:
        lines.append(
            "cold (first call in a fresh process): "
            + ", ".join(f"{_name(s)} {format_time(s.cold_s)}" for s in fresh)
        )
    if here:
        lines.append(
            "first call (in-process: the first call in this process, after its "
            "imports and the tests before it, so not a fresh process's cold call): "
            + ", ".join(f"{_name(s)} {format_time(s.cold_s)}" for s in here)
        )
    return lines


def caveat_lines(
    named: Sequence[tuple[str, Sequence[Any]]],
    verbose: bool = False,
    meanings: dict[str, tuple[str, str]] | None = None,
) -> list[str]:
    """Caveats as footnote lines: by default one line per kind, naming every affected
    benchmark with its figure, the meaning and the advice once; with ``verbose``
    one line per benchmark and caveat, in full.

    Args:
        named: (benchmark name, its caveats) pairs, in table order.
        meanings: kind → (meaning, advice), in the order the lines go; default
            :data:`perflab.analyze.run.summary.CAVEATS` (``run``'s).
    """
    known = CAVEATS if meanings is None else meanings
    if verbose:
        lines = []
        for name, caveats in named:
            for c in caveats:
                advice = known.get(c.kind, ("", ""))[1]
                text = c.text if c.kind in c.text else f"{c.kind}: {c.text}"
                lines.append(f"{name}: {text}" + (f"; {advice}" if advice else ""))
        return lines
    by_kind: dict[str, list[str]] = {}
    for name, caveats in named:
        for c in caveats:
            by_kind.setdefault(c.kind, []).append(f"{name} {c.figure}")
    lines = []
    for kind in sorted(by_kind, key=lambda k: list(known).index(k) if k in known else 99):
        meaning, advice = known.get(kind, ("", ""))
        line = f"{kind}" + (f" ({meaning})" if meaning else "") + ": " + ", ".join(by_kind[kind])
        lines.append(line + (f"; {advice}" if advice else ""))
    return lines


def _reference_footnote(summaries: Sequence[Summary]) -> list[str]:
    """The machine-speed reference (:mod:`perflab.analyze.reference`): its time, how much it
    swung between processes, and each benchmark's speed-normalized median (CPU time ÷ it)."""
    timed = [(s, s.cpu_vs_reference) for s in summaries if s.cpu_vs_reference is not None]
    if not timed:
        return []
    refs = [s.reference_s for s, _ in timed]
    spreads = [s.reference_spread for s, _ in timed if math.isfinite(s.reference_spread)]
    swing = f", differing by up to ±{max(spreads):.0%} between processes" if spreads else ""
    return [
        f"machine-speed reference (a fixed Python loop timed between samples): "
        f"{format_time(min(refs))}–{format_time(max(refs))}{swing}; CPU time ÷ "
        "reference, to compare runs on this machine and Python: "
        + ", ".join(
            f"{_name(s)} {estimate_cell(e.value, e.ci_low, e.ci_high, fmt=format_reference)}"
            for s, e in timed
        )
    ]


def _ops_footnote(summaries: Sequence[Summary]) -> list[str]:
    """What "op" means where a call performs several operations (``ops=``)."""
    batched = [s for s in summaries if s.ops_per_call != 1]
    if not batched:
        return []
    return [
        "per operation: "
        + ", ".join(f"{_name(s)} does {s.ops_per_call:,} per call" for s in batched)
        + "; times, rates, latencies, allocations and GC are a call's divided by that"
    ]


def staged_table(
    title: str,
    stage_names: list[str],
    rows: Sequence[StagedRow],
    metric_units: dict[str, str],
    verbose: bool = False,
    in_process: Collection[str] = (),
) -> Table:
    """The table of a staged group (e.g. Northwind serialization): one row per name.

    Columns: name, each metric and its × best, each stage's time/op ± CI,
    total ± CI, CPU/wall (of all stages), × best (of the total), allocated/op and
    allocs/op (all stages' allocations per op, summed; only when counted), notes. On a narrow
    terminal they fold away in this order: each metric's × best, CPU/wall, allocs/op,
    the stages (last first), allocated/op, each metric (× best always shows).
    """
    metrics = sorted({k for r in rows for k in r.metrics})
    columns = ["name"]
    for m in metrics:
        columns += [m, f"{m} × best"]
    columns += [f"{st} ± CI" for st in stage_names] + ["total ± CI", "CPU/wall", "× best"]
    totals = _counted([s for r in rows for s in r.stages.values()])
    columns += (["allocated/op", "allocs/op"] if totals else []) + ["notes"]
    table = Table(
        title,
        columns,
        align=["l"] + ["r"] * (len(columns) - 2) + ["l"],
        fold=[KEY]
        + [3, 1] * len(metrics)
        + [2] * len(stage_names)
        + [KEY, 1, KEY]
        + ([3, 1] if totals else [])
        + [NOTE],
    )
    for row in rows:
        cells = [row.name]
        for m in metrics:
            cells += [
                format_quantity(row.metrics.get(m), metric_units.get(m, "")),
                format_ratio(row.metric_ratio_best[m]) if m in row.metric_ratio_best else "–",
            ]
        cells += [_time_ci(row.stages[st]) if st in row.stages else "–" for st in stage_names]
        cpu = row.cpu_wall
        cells += [
            _total_cell(row.total),
            f"{cpu:.2f}" if math.isfinite(cpu) else "–",
            _ratio_cell(row.ratio_best),
        ]
        if totals:
            cells += [
                format_bytes(row.allocated("alloc_total_bytes")),
                _blocks_cell(row.allocated("alloc_total_blocks")),
            ]
        cells += [_staged_notes(row)]
        table.rows.append(cells)
    table.footnotes = _footnotes([s for r in rows for s in r.stages.values()], verbose, in_process)
    return table


def _total_cell(total: Estimate | None) -> str:
    return estimate_cell(total.value, total.ci_low, total.ci_high) if total else "–"


def run_tables(
    groups: Sequence[GroupFigures],
    verbose: bool = False,
    threshold: float | None = None,
    in_process: Collection[str] = (),
) -> list[Table]:
    """One table per group of a ``perflab run`` (:func:`perflab.analyze.run.groups.run_groups`):
    staged groups pivot by stage; a group with thread counts adds its threads table.
    ``threshold``: of the in-run verdicts, for their footnote; ``in_process``: ids measured
    in the calling process (see :func:`group_table`)."""
    tables = []
    for figures in groups:
        summaries = figures.summaries
        title = f"group {figures.group}" if figures.group else "benchmarks"
        if figures.staged is not None:
            units = {k: v for s in summaries for k, v in s.metric_units.items()}
            tables.append(
                staged_table(title, figures.stage_names, figures.staged, units, verbose, in_process)
            )
        else:
            tables.append(
                group_table(title, summaries, figures.threaded, verbose, threshold, in_process)
            )
        if figures.threads:
            tables.append(threads_table(f"{title}: threads", figures.threads, summaries))
    everyone = [s for f in groups for s in f.summaries]
    if tables and (note := _hardware_note(everyone)):
        tables[-1].footnotes.append(note)
    finish_notes(tables, [s.process_spread for s in everyone if s.ok], verbose)
    return tables


def _hardware_note(summaries: Sequence[Summary]) -> str | None:
    """The run's one line where per-sample counters had no hardware events (their
    columns are then absent, never zeros), or None."""
    notes = [s.hardware_note for s in summaries if s.hardware_note]
    if not notes or any(s.instructions_per_op is not None for s in summaries):
        return None
    return (
        f"hardware counters unavailable: {notes[0]}; no instr/op or IPC columns (software "
        "counters only: task clock, page faults, context switches)"
    )


def threads_table(title: str, rows: Sequence[ThreadRow], summaries: Sequence[Summary]) -> Table:
    """Threads mode (JMH @Threads style): one row per benchmark and thread count.

    Columns: benchmark, threads, ops/s ± CI (all threads together), ops/s per
    thread, × 1 thread (throughput over the same benchmark's 1-thread case),
    latency p50/p99/p99.9 (every call timed), fairness (min/max and Jain's
    index of ops per thread), CPU/wall. Figures are medians over processes. On a narrow
    terminal they fold away in this order: Jain, CPU/wall, min/max, p99.9, p50,
    ops/s per thread, p99, × 1 thread.

    Args:
        rows: the threads-mode benchmarks (:func:`perflab.analyze.run.groups.thread_rows`).
        summaries: the whole group's summaries (for the loop-cost footnote).
    """
    columns = [
        "benchmark",
        "threads",
        "ops/s ± CI",
        "ops/s per thread",
        "× 1 thread",
        "p50",
        "p99",
        "p99.9",
        "min/max",
        "Jain",
        "CPU/wall",
    ]
    table = Table(
        title,
        columns,
        align=["l"] + ["r"] * (len(columns) - 1),
        fold=[KEY, KEY, KEY, 6, 8, 5, 7, 4, 3, 1, 2],
    )
    single = {
        r.label: r.summary.median_s
        for r in rows
        if r.figures and r.figures.threads == 1 and r.summary.ok
    }
    for r in rows:
        label, s, fig = r.label, r.summary, r.figures
        if fig is None or not s.ok:
            table.rows.append([label, "–" if fig is None else str(fig.threads)] + ["–"] * 9)
            continue
        lat = [
            format_time(fig.latency_ns.get(k, math.nan) * 1e-9 / s.ops_per_call)
            for k in ("p50", "p99", "p99.9")
        ]
        table.rows.append(
            [
                label,
                str(fig.threads),
                estimate_cell(1 / s.median_s, 1 / s.ci_high_s, 1 / s.ci_low_s, format_rate),
                format_rate(1 / s.median_s / fig.threads),
                format_ratio(single[label] / s.median_s) if label in single else "–",
                *lat,
                f"{fig.min_max:.2f}",
                f"{fig.jain:.3f}",
                f"{s.cpu_wall:.2f}",
            ]
        )
    table.footnotes = _threads_footnotes([r.figures for r in rows if r.figures], summaries)
    return table


def _threads_footnotes(figures: Sequence[Any], summaries: Sequence[Summary]) -> list[str]:
    """The interpreter's GIL state, what timing each call costs, and how to read fairness."""
    gil = {f.gil_enabled for f in figures}
    interpreter = (
        "free-threaded (GIL disabled): threads ran Python code in parallel"
        if gil == {False}
        else "GIL enabled: threads took turns running Python code, "
        "so only work that releases the GIL (I/O, sleeps, many C extensions) can "
        "scale"
        if gil == {True}
        else "GIL state unknown or mixed across processes"
    )
    overhead = [s.loop_overhead_s for s in summaries if s.ok and math.isfinite(s.loop_overhead_s)]
    lines = [f"interpreter: {interpreter}"]
    lines.append(
        f"latency: each thread times one call (two perf_counter_ns reads) between "
        f"batches of untimed calls; batches double until one lasts "
        f"{format_time(LATENCY_BATCH_NS * 1e-9)} (at most {MAX_BATCH:,} calls), so the "
        "percentiles sample calls rather than time every one"
    )
    if overhead:
        lines.append(
            f"this loop around an empty call costs "
            f"{format_time(sorted(overhead)[len(overhead) // 2])} per op, included in "
            "ops/s and latencies, not subtracted"
        )
    lines.append(
        "fairness: min/max = ops of the least / most productive thread; Jain = "
        "(Σx)²/(N·Σx²), 1 = equal shares, 1/N = one thread did all the work"
    )
    lines.append("scaling model: perflab fit RESULTS.json --model usl")
    return lines + _ops_footnote(summaries)


def summary_records(grouped: dict[str, list[Summary]]) -> list[dict[str, object]]:
    """Flat records of summaries for CSV: numbers in base units (s, B), one per benchmark."""
    records = []
    for summaries in grouped.values():
        for s in summaries:
            record: dict[str, object] = {
                "id": s.id,
                "group": s.group,
                "benchmark": s.label,
                "stage": s.stage or "",
                "median_s": s.median_s,
                "ci_low_s": s.ci_low_s,
                "ci_high_s": s.ci_high_s,
                "mad_s": s.mad_s,
                "cv": s.cv,
                "ops_per_s": 1 / s.median_s if s.ok else "",
                "cpu_wall": s.cpu_wall,
                "ratio_best": s.ratio_best.value if s.ratio_best else "",
                "ratio_baseline": s.ratio_baseline.value if s.ratio_baseline else "",
                "verdict": s.verdict,
                "alloc_peak_bytes": s.alloc_peak_bytes,
                "alloc_blocks": s.alloc_blocks,
                "alloc_total_bytes": s.alloc_total_bytes,
                "alloc_total_blocks": s.alloc_total_blocks,
                "gc_per_1000_ops": s.gc_per_1000_ops,
                "cold_s": s.cold_s,
                "loop_overhead_s": s.loop_overhead_s,
                "ops_per_call": s.ops_per_call,
                "processes": s.processes,
                "samples": s.samples,
                "stop_reason": s.stop_reason,
                "error": s.error or "",
            }
            if s.counted:  # per-sample counters; hardware figures only where they exist
                record |= {"preempted": s.preempted, "preempted_excluded": s.preempted_excluded}
            if s.instructions_per_op is not None:
                record |= {"instructions_per_op": s.instructions_per_op, "ipc": s.ipc}
            record.update({f"metric_{k}": v for k, v in s.metrics.items()})
            records.append(record)
    return records
