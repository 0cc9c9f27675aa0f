"""Summaries: the statistics of each benchmark and of its group, derived from raw data.

A :class:`Summary` is recomputable from a results file at any time; reports
render summaries and never look at raw samples themselves.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from perflab.analyze import stats
from perflab.model import Benchmark

#: Robust spread (MAD/median) above which a benchmark is called unstable; the CV is
#: reported too but is inflated by the outliers that robust statistics ignore.
UNSTABLE_SPREAD = 0.05
#: Fraction of sampled wall time inside GC above which a benchmark is GC-dominated.
GC_DOMINATED = 0.10
#: Loop overhead above this fraction of the time per op makes the op "close to the loop cost".
OVERHEAD_HEAVY = 0.30
#: A benchmark is CPU-bound when its median sample CPU/wall is at least this.
CPU_BOUND = 0.95
#: A sample of a CPU-bound benchmark with CPU/wall below this was preempted.
PREEMPTED = 0.90
#: Warn about a busy machine when more than this fraction of samples were preempted.
BUSY_FRACTION = 0.05


@dataclass(frozen=True)
class Caveat:
    """One reason to trust a benchmark's numbers less, in plain words.

    Attributes:
        kind: one of :data:`CAVEATS` (e.g. "unstable"); benchmarks with the same
            kind share one line in the default output.
        figure: this benchmark's figure for it, short (e.g. "±8%", "0.15%").
        text: the full sentence for this benchmark (``--verbose``), without the advice.
    """

    kind: str
    figure: str
    text: str


#: kind → (what it means, shown once per kind; what to do, shown once per kind)
CAVEATS = {
    "precision not reached": ("the CI is wider than asked; in brackets, how much the "
                              "processes' medians differ: a busy or virtual machine's speed "
                              "swings from process to process",
                              "raise --budget for more processes, or quiet the machine"),
    "unstable": ("samples vary by more than 5% (MAD/median)",
                 "close other programs or raise --budget"),
    "busy machine": ("over 5% of samples got under 90% of a core while the code is "
                     "CPU-bound: other programs took the CPU, so times are inflated",
                     "close them, or check with perflab doctor"),
    "too short for the clock": ("the timer's error is over 0.1% of a sample",
                                "give each call more work"),
    "near the loop cost": ("the harness loop alone takes over 30% of the time per op",
                           "time a batch of operations per call"),
    "GC-dominated": ("over 10% of the time was garbage collection", ""),
    "samples excluded": ("the clocks disagreed during these samples; they are kept in the "
                         "file and left out of the statistics", "check this machine with "
                         "perflab doctor"),
    "clock step between samples": ("a clock stepped or ran at the wrong rate between two "
                                   "samples of a process; no sample was affected",
                                   "check this machine with perflab doctor"),
}


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """"1 sample", "3 samples", "2 processes": a count with its noun in the right number
    (``nouns``: the plural when it is not ``noun + "s"``)."""
    return f"{count:,} {noun if count == 1 else nouns or noun + 's'}"


class MedianCI:
    """What summaries with ``median_s``, ``ci_low_s`` and ``ci_high_s`` (seconds) share."""

    median_s: float
    ci_low_s: float
    ci_high_s: float

    @property
    def ok(self) -> bool:
        """True when there is a median to show."""
        return math.isfinite(self.median_s)

    @property
    def relative_half_width(self) -> float:
        """CI half-width / median (nan when there is no median)."""
        return (self.ci_high_s - self.ci_low_s) / 2 / self.median_s if self.ok else math.nan


@dataclass
class Summary(MedianCI):
    """Derived statistics of one benchmark. Times in seconds per op, sizes in bytes.

    Attributes:
        id / label / group / stage: identify the benchmark.
        median_s, ci_low_s, ci_high_s: median time per op and its 95% CI.
        median_se_s: the standard error of median_s (what a fit weighs it by), s.
        process_spread: how much the processes' medians differ: the SD of their logs
            (≈ a relative SD; nan with fewer than 2 processes).
        mad_s, cv: spread of per-sample times per op (MAD scaled by 1.4826).
        processes, samples: counts that entered the statistics.
        flagged: samples excluded for clock disagreement (kept in the file).
        outliers: samples with |modified z| > 3.5 (flagged, not excluded).
        cpu_wall: process CPU time / wall time over all samples.
        gc_per_1000_ops, gc_time_fraction: GC activity during samples.
        cold_s: median first-call time across processes.
        loop_overhead_s: median harness loop cost per op.
        iterations: calls per sample.
        warmup_samples: median warmup samples per process.
        timer_error_fraction: timer error / sample duration.
        alloc_peak_bytes / alloc_blocks: per op, from the tracemalloc pass.
        ops_per_call: operations per call (``ops=``); every "per op" figure here is a
            call's figure divided by it, except ``cold_s`` (the whole first call).
        metrics: median of each extra metric across processes.
        metric_units: unit of each metric.
        ratio_best / ratio_baseline: (ratio, low, high) against the group's
            best and baseline; None when not applicable.
        metric_ratio_best: metric → value / best value in the group.
        preempted: samples of a CPU-bound benchmark with CPU/wall below 0.9: another
            program held the core during them, so their wall time is inflated.
        clock_steps_ns: per process whose clocks disagreed over the whole sampling
            phase although no sample was flagged (a step between samples): the skew, ns.
        stop_reason: why measurement stopped.
        warnings: plain-words caveats (:class:`Caveat`).
        error: failure message, or None.
    """

    id: str
    label: str
    group: str
    stage: str | None
    baseline: bool
    median_s: float = math.nan
    ci_low_s: float = math.nan
    ci_high_s: float = math.nan
    median_se_s: float = math.nan
    process_spread: float = math.nan
    mad_s: float = math.nan
    cv: float = math.nan
    processes: int = 0
    samples: int = 0
    flagged: int = 0
    outliers: int = 0
    cpu_wall: float = math.nan
    gc_per_1000_ops: float = math.nan
    gc_time_fraction: float = math.nan
    cold_s: float = math.nan
    loop_overhead_s: float = math.nan
    iterations: int = 0
    warmup_samples: float = math.nan
    timer_error_fraction: float = math.nan
    alloc_peak_bytes: float | None = None
    alloc_blocks: float | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    metric_units: dict[str, str] = field(default_factory=dict)
    ratio_best: tuple[float, float, float] | None = None
    ratio_baseline: tuple[float, float, float] | None = None
    metric_ratio_best: dict[str, float] = field(default_factory=dict)
    preempted: int = 0
    clock_steps_ns: list[int] = field(default_factory=list)
    ops_per_call: int = 1
    stop_reason: str = ""
    warnings: list[Caveat] = field(default_factory=list)
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON form (seconds, bytes), with ``unit`` named."""
        return {"unit": "s/op", **asdict(self)}


def timing_groups(bench: Benchmark) -> list[np.ndarray]:
    """Seconds per op of each process's unflagged samples: P arrays (empty ones dropped).

    An op is one call, or 1/ops_per_call of a call when the benchmark declared
    ``ops=`` (a sample's wall time / calls / ops per call).
    """
    groups = []
    per_call = bench.ops_per_call
    for proc in bench.processes:
        values = [s.wall_ns / s.iterations / per_call * 1e-9 for s in proc.samples
                  if not s.flagged]
        if values:
            groups.append(np.asarray(values))
    return groups


#: bootstrap replicates of a benchmark's median CI (the stopping rule and the summary use
#: the same number and the same generator, so they always agree on the CI)
RESAMPLES = 2000


def median_estimate(bench: Benchmark, confidence: float = 0.95, resamples: int = RESAMPLES,
                    rng: np.random.Generator | None = None) -> stats.Estimate | None:
    """The median time per op of ``bench`` with its CI, s.

    With two processes or more, this is the geometric mean of the processes' medians
    with the random-effects t-interval (:func:`perflab.analyze.stats.process_location`);
    with one, the median of its samples with the bootstrap CI. Each process
    has its own memory layout and meets the machine in its own state, so the spread
    between processes is what a repeat run's median varies by, and it is estimated
    with P − 1 degrees of freedom. With one process only the within-process
    hierarchical bootstrap is possible (it cannot see that spread; the stop caveat
    says so). The bootstrap generator is seeded from the benchmark's id unless
    ``rng`` is given, so the runner's stopping rule and every later summary of the
    same data compute the very same interval (one source of truth for "precision
    reached"). None when no sample is usable.
    """
    found = _median_and_se(bench, confidence, resamples, rng)
    return found[0] if found else None


def _median_and_se(bench: Benchmark, confidence: float, resamples: int,
                   rng: np.random.Generator | None) -> tuple[stats.Estimate, float] | None:
    """(:func:`median_estimate`, the standard error of its median in seconds: median ×
    the SE of its log with several processes, the bootstrap CI's half-width / z with
    one); None when no sample is usable."""
    groups = timing_groups(bench)
    if not groups:
        return None
    location = stats.process_location(groups)
    if location is not None:
        return location.ci(confidence), location.value * location.se_log
    rng = rng or np.random.default_rng([0, zlib.crc32(bench.id.encode())])
    est = stats.median_ci(groups, confidence, resamples, rng)
    return est, est.half_width / stats.z_quantile(confidence)


def _median(values: Sequence[float | None]) -> float:
    finite = [v for v in values if v is not None]
    return float(np.median(finite)) if finite else math.nan


def summarize(bench: Benchmark, confidence: float = 0.95, resamples: int = RESAMPLES,
              rng: np.random.Generator | None = None, precision: float | None = None,
              min_processes: int | None = None) -> Summary:
    """Statistics of one python-engine benchmark (no group ratios; see :func:`summarize_group`).

    Args:
        bench: raw data.
        confidence: CI level.
        resamples: bootstrap replicates.
        rng: a generator for the bootstrap instead of the benchmark's own (see
            :func:`median_estimate`).
        precision: the run's target, to word the precision caveat.
        min_processes: the run's minimum process count, to say why precision was not
            claimed when fewer processes ran.

    Returns:
        A Summary; without samples, only identity, error and stop reason are set.
    """
    summary = Summary(bench.id, bench.label, bench.group, bench.stage, bench.baseline,
                      stop_reason=bench.stop_reason, error=bench.error,
                      metric_units=dict(bench.metric_units))
    found = _median_and_se(bench, confidence, resamples, rng)
    if found is None:
        summary.flagged = sum(1 for p in bench.processes for s in p.samples if s.flagged)
        if summary.flagged:
            summary.warnings = [Caveat("samples excluded", f"all {summary.flagged:,}",
                                       f"all {plural(summary.flagged, 'sample')} excluded: "
                                       "the clocks disagreed during them")]
        return summary
    est, summary.median_se_s = found
    summary.median_s, summary.ci_low_s, summary.ci_high_s = est.value, est.low, est.high
    groups = timing_groups(bench)
    _fill_spread(summary, np.concatenate(groups))
    summary.process_spread = stats.process_spread(groups)
    _fill_process_figures(summary, bench)
    summary.warnings = _caveats(summary, precision, min_processes)
    return summary


def _fill_spread(summary: Summary, values: np.ndarray) -> None:
    summary.mad_s, summary.cv = stats.mad(values), stats.cv(values)
    summary.samples = int(values.size)
    summary.outliers = int(stats.outlier_mask(values).sum())


def _fill_process_figures(summary: Summary, bench: Benchmark) -> None:
    procs = [p for p in bench.processes if p.samples]
    samples = [s for p in procs for s in p.samples if not s.flagged]
    wall = sum(s.wall_ns for s in samples)
    iterations = sum(s.iterations for s in samples)
    summary.processes = len(procs)
    summary.flagged = sum(1 for p in procs for s in p.samples if s.flagged)
    summary.cpu_wall = sum(s.cpu_ns for s in samples) / wall if wall else math.nan
    ops = summary.ops_per_call = bench.ops_per_call
    summary.gc_per_1000_ops = 1000 * sum(s.gc_collections for s in samples) / iterations / ops
    summary.gc_time_fraction = sum(s.gc_ns for s in samples) / wall if wall else math.nan
    summary.cold_s = _median([p.cold_ns for p in procs]) * 1e-9
    summary.loop_overhead_s = _median([p.loop_overhead_ns for p in procs]) * 1e-9 / ops
    summary.iterations = int(_median([p.iterations for p in procs]))
    summary.warmup_samples = _median([p.warmup_samples for p in procs])
    sample_ns = summary.median_s * 1e9 * summary.iterations * ops
    summary.timer_error_fraction = _median([p.timer_error_ns for p in procs]) / sample_ns
    peaks = [p.alloc_peak_bytes for p in procs if p.alloc_peak_bytes is not None]
    summary.alloc_peak_bytes = _median(peaks) / ops if peaks else None
    blocks = [p.alloc_blocks for p in procs if p.alloc_blocks is not None]
    summary.alloc_blocks = _median(blocks) / ops if blocks else None
    summary.preempted = _preempted(samples)
    summary.clock_steps_ns = [p.clock_skew_ns or 0 for p in procs
                              if p.clock_flag and not any(x.flagged for x in p.samples)]
    names = sorted({k for p in procs for k in p.metrics})
    summary.metrics = {k: _median([p.metrics.get(k) for p in procs]) for k in names}


def _preempted(samples: Sequence[Any]) -> int:
    """Samples that lost the CPU: CPU/wall < 0.9 in a benchmark whose median CPU/wall is
    ≥ 0.95 (CPU-bound). For such code wall time minus CPU time is time spent waiting for
    a core, so these samples measure the machine's load, not the code."""
    ratios = np.array([s.cpu_ns / s.wall_ns for s in samples if s.wall_ns > 0])
    if ratios.size == 0 or np.median(ratios) < CPU_BOUND:
        return 0
    return int((ratios < PREEMPTED).sum())


def _caveats(s: Summary, precision: float | None, min_processes: int | None) -> list[Caveat]:
    """Plain-words caveats about how far the numbers can be trusted."""
    out = []
    stop = _stop_caveat(s, precision, min_processes)
    if stop:
        out.append(stop)
    if s.mad_s > UNSTABLE_SPREAD * s.median_s:
        figure = f"±{s.mad_s / s.median_s:.0%}"
        out.append(Caveat("unstable", figure, f"samples vary by {figure} (MAD/median)"))
    if s.preempted > BUSY_FRACTION * s.samples:
        figure = f"{s.preempted / s.samples:.0%}"
        out.append(Caveat("busy machine", figure, f"{figure} of samples got under 90% of a "
                          "core (CPU/wall < 0.9) while the code is CPU-bound"))
    if s.timer_error_fraction > 0.001:
        figure = f"{s.timer_error_fraction:.2%}"
        out.append(Caveat("too short for the clock", figure,
                          f"timer error is {figure} of a sample"))
    if s.loop_overhead_s > OVERHEAD_HEAVY * s.median_s:
        figure = f"{s.loop_overhead_s / s.median_s:.0%}"
        out.append(Caveat("near the loop cost", figure,
                          f"the harness loop alone takes {figure} of the time per op"))
    if s.gc_time_fraction > GC_DOMINATED:
        figure = f"{s.gc_time_fraction:.0%}"
        out.append(Caveat("GC-dominated", figure,
                          f"{figure} of the time was garbage collection"))
    if s.flagged:
        out.append(Caveat("samples excluded", f"{s.flagged:,}",
                          f"{plural(s.flagged, 'sample')} excluded: the clocks disagreed "
                          "during them"))
    if s.clock_steps_ns:
        worst = max(s.clock_steps_ns, key=abs)
        figure = f"{abs(worst) / 1e9:.3g} s"
        out.append(Caveat("clock step between samples", figure,
                          f"the clocks disagreed by up to {figure} between samples of "
                          f"{plural(len(s.clock_steps_ns), 'process', 'processes')} (no sample affected)"))
    return out


def _stop_caveat(s: Summary, precision: float | None, min_processes: int | None
                 ) -> Caveat | None:
    """Why the run stopped before the asked precision, worded from the stop reason the
    runner recorded and the same CI it decided on (:func:`median_estimate`)."""
    if precision is None or s.stop_reason not in ("budget", "max-processes"):
        return None
    reached = s.relative_half_width
    figure = f"±{reached:.1%}"
    where = "at the budget" if s.stop_reason == "budget" else "at --max-processes"
    if reached <= precision:
        if min_processes is None or s.processes >= min_processes:
            return None
        return Caveat("precision not reached", figure,
                      f"stopped {where} after {plural(s.processes, 'process', 'processes')}, fewer than "
                      f"--min-processes {min_processes}; {figure} is not yet trustworthy")
    spread = (f"; the processes' medians differ by {s.process_spread:.1%} (SD)"
              if math.isfinite(s.process_spread) else "")
    return Caveat("precision not reached",
                  figure + (f" (processes ±{s.process_spread:.1%})"
                            if math.isfinite(s.process_spread) else ""),
                  f"stopped {where} with {figure}, ±{precision:.1%} asked{spread}")


def summarize_group(benches: Sequence[Benchmark], confidence: float = 0.95,
                    resamples: int = RESAMPLES, seed: int | None = None,
                    precision: float | None = None, min_processes: int | None = None
                    ) -> list[Summary]:
    """Summaries of one group's benchmarks with ratios against the best and the baseline.

    Like is compared with like: the best and the baseline are looked up among the
    benchmarks of the same stage and the same thread count (threads mode), so a
    benchmark on 8 threads is compared with the baseline on 8 threads. The best is
    the benchmark with the lowest median; ratios are B/A of medians with the CI of
    two independent random-effects locations (see :func:`_ratio`); a
    benchmark's ratio to itself is exactly 1 with no CI. Metric "× best" is
    value / best value, lower or higher being better as the metric says.

    Returns:
        Summaries in input order.
    """
    rng = np.random.default_rng(seed)
    summaries = [summarize(b, confidence, resamples, None, precision, min_processes)
                 for b in benches]
    alike: dict[tuple[str | None, int | None], list[int]] = {}
    for i, (s, b) in enumerate(zip(summaries, benches)):
        alike.setdefault((s.stage, b.threads), []).append(i)
    for members in alike.values():
        _ratios(benches, summaries, members, confidence, resamples, rng)
    return summaries


#: the ratio of a benchmark to itself: exactly 1, no CI to show
SELF_RATIO = (1.0, math.nan, math.nan)


def _ratios(benches: Sequence[Benchmark], summaries: list[Summary], members: list[int],
            confidence: float, resamples: int, rng: np.random.Generator) -> None:
    ok = [i for i in members if summaries[i].ok]
    if not ok:
        return
    best = min(ok, key=lambda i: summaries[i].median_s)
    baselines = [i for i in ok if summaries[i].baseline]
    for i in ok:
        summaries[i].ratio_best = _ratio(benches, i, best, confidence, resamples, rng)
        if baselines:
            summaries[i].ratio_baseline = _ratio(benches, i, baselines[0], confidence,
                                                 resamples, rng)
    for name in {k for i in ok for k in summaries[i].metrics}:
        values = {i: summaries[i].metrics[name] for i in ok if name in summaries[i].metrics}
        best_value = min(values.values())
        for i, v in values.items():
            summaries[i].metric_ratio_best[name] = v / best_value if best_value else math.nan


def _ratio(benches: Sequence[Benchmark], i: int, j: int, confidence: float, resamples: int,
           rng: np.random.Generator) -> tuple[float, float, float]:
    """(median ratio, low, high) of benchmark i over benchmark j; SELF_RATIO when i is j.
    The CI combines both benchmarks' random-effects errors (:class:`stats.LogLocation`);
    with a single process on either side, the hierarchical bootstrap of the ratio."""
    if i == j:
        return SELF_RATIO
    num, den = timing_groups(benches[i]), timing_groups(benches[j])
    a, b = stats.process_location(num), stats.process_location(den)
    if a is not None and b is not None:
        est = (a / b).ci(confidence)
    else:
        est = stats.ratio_ci(num, den, confidence, resamples, rng)
    return est.value, est.low, est.high


@dataclass
class StagedRow:
    """One row of a staged group's table (e.g. one serializer).

    Attributes:
        name: the benchmarks' shared name.
        stages: stage → Summary.
        total: (sum of stage medians, low, high), seconds.
        ratio_best: (total / best total, low, high).
        metrics / metric_ratio_best: metric values and their "× best".
    """

    name: str
    stages: dict[str, Summary]
    total: tuple[float, float, float] | None = None
    ratio_best: tuple[float, float, float] | None = None
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


def staged_rows(benches: Sequence[Benchmark], summaries: Sequence[Summary],
                confidence: float = 0.95, resamples: int = RESAMPLES, seed: int | None = None
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
    complete = [r for r in rows.values()
                if len(parts.get(r.name, [])) == len(stage_names) and stage_names]
    totals: dict[str, stats.LogLocation | None] = {}
    replicates = {}
    for row in complete:
        locations = [stats.process_location(groups) for groups in parts[row.name]]
        if all(loc is not None for loc in locations):
            totals[row.name] = stats.location_sum([loc for loc in locations if loc])
            est = totals[row.name].ci(confidence)  # type: ignore[union-attr]
        else:  # a stage with one process: the bootstrap of the sum
            totals[row.name] = None
            est, replicates[row.name] = stats.sum_of_medians_ci(parts[row.name], confidence,
                                                                resamples, rng)
        row.total = (est.value, est.low, est.high)
    if complete:
        best = min(complete, key=lambda r: r.total[0] if r.total else math.inf)
        for row in complete:
            if row is best:
                row.ratio_best = SELF_RATIO
                continue
            mine, theirs = totals[row.name], totals[best.name]
            if mine is not None and theirs is not None:
                est = (mine / theirs).ci(confidence)
            else:
                est = stats.percentile_ci(_replicates(replicates, row.name, parts, rng)
                                          / _replicates(replicates, best.name, parts, rng),
                                          row.total[0] / best.total[0], confidence)
            row.ratio_best = (est.value, est.low, est.high)
    return stage_names, list(rows.values())


def _replicates(replicates: dict[str, np.ndarray], name: str,
                parts: dict[str, list[list[np.ndarray]]], rng: np.random.Generator
                ) -> np.ndarray:
    """Bootstrap replicates of a staged row's total, computed when first needed."""
    if name not in replicates:
        replicates[name] = stats.sum_of_medians_ci(parts[name], rng=rng)[1]
    return replicates[name]


def by_group(benches: Sequence[Benchmark]) -> dict[str, list[Benchmark]]:
    """Benchmarks grouped by group name, in order of first appearance."""
    groups: dict[str, list[Benchmark]] = {}
    for bench in benches:
        groups.setdefault(bench.group, []).append(bench)
    return groups


def summarize_benchmarks(benches: Sequence[Benchmark], confidence: float = 0.95,
                         seed: int | None = 0, precision: float | None = None,
                         min_processes: int | None = None) -> dict[str, list[Summary]]:
    """Summaries of python-engine benchmarks, by group (see :func:`summarize_group`).

    A fixed default seed makes re-rendering a file print the same CIs.
    """
    return {group: summarize_group(members, confidence, seed=seed, precision=precision,
                                   min_processes=min_processes)
            for group, members in by_group(benches).items()}
