"""The figures of each group of a ``perflab run``, as its tables show them.

A plain group shows its :class:`~perflab.analyze.run.summary.Summary` rows; a staged group
(benchmarks with a ``stage``, e.g. serialize / deserialize) pivots to one
:class:`StagedRow` per name with the total of the stages and its CI; a group with thread
counts adds the threads figures (:func:`perflab.analyze.run.threads.thread_figures`). Everything
here is computed before a report is called (:func:`run_groups`); report/table.py only
renders it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from perflab.analyze import stats
from perflab.analyze.run.ratios import SELF_RATIO, by_group
from perflab.analyze.run.summary import RESAMPLES, Summary, timing_groups
from perflab.analyze.run.threads import ThreadFigures, thread_figures
from perflab.model import Benchmark
from perflab.model.estimate import Estimate


@dataclass
class StagedRow:
    """One row of a staged group's table (e.g. one serializer).

    Attributes:
        name: the benchmarks' shared name.
        stages: stage → Summary.
        total: the sum of the stage medians with its CI, s.
        ratio_best: total / the lowest total, with its CI.
        metrics / metric_ratio_best: metric values and their "× best".
    """

    name: str
    stages: dict[str, Summary]
    total: Estimate | None = None
    ratio_best: Estimate | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    metric_ratio_best: dict[str, float] = field(default_factory=dict)

    @property
    def cpu_wall(self) -> float:
        """CPU/wall of the whole row: each stage's CPU/wall weighted by its median time
        (= the stages' CPU time ÷ their wall time per op); NaN when a stage lacks one."""
        parts = [(s.cpu_wall, s.median_s) for s in self.stages.values()]
        wall = sum(m for _, m in parts)
        if not parts or not wall > 0 or not all(math.isfinite(c * m) for c, m in parts):
            return math.nan
        return sum(c * m for c, m in parts) / wall

    def allocated(self, field_name: str) -> float | None:
        """A per-op allocation figure summed over the stages (``alloc_total_bytes`` or
        ``alloc_total_blocks``: what the whole row allocates per op); None when a stage
        lacks it."""
        values = [getattr(s, field_name) for s in self.stages.values()]
        return None if not values or any(v is None for v in values) else float(sum(values))


def staged_rows(
    benches: Sequence[Benchmark],
    summaries: Sequence[Summary],
    confidence: float = 0.95,
    resamples: int = RESAMPLES,
    seed: int | None = None,
) -> tuple[list[str], list[StagedRow]]:
    """Pivot a staged group: one row per name, one column per stage, plus the total.

    The total is the sum of the stage medians; its CI and that of "× best" (total /
    the lowest total) combine the stages' random-effects errors
    (:func:`perflab.analyze.stats.location_sum`); when a stage ran in one process
    only, the bootstrap of the sum and of the ratio of totals stand in.

    Returns:
        (stage names in first-seen order, rows in first-seen order).
    """
    rng = np.random.default_rng(seed)
    stage_names = list(dict.fromkeys(s.stage for s in summaries if s.stage))
    rows: dict[str, StagedRow] = {}
    parts: dict[str, list[list[np.ndarray]]] = {}
    for bench, summary in zip(benches, summaries):
        row = rows.setdefault(bench.label, StagedRow(bench.label, {}))
        row.stages[summary.stage or ""] = summary
        row.metrics.update(summary.metrics)
        row.metric_ratio_best.update(summary.metric_ratio_best)
        if summary.ok:
            parts.setdefault(bench.label, []).append(timing_groups(bench))
    complete = [
        r for r in rows.values() if len(parts.get(r.name, [])) == len(stage_names) and stage_names
    ]
    totals: dict[str, stats.LogLocation | None] = {}
    replicates = {}
    sums_s: dict[str, float] = {}
    for row in complete:
        locations = [stats.process_location(groups) for groups in parts[row.name]]
        if all(loc is not None for loc in locations):
            totals[row.name] = stats.location_sum([loc for loc in locations if loc])
            est = totals[row.name].ci(confidence)  # type: ignore[union-attr]
        else:  # a stage with one process: the bootstrap of the sum
            totals[row.name] = None
            est, replicates[row.name] = stats.sum_of_medians_ci(
                parts[row.name], confidence, resamples, rng
            )
        row.total, sums_s[row.name] = est, est.value
    if complete:
        best = min(complete, key=lambda r: sums_s[r.name])
        for row in complete:
            if row is best:
                row.ratio_best = SELF_RATIO
                continue
            mine, theirs = totals[row.name], totals[best.name]
            if mine is not None and theirs is not None:
                est = (mine / theirs).ci(confidence)
            else:
                est = stats.percentile_ci(
                    _replicates(replicates, row.name, parts, rng)
                    / _replicates(replicates, best.name, parts, rng),
                    sums_s[row.name] / sums_s[best.name],
                    confidence,
                )
            row.ratio_best = est
    return stage_names, list(rows.values())


def _replicates(
    replicates: dict[str, np.ndarray],
    name: str,
    parts: dict[str, list[list[np.ndarray]]],
    rng: np.random.Generator,
) -> np.ndarray:
    """Bootstrap replicates of a staged row's total, computed when first needed."""
    if name not in replicates:
        replicates[name] = stats.sum_of_medians_ci(parts[name], rng=rng)[1]
    return replicates[name]


@dataclass(frozen=True)
class ThreadRow:
    """One row of a threads table: a benchmark at one thread count.

    Attributes:
        label: the benchmark's label without its thread count (rows of one benchmark at
            several thread counts share it, for "× 1 thread").
        summary: its :class:`Summary`.
        figures: its threads figures, None when it has no threads data.
    """

    label: str
    summary: Summary
    figures: ThreadFigures | None


def thread_rows(benches: Sequence[Benchmark], summaries: Sequence[Summary]) -> list[ThreadRow]:
    """The rows of a group's threads table: its threads-mode benchmarks, in order.

    Args:
        benches: the group's benchmarks; summaries: theirs, in the same order.
    """
    return [
        ThreadRow(replace(b, threads=None).label, s, thread_figures(b))
        for b, s in zip(benches, summaries)
        if b.threads is not None
    ]


@dataclass
class GroupFigures:
    """Everything the tables of one group of a run show.

    Attributes:
        group: the group's name ("" for benchmarks without a group).
        summaries: one per benchmark, in file order.
        threaded: True when a benchmark of the group ran with a thread count.
        stage_names: a staged group's stages in first-seen order; empty otherwise.
        staged: a staged group's rows (:func:`staged_rows`); None for a plain group.
        threads: the rows of the threads table; empty when no benchmark ran threads mode.
    """

    group: str
    summaries: list[Summary]
    threaded: bool = False
    stage_names: list[str] = field(default_factory=list)
    staged: list[StagedRow] | None = None
    threads: list[ThreadRow] = field(default_factory=list)


def run_groups(
    benches: Sequence[Benchmark], grouped: dict[str, list[Summary]], seed: int | None = 0
) -> list[GroupFigures]:
    """The figures of every group of a run, in order of first appearance.

    Args:
        benches: the run's benchmarks.
        grouped: their summaries by group
            (:func:`perflab.analyze.run.ratios.summarize_benchmarks`).
        seed: the bootstrap seed of staged totals whose stages ran in one process only (a
            fixed default: re-rendering a file prints the same CIs).
    """
    out = []
    for group, members in by_group(benches).items():
        summaries = grouped[group]
        figures = GroupFigures(
            group, summaries, threaded=any(b.threads is not None for b in members)
        )
        if any(s.stage for s in summaries):
            figures.stage_names, figures.staged = staged_rows(members, summaries, seed=seed)
        if figures.threaded:
            figures.threads = thread_rows(members, summaries)
        out.append(figures)
    return out
