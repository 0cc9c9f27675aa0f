"""Summaries: the statistics of each benchmark, derived from raw data (its group's ratios
are :mod:`perflab.analyze.run.ratios`'s).

A :class:`Summary` is recomputable from a results file at any time; reports
render summaries and never look at raw samples themselves.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from perflab.analyze import reference, stats
from perflab.analyze.run.counters import counter_figures
from perflab.analyze.slow_calls import repeated_spans, slow_calls
from perflab.model import Benchmark
from perflab.model.estimate import Estimate

#: Robust spread (MAD/median) above which a benchmark is called unstable; the CV is
#: reported too but is inflated by the outliers that robust statistics ignore.
UNSTABLE_SPREAD = 0.05
#: Fraction of sampled wall time inside GC above which a benchmark is GC-dominated.
GC_DOMINATED = 0.10
#: Loop overhead above this fraction of the time per op makes the op "close to the loop cost".
OVERHEAD_HEAVY = 0.30
#: A benchmark is CPU-bound when its CPU_BOUND_QUANTILE sample CPU/wall is at least this.
CPU_BOUND = 0.95
#: ... judged on this quantile of the samples' CPU/wall, not the median: on a busy machine
#: most samples of CPU-bound code are preempted (CPU/wall 0.4–0.7 in 83–100% of them), and
#: the median would call the code I/O-bound just when the warning matters most; the samples
#: that did get a whole core still show CPU/wall ≈ 1. Code that waits (I/O, sleep) stays
#: below 0.95 in nearly every sample.
CPU_BOUND_QUANTILE = 0.90
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
    "precision not reached": (
        "the CI is wider than asked; in brackets, how much the "
        "processes' medians differ: a busy or virtual machine's speed "
        "swings from process to process",
        "raise --budget for more processes, or quiet the machine",
    ),
    "unstable": (
        "samples vary by more than 5% (MAD/median)",
        "close other programs or raise --budget",
    ),
    "busy machine": (
        "over 5% of samples got under 90% of a core while the code is "
        "CPU-bound: other programs took the CPU, so times are inflated",
        "close them, or check with perflab doctor",
    ),
    "too short for the clock": (
        "the timer's error is over 0.1% of a sample",
        "give each call more work",
    ),
    "near the loop cost": (
        "the harness loop alone takes over 30% of the time per op",
        "time a batch of operations per call",
    ),
    "GC-dominated": ("over 10% of the time was garbage collection", ""),
    "N+1": ("a perflab.trace span name ran over --n-plus-one (10) times a call (one per row?)", ""),
    "heavy tail": (
        "the slowest 1% of samples carry over a tenth of the time: a few calls were far "
        "slower than the rest; after the figure, the likely cause",
        "--verbose lists the slowest samples and what happened during them",
    ),
    "preempted samples excluded": (
        "an involuntary context switch during the sample: another program took the CPU "
        "mid-sample, inflating its wall time; kept in the file, left out of the statistics",
        "",
    ),
    "preempted samples kept": (
        "an involuntary context switch during the sample, in a process with fewer than 3 "
        "clean samples, so none could be left out: times are inflated",
        "close other programs, or check with perflab doctor",
    ),
    "samples excluded": (
        "the clocks disagreed during these samples; they are kept in the "
        "file and left out of the statistics",
        "check this machine with perflab doctor",
    ),
    "clock step between samples": (
        "a clock stepped or ran at the wrong rate between two "
        "samples of a process; no sample was affected",
        "check this machine with perflab doctor",
    ),
}


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """ "1 sample", "3 samples", "2 processes": a count with its noun in the right number
    (``nouns``: the plural when it is not ``noun + "s"``)."""
    return f"{count:,} {noun if count == 1 else nouns or noun + 's'}"


#: the median of a benchmark without a usable sample
NO_MEDIAN = Estimate(math.nan, math.nan, math.nan)


class MedianSummary:
    """What the summaries of timed things (:class:`Summary`, ``CommandSummary``) share: a
    ``median`` :class:`~perflab.model.estimate.Estimate` in seconds, its figures under
    the names results files give them (``median_s``, ``ci_low_s``, ``ci_high_s``), and
    that JSON form."""

    median: Estimate

    @property
    def median_s(self) -> float:
        """The median, s (``median.value``; nan when there is none)."""
        return self.median.value

    @property
    def ci_low_s(self) -> float:
        """The median's CI low, s: the name results files and ``perflab.measure`` readers
        use (``median.ci_low``)."""
        return self.median.ci_low

    @property
    def ci_high_s(self) -> float:
        """The median's CI high, s (``median.ci_high``)."""
        return self.median.ci_high

    @property
    def ok(self) -> bool:
        """True when there is a median to show."""
        return math.isfinite(self.median.value)

    def json_form(self, unit: str, se: bool) -> dict[str, Any]:
        """The form results files have always held (older readers read it, see
        docs/results-format.md): ``unit`` first, then the fields in order, the ``median``
        as the flat ``median_s``, ``ci_low_s``, ``ci_high_s`` (and ``median_se_s`` with
        ``se``), every other Estimate (a ratio) as the list [value, CI low, CI high]."""
        out: dict[str, Any] = {"unit": unit}
        for name, plain in asdict(self).items():  # type: ignore[call-overload]
            value = getattr(self, name)
            if name == "median":
                out.update(median_s=value.value, ci_low_s=value.ci_low, ci_high_s=value.ci_high)
                if se:
                    out["median_se_s"] = value.se
            elif isinstance(value, Estimate):
                out[name] = [value.value, value.ci_low, value.ci_high]
            else:
                out[name] = plain
        return out


@dataclass
class Summary(MedianSummary):
    """Derived statistics of one benchmark. Times in seconds per op, sizes in bytes.

    Attributes:
        id / label / group / stage: identify the benchmark.
        median: median time per op, s, with its 95% CI and its standard error (what a
            fit weighs it by); ``median_s`` is its value. In JSON: ``median_s``,
            ``ci_low_s``, ``ci_high_s``, ``median_se_s``.
        process_spread: how much the processes' medians differ: the SD of their logs
            (≈ a relative SD; nan with fewer than 2 processes).
        process_medians_s: each worker process's median time per op, s, in the order
            the processes ran (those with a usable sample): the points the median and
            ``process_spread`` are computed from, and the dots of the run's charts.
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
        alloc_total_bytes / alloc_total_blocks: per op, allocated in all (freed or
            not), from the counting pass; None when not counted.
        ops_per_call: operations per call (``ops=``); every "per op" figure here is a
            call's figure divided by it, except ``cold_s`` (the whole first call).
        metrics: median of each extra metric across processes.
        metric_units: unit of each metric.
        ratio_best / ratio_baseline: the ratio of medians to the group's best and
            baseline with its CI (no CI for a benchmark's ratio to itself); None when not
            applicable. In JSON: [ratio, low, high]. ``ratio_baseline`` is the paired
            ratio (:mod:`perflab.analyze.paired`) when the run measured the two together.
        baseline_pairs: the pairs ``ratio_baseline`` came from; 0 when it is the ratio
            of two separately measured medians (``--pairing off``, older files).
        verdict: against the group's baseline, from ``ratio_baseline``'s CI as ``perflab
            compare`` decides (:func:`perflab.analyze.decisions.verdict`); "" for the
            baseline itself, in groups without one, or when no threshold was given.
        metric_ratio_best: metric → value / best value in the group.
        preempted: samples preempted: with per-sample counters, those with an
            involuntary context switch; in older files, samples of a CPU-bound benchmark
            with CPU/wall below 0.9. Another program held the core during them.
        preempted_excluded: those left out of the statistics (flagged "preempted",
            :mod:`perflab.analyze.run.counters`).
        counted: True when the samples carried per-sample counters.
        instructions_per_op / ipc / hardware_note: from the hardware counters (median
            user-space instructions per op; instructions per cycle), None where the kernel
            exposes none, and then why (:class:`perflab.analyze.run.counters.CounterFigures`).
        clock_steps_ns: per process whose clocks disagreed over the whole sampling
            phase although no sample was flagged (a step between samples): the skew, ns.
        stop_reason: why measurement stopped.
        warnings: plain-words caveats (:class:`Caveat`).
        error: failure message, or None.
        reference_s: the machine-speed reference's time in this benchmark's processes
            (geometric mean of their medians), s; nan when it was not timed
            (:mod:`perflab.analyze.reference`).
        reference_spread: how much it differed between the processes (SD of the logs).
        cpu_vs_reference: CPU time per op ÷ reference time (an Estimate): the
            speed-normalized median with its 95% CI, unitless; None when not timed.
    """

    id: str
    label: str
    group: str
    stage: str | None
    baseline: bool
    median: Estimate = NO_MEDIAN
    process_spread: float = math.nan
    process_medians_s: list[float] = field(default_factory=list)
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
    alloc_total_bytes: float | None = None
    alloc_total_blocks: float | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    metric_units: dict[str, str] = field(default_factory=dict)
    ratio_best: Estimate | None = None
    ratio_baseline: Estimate | None = None
    baseline_pairs: int = 0
    verdict: str = ""
    metric_ratio_best: dict[str, float] = field(default_factory=dict)
    preempted: int = 0
    preempted_excluded: int = 0
    counted: bool = False
    instructions_per_op: float | None = None
    ipc: float | None = None
    hardware_note: str | None = None
    clock_steps_ns: list[int] = field(default_factory=list)
    ops_per_call: int = 1
    stop_reason: str = ""
    warnings: list[Caveat] = field(default_factory=list)
    error: str | None = None
    reference_s: float = math.nan
    reference_spread: float = math.nan
    cpu_vs_reference: Estimate | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON form (seconds, bytes), with ``unit`` named (see :class:`MedianSummary`)."""
        return self.json_form("s/op", se=True)


def timing_groups(bench: Benchmark) -> list[np.ndarray]:
    """Seconds per op of each process's unflagged samples: P arrays (empty ones dropped).

    An op is one call, or 1/ops_per_call of a call when the benchmark declared
    ``ops=`` (a sample's wall time / calls / ops per call).
    """
    groups = []
    per_call = bench.ops_per_call
    for proc in bench.processes:
        values = [s.wall_ns / s.iterations / per_call * 1e-9 for s in proc.samples if not s.flagged]
        if values:
            groups.append(np.asarray(values))
    return groups


#: bootstrap replicates of a benchmark's median CI (the stopping rule and the summary use
#: the same number and the same generator, so they always agree on the CI)
RESAMPLES = 2000


def median_estimate(
    bench: Benchmark,
    confidence: float = 0.95,
    resamples: int = RESAMPLES,
    rng: np.random.Generator | None = None,
) -> Estimate | None:
    """The median time per op of ``bench`` with its CI and standard error, s.

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
    reached"). The standard error is the median × the SE of its log with several
    processes, the bootstrap CI's half-width / z with one. None when no sample is usable.
    """
    groups = timing_groups(bench)
    if not groups:
        return None
    location = stats.process_location(groups)
    if location is not None:
        return location.ci(confidence)
    rng = rng or np.random.default_rng([0, zlib.crc32(bench.id.encode())])
    est = stats.median_ci(groups, confidence, resamples, rng)
    return replace(est, se=est.half_width / stats.z_quantile(confidence))


def _median(values: Sequence[float | None]) -> float:
    finite = [v for v in values if v is not None]
    return float(np.median(finite)) if finite else math.nan


def summarize(
    bench: Benchmark,
    confidence: float = 0.95,
    resamples: int = RESAMPLES,
    rng: np.random.Generator | None = None,
    precision: float | None = None,
    min_processes: int | None = None,
    n_plus_one: int | None = None,
) -> Summary:
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
        n_plus_one: ``--n-plus-one``: spans of one name per call above this are N+1.

    Returns:
        A Summary; without samples, only identity, error and stop reason are set.
    """
    summary = Summary(
        bench.id,
        bench.label,
        bench.group,
        bench.stage,
        bench.baseline,
        stop_reason=bench.stop_reason,
        error=bench.error,
        metric_units=dict(bench.metric_units),
    )
    median = median_estimate(bench, confidence, resamples, rng)
    if median is None:
        flags = [s.flagged for p in bench.processes for s in p.samples if s.flagged]
        summary.flagged = len(flags)
        clocked = sum(1 for f in flags if f.startswith("clock:"))
        if summary.flagged:
            why = "the clocks disagreed during them"
            if clocked < summary.flagged:  # preempted ones too (analyze/run/counters.py)
                why = (
                    f"the clocks disagreed during {clocked:,}, "
                    f"{summary.flagged - clocked:,} were preempted"
                )
            summary.warnings = [
                Caveat(
                    "samples excluded",
                    f"all {summary.flagged:,}",
                    f"all {plural(summary.flagged, 'sample')} excluded: {why}",
                )
            ]
        return summary
    summary.median = median
    groups = timing_groups(bench)
    _fill_spread(summary, np.concatenate(groups))
    summary.process_spread = stats.process_spread(groups)
    summary.process_medians_s = stats.process_medians(groups).tolist()
    _fill_process_figures(summary, bench)
    summary.reference_s, summary.reference_spread, summary.cpu_vs_reference = reference.figures(
        bench, confidence
    )
    summary.warnings = _caveats(summary, precision, min_processes)
    if (tail := slow_calls(bench, 0)) is not None and tail.heavy_tail:
        figure = f"{tail.tail_share:.0%} {tail.tail_cause}"
        summary.warnings.append(Caveat("heavy tail", figure, tail.tail_text))
    for name, n in repeated_spans(summary.metrics, n_plus_one):
        summary.warnings.append(Caveat("N+1", f"{name} ×{n:g}", f"{name} ran {n:g} times a call"))
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
    # perflab's harness measures every process's loop overhead; an imported pyperf or
    # pytest-benchmark file has none, nor CPU time or GC: those figures are unknown
    harness = wall and any(p.loop_overhead_ns is not None for p in procs)
    summary.cpu_wall = sum(s.cpu_ns for s in samples) / wall if harness else math.nan
    ops = summary.ops_per_call = bench.ops_per_call
    summary.gc_per_1000_ops = (
        1000 * sum(s.gc_collections for s in samples) / iterations / ops if harness else math.nan
    )
    summary.gc_time_fraction = sum(s.gc_ns for s in samples) / wall if harness else math.nan
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
    totals = [p.alloc_total_bytes for p in procs if p.alloc_total_bytes is not None]
    summary.alloc_total_bytes = _median(totals) / ops if totals else None
    counts = [p.alloc_total_blocks for p in procs if p.alloc_total_blocks is not None]
    summary.alloc_total_blocks = _median(counts) / ops if counts else None
    summary.preempted = _preempted(samples, 0.5 if (bench.threads or 1) > 1 else CPU_BOUND_QUANTILE)
    if (counted := counter_figures(bench)) is not None:  # per-sample counters: no guessing
        summary.preempted, summary.preempted_excluded = (
            counted.preempted,
            counted.preempted_excluded,
        )
        summary.instructions_per_op, summary.ipc = counted.instructions_per_op, counted.ipc
        summary.hardware_note, summary.counted = counted.hardware_note, True
    summary.clock_steps_ns = [
        p.clock_skew_ns or 0
        for p in procs
        if p.clock_flag and not any(x.flagged for x in p.samples)
    ]
    names = sorted({k for p in procs for k in p.metrics})
    summary.metrics = {k: _median([p.metrics.get(k) for p in procs]) for k in names}


def _preempted(samples: Sequence[Any], quantile: float) -> int:
    """Samples that lost the CPU: CPU/wall < 0.9 in a benchmark whose ``quantile`` of
    sample CPU/wall is ≥ 0.95 (CPU-bound: CPU_BOUND_QUANTILE, 0.9, says why not the
    median; threads mode passes 0.5, because threads that wait for each other's locks
    lower CPU/wall in some samples by their own doing). For such code wall time minus
    CPU time is time spent waiting for a core, so these samples measure the machine's
    load, not the code."""
    ratios = np.array([s.cpu_ns / s.wall_ns for s in samples if s.wall_ns > 0])
    if ratios.size == 0 or np.quantile(ratios, quantile) < CPU_BOUND:
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
    out += _preempted_caveats(s)
    if not s.counted and s.preempted > BUSY_FRACTION * s.samples:
        figure = f"{s.preempted / s.samples:.0%}"
        out.append(
            Caveat(
                "busy machine",
                figure,
                f"{figure} of samples got under 90% of a "
                "core (CPU/wall < 0.9) while the code is CPU-bound",
            )
        )
    if s.timer_error_fraction > 0.001:
        figure = f"{s.timer_error_fraction:.2%}"
        out.append(
            Caveat("too short for the clock", figure, f"timer error is {figure} of a sample")
        )
    if s.loop_overhead_s > OVERHEAD_HEAVY * s.median_s:
        figure = f"{s.loop_overhead_s / s.median_s:.0%}"
        out.append(
            Caveat(
                "near the loop cost",
                figure,
                f"the harness loop alone takes {figure} of the time per op",
            )
        )
    if s.gc_time_fraction > GC_DOMINATED:
        figure = f"{s.gc_time_fraction:.0%}"
        out.append(Caveat("GC-dominated", figure, f"{figure} of the time was garbage collection"))
    if clocked := s.flagged - s.preempted_excluded:
        out.append(
            Caveat(
                "samples excluded",
                f"{clocked:,}",
                f"{plural(clocked, 'sample')} excluded: the clocks disagreed during them",
            )
        )
    if s.clock_steps_ns:
        worst = max(s.clock_steps_ns, key=abs)
        figure = f"{abs(worst) / 1e9:.3g} s"
        out.append(
            Caveat(
                "clock step between samples",
                figure,
                f"the clocks disagreed by up to {figure} between samples of "
                f"{plural(len(s.clock_steps_ns), 'process', 'processes')} (no sample affected)",
            )
        )
    return out


def _preempted_caveats(s: Summary) -> list[Caveat]:
    """The preempted samples that per-sample counters named: excluded, or kept where a
    process had too few clean samples (:func:`perflab.analyze.run.counters.flag_preempted`)."""
    if not s.counted:
        return []  # an older file: the CPU/wall rule's "busy machine" speaks
    total = s.samples + s.flagged
    out = []
    if s.preempted_excluded:
        figure = f"{s.preempted_excluded:,} of {total:,}"
        out.append(
            Caveat(
                "preempted samples excluded",
                figure,
                f"{figure} samples preempted, left out of the statistics",
            )
        )
    if kept := s.preempted - s.preempted_excluded:
        figure = f"{kept:,} of {total:,}"
        out.append(Caveat("preempted samples kept", figure, f"{figure} samples preempted, kept"))
    return out


def _stop_caveat(s: Summary, precision: float | None, min_processes: int | None) -> Caveat | None:
    """Why the run stopped before the asked precision, worded from the stop reason the
    runner recorded and the same CI it decided on (:func:`median_estimate`)."""
    if precision is None or s.stop_reason not in ("budget", "max-processes"):
        return None
    reached = s.median.relative_half_width
    figure = f"±{reached:.1%}"
    where = "at the budget" if s.stop_reason == "budget" else "at --max-processes"
    if reached <= precision:
        if min_processes is None or s.processes >= min_processes:
            return None
        return Caveat(
            "precision not reached",
            figure,
            f"stopped {where} after {plural(s.processes, 'process', 'processes')}, fewer than "
            f"--min-processes {min_processes}; {figure} is not yet trustworthy",
        )
    spread = (
        f"; the processes' medians differ by {s.process_spread:.1%} (SD)"
        if math.isfinite(s.process_spread)
        else ""
    )
    return Caveat(
        "precision not reached",
        figure
        + (f" (processes ±{s.process_spread:.1%})" if math.isfinite(s.process_spread) else ""),
        f"stopped {where} with {figure}, ±{precision:.1%} asked{spread}",
    )
