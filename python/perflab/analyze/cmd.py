"""Statistics of ``perflab cmd`` results: one :class:`CommandSummary` per command.

A summary is derived from the command's raw :class:`perflab.model.CommandRun` records
and always recomputable from a results file; :mod:`perflab.report.cmd_table` renders
it. Methods: median with a percentile bootstrap CI, ratios of medians with a
bootstrap CI that resamples interleaving blocks, keeping both commands' runs of a
block together (:mod:`perflab.analyze.stats`; every run is its own process, so the
hierarchical bootstrap reduces to the ordinary one), MAD, modified z-score outliers
(Iglewicz & Hoaglin 1993), and the user/system/total/real columns of Ruby's
``Benchmark.bm``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from perflab.analyze import stats
from perflab.analyze.decisions import FAILED, verdict
from perflab.analyze.paired import PairedRatio, paired_ratio
from perflab.analyze.run.summary import NO_MEDIAN, UNSTABLE_SPREAD, Caveat, MedianSummary, plural
from perflab.model import Benchmark, CommandRun, Results
from perflab.model.estimate import Estimate

#: Spawn overhead above this fraction of a command's median gets a warning.
NEAR_SPAWN_COST = 0.30
#: Why a command stopped, in the words of the table's notes ("" when nothing to say).
STOP_WORDS = {
    "precision": "",
    "budget": "budget hit",
    "max-runs": "max runs",
    "failed": "FAILED",
    "interrupted": "interrupted",
    "done": "",
}


@dataclass
class CommandSummary(MedianSummary):
    """Derived statistics of one command. Times in seconds per run, sizes in bytes.

    Attributes:
        id / label: identify the command (``Benchmark.id`` / ``Benchmark.label``).
        runs: successful timed runs (the ones in the statistics).
        failed: timed runs that failed (timeout, signal, exit code not ignored).
        nonzero: successful runs whose non-zero exit was accepted (--ignore-failure).
        warmup: warmup runs (never in the statistics).
        flagged: successful runs excluded because the clocks disagreed during their batch.
        median: median wall time, s, with its bootstrap CI (``median_s`` is its value; in
            JSON ``median_s``, ``ci_low_s``, ``ci_high_s``).
        mean_s, std_s: mean wall time and its sample standard deviation.
        mad_s: MAD of wall times (scaled by 1.4826); min_s / max_s: range.
        user_s, sys_s, total_s, real_s: mean user, system, user+system and wall
            time per run (Ruby's ``Benchmark.bm`` columns).
        cpu_wall: total CPU / total wall time over the runs.
        max_rss_bytes: median over runs of each run's peak RSS; max_rss_peak_bytes: the largest.
        tree_rss_peak_bytes / tree_rss_growth_bytes: ``--memory``: medians over runs of
            the summed RSS of the command and its descendants at its highest, and of its
            growth over the run (last reading − first); NaN without --memory.
        outliers: runs with |modified z| > 3.5 (flagged, kept in the statistics).
        ratio: this command / the reference with its CI (exactly 1 for the reference),
            or None; in JSON [ratio, low, high]: the paired ratio of the runs of one
            interleaving block (:mod:`perflab.analyze.paired`) when at least
            :data:`perflab.analyze.stats.MIN_PAIRED_BLOCKS` blocks ran both, else the
            ratio of the medians (block bootstrap).
        pairs: the pairs of runs ``ratio`` came from; 0 when it is not paired.
        reference: True for the row the ratios are taken against.
        verdict: this command against the reference, decided from the ratio's CI and
            the noise threshold as ``perflab compare`` decides (faster, slower, same,
            inconclusive; failed when it has no statistics; "" for the reference).
        stop_reason / error / warnings: why it stopped, failure, plain-words caveats
            (:data:`CMD_CAVEATS`).
    """

    id: str
    label: str
    runs: int = 0
    failed: int = 0
    nonzero: int = 0
    warmup: int = 0
    flagged: int = 0
    median: Estimate = NO_MEDIAN
    mean_s: float = math.nan
    std_s: float = math.nan
    mad_s: float = math.nan
    min_s: float = math.nan
    max_s: float = math.nan
    user_s: float = math.nan
    sys_s: float = math.nan
    total_s: float = math.nan
    real_s: float = math.nan
    cpu_wall: float = math.nan
    max_rss_bytes: float = math.nan
    max_rss_peak_bytes: float = math.nan
    tree_rss_peak_bytes: float = math.nan
    tree_rss_growth_bytes: float = math.nan
    outliers: int = 0
    ratio: Estimate | None = None
    pairs: int = 0
    reference: bool = False
    verdict: str = ""
    stop_reason: str = ""
    error: str | None = None
    warnings: list[Caveat] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON form (seconds, bytes), with ``unit`` named (see :class:`MedianSummary`)."""
        return self.json_form("s/run", se=False)


def timed_runs(bench: Benchmark) -> list[CommandRun]:
    """The successful, non-warmup runs whose clocks agreed: the ones in the statistics."""
    return [r for r in bench.runs if r.ok and not r.warmup and not r.flagged]


def summarize_command(
    bench: Benchmark,
    confidence: float = 0.95,
    resamples: int = 2000,
    rng: np.random.Generator | None = None,
) -> CommandSummary:
    """Statistics of one command from its runs (no ratios; see :func:`summarize_commands`).

    Args:
        bench: a Benchmark of kind "command" with its ``runs``.
        confidence: CI level.
        resamples: bootstrap replicates.
        rng: random generator of the bootstrap.

    Returns:
        The summary; without successful runs only counts, stop reason and error are set.
    """
    runs = timed_runs(bench)
    s = CommandSummary(
        bench.id,
        bench.label,
        runs=len(runs),
        stop_reason=bench.stop_reason,
        error=bench.error,
        failed=sum(1 for r in bench.runs if not r.ok and not r.warmup),
        nonzero=sum(1 for r in runs if r.exit_code),
        warmup=sum(1 for r in bench.runs if r.warmup),
        flagged=sum(1 for r in bench.runs if r.ok and not r.warmup and r.flagged),
    )
    if not runs:
        return s
    wall = np.array([r.wall_ns for r in runs]) * 1e-9
    s.median = stats.median_ci([wall], confidence, resamples, rng)
    s.mean_s, s.std_s = float(wall.mean()), float(wall.std(ddof=1)) if wall.size > 1 else 0.0
    s.mad_s, s.min_s, s.max_s = stats.mad(wall), float(wall.min()), float(wall.max())
    s.outliers = int(stats.outlier_mask(wall).sum())
    _fill_cpu(s, runs)
    return s


def _fill_cpu(s: CommandSummary, runs: Sequence[CommandRun]) -> None:
    """Ruby-``Benchmark.bm`` means per run, CPU/wall and RSS. CPU figures stay NaN
    (unknown) when a run lacks its CPU times (an imported file without them)."""
    s.real_s = s.mean_s
    if all(r.user_ns is not None and r.sys_ns is not None for r in runs):  # else unknown: NaN
        s.user_s = float(np.mean([r.user_ns for r in runs])) * 1e-9
        s.sys_s = float(np.mean([r.sys_ns for r in runs])) * 1e-9
        s.total_s = s.user_s + s.sys_s
    s.cpu_wall = s.total_s / s.real_s if s.real_s > 0 else math.nan
    rss = [r.max_rss_bytes for r in runs]
    if any(rss):  # all 0: not recorded (an imported hyperfine file)
        s.max_rss_bytes, s.max_rss_peak_bytes = float(np.median(rss)), float(max(rss))
    peaks = [r.tree_rss_peak_bytes for r in runs if r.tree_rss_peak_bytes is not None]
    growths = [r.tree_rss_growth_bytes for r in runs if r.tree_rss_growth_bytes is not None]
    if peaks:  # each figure over the runs that recorded it (a file may hold one and not the other)
        s.tree_rss_peak_bytes = float(np.median(peaks))
    if growths:
        s.tree_rss_growth_bytes = float(np.median(growths))


def summarize_commands(
    benches: Sequence[Benchmark],
    reference: int | None = None,
    spawn_overhead_ns: Sequence[int] = (),
    confidence: float = 0.95,
    precision: float | None = None,
    seed: int | None = 0,
    threshold: float = 0.02,
) -> list[CommandSummary]:
    """Summaries of all commands with ratios against the reference (default: the fastest).

    The ratio is paired: the runs of this command and of the reference in one
    interleaving block form a pair, and B/A is estimated from the pairs' ratios
    (:func:`perflab.analyze.paired.paired_ratio`: one series cut into batches), as every
    verdict between two things measured together is; with fewer than
    :data:`perflab.analyze.stats.MIN_PAIRED_BLOCKS` pairs (``--no-interleave``), the
    ratio of the medians with a bootstrap CI (:func:`perflab.analyze.stats.block_ratio_ci`).
    A fixed default seed makes re-rendering a file print the same CIs.

    Args:
        benches: the commands' raw data.
        reference: index of the reference command, or None for the lowest median.
        spawn_overhead_ns: empty-process wall times, for the "near the spawn cost" warning.
        confidence: CI level.
        precision: the run's target, to word the "stopped before precision" warning.
        seed: bootstrap seed.
        threshold: the noise threshold t of the verdicts (ratio within 1 ± t: same).

    Returns:
        Summaries in input order.
    """
    rng = np.random.default_rng(seed)
    summaries = [summarize_command(b, confidence, rng=rng) for b in benches]
    ok = [i for i, s in enumerate(summaries) if s.ok]
    if ok:
        ref = reference if reference in ok else min(ok, key=lambda i: summaries[i].median_s)
        summaries[ref].reference = True
        summaries[ref].ratio = Estimate(1.0, 1.0, 1.0, confidence, 0.0)
        for i in ok:
            if i != ref:
                pair = _paired(benches[ref], benches[i], confidence)
                if pair is not None:
                    summaries[i].ratio, summaries[i].pairs = pair.ratio, pair.pairs
                else:
                    summaries[i].ratio = stats.block_ratio_ci(
                        *_walls(benches[i]), *_walls(benches[ref]), confidence, 2000, rng
                    )
    for s in summaries:
        s.verdict = (
            ""
            if s.reference
            else FAILED
            if not s.ok or s.ratio is None
            else verdict(s.ratio.ci_low, s.ratio.ci_high, threshold)
        )
    overhead = float(np.median(spawn_overhead_ns)) * 1e-9 if len(spawn_overhead_ns) else None
    for s in summaries:
        s.warnings = _warnings(s, precision, overhead)
    return summaries


def summarize_results(results: Results) -> list[CommandSummary]:
    """The summaries of a ``cmd`` results file, with the reference, confidence and
    precision its settings recorded (see :func:`summarize_commands`)."""
    s = results.settings
    return summarize_commands(
        results.benchmarks,
        s.get("reference"),
        results.spawn_overhead_ns,
        s.get("confidence", 0.95),
        s.get("precision"),
        threshold=s.get("threshold", 0.02),
    )


def _paired(ref: Benchmark, bench: Benchmark, confidence: float) -> PairedRatio | None:
    """The paired ratio bench/ref of their runs in the same blocks, in block order; None
    with fewer than MIN_PAIRED_BLOCKS such pairs."""
    walls, blocks = _walls(bench)
    ref_walls, ref_blocks = _walls(ref)
    where = {b: k for k, b in enumerate(ref_blocks) if b is not None}
    index = sorted((b, where[b], k) for k, b in enumerate(blocks) if b is not None and b in where)
    if len(index) < stats.MIN_PAIRED_BLOCKS:
        return None
    a = ref_walls[[j for _, j, _ in index]]
    return paired_ratio([(a, walls[[k for _, _, k in index]])], confidence)


def _walls(bench: Benchmark) -> tuple[np.ndarray, list[int | None]]:
    """Wall seconds of the runs in the statistics, shape (n,), and each run's block."""
    runs = timed_runs(bench)
    return np.array([r.wall_ns for r in runs]) * 1e-9, [r.block for r in runs]


#: kind → (what it means, shown once per kind; what to do, shown once per kind): the
#: caveats of a command, grouped by kind in the table's footnotes as ``run``'s
#: (:data:`perflab.analyze.run.summary.CAVEATS`, :func:`perflab.report.run_table.caveat_lines`)
CMD_CAVEATS = {
    "unstable": (
        f"runs vary by more than {UNSTABLE_SPREAD:.0%} (MAD/median)",
        "close other programs, or use --prepare to reset state between runs",
    ),
    "precision not reached": (
        "the budget or --max-runs ran out before the CI of the median "
        "(and of the ratio) was as narrow as asked",
        "raise --budget or --max-runs",
    ),
    "near the spawn cost": (
        "spawning an empty process alone takes this share of the time, "
        "so the command's own cost is a small part of what is timed",
        "",
    ),
    "failed runs": ("timeouts, signals or non-zero exits, left out of the statistics", ""),
    "non-zero exits": ("runs that exited non-zero, accepted by --ignore-failure", ""),
    "runs excluded": (
        "the clocks disagreed during them; they are kept in the results file "
        "and left out of the statistics",
        "check this machine with perflab doctor",
    ),
}


def _warnings(s: CommandSummary, precision: float | None, overhead_s: float | None) -> list[Caveat]:
    """Plain-words caveats about how far the numbers can be trusted (kinds of
    :data:`CMD_CAVEATS`)."""
    out = []
    if s.ok and s.mad_s > UNSTABLE_SPREAD * s.median_s:
        out.append(
            Caveat(
                "unstable",
                f"±{s.mad_s / s.median_s:.0%}",
                f"unstable: runs vary by ±{s.mad_s / s.median_s:.0%} (MAD/median)",
            )
        )
    if (
        s.ok
        and precision is not None
        and s.stop_reason in ("budget", "max-runs")
        and max(s.median.relative_half_width, _ratio_half(s)) > precision
    ):
        reached = f"±{s.median.relative_half_width:.1%}{_ratio_width(s)}"
        figure = (
            f"±{s.median.relative_half_width:.1%} ("
            + (f"ratio ±{_ratio_half(s):.1%}, " if _ratio_half(s) else "")
            + f"{STOP_WORDS[s.stop_reason]})"
        )
        stop = STOP_WORDS[s.stop_reason]
        out.append(
            Caveat(
                "precision not reached",
                figure,
                f"precision not reached ({stop}): median {reached} reached, ±{precision:.1%} asked",
            )
        )
    if s.ok and overhead_s is not None and overhead_s > NEAR_SPAWN_COST * s.median_s:
        out.append(
            Caveat(
                "near the spawn cost",
                f"{overhead_s / s.median_s:.0%}",
                f"near the spawn cost: spawning an empty process alone takes "
                f"{overhead_s / s.median_s:.0%} of its time",
            )
        )
    if s.failed:
        out.append(
            Caveat(
                "failed runs",
                plural(s.failed, "run"),
                f"{s.failed} failed runs (timeout, signal or exit code) are left "
                "out of the statistics",
            )
        )
    if s.nonzero:
        out.append(
            Caveat(
                "non-zero exits",
                plural(s.nonzero, "run"),
                f"{s.nonzero} runs exited non-zero (accepted by --ignore-failure)",
            )
        )
    if s.flagged:
        out.append(
            Caveat(
                "runs excluded",
                plural(s.flagged, "run"),
                f"{s.flagged} runs excluded: the clocks disagreed during them (see "
                "perflab doctor); they are kept in the results file",
            )
        )
    return out


def _ratio_half(s: CommandSummary) -> float:
    """Relative half-width of the ratio's CI (0 for the reference or without a ratio)."""
    if s.ratio is None or s.reference:
        return 0.0
    return s.ratio.relative_half_width


def _ratio_width(s: CommandSummary) -> str:
    return f", ratio ±{_ratio_half(s):.1%}" if _ratio_half(s) else ""


@dataclass(frozen=True)
class SpawnOverhead:
    """The wall time of an empty process (``true``, or the shell's ``-c ""``), measured
    beside the commands: included in every time of a ``cmd`` run, not subtracted.

    Attributes:
        runs: empty processes timed.
        p5_s / p50_s / p95_s: 5th, 50th and 95th percentile of their wall times, s
            (linear interpolation, numpy's default).
    """

    runs: int
    p5_s: float
    p50_s: float
    p95_s: float


def spawn_overhead(spawn_overhead_ns: Sequence[int]) -> SpawnOverhead | None:
    """The percentiles of the empty-process wall times (ns, as results files hold them);
    None when none was measured."""
    if not len(spawn_overhead_ns):
        return None
    values = np.asarray(spawn_overhead_ns, dtype=float) * 1e-9
    p5, p50, p95 = np.percentile(values, [5, 50, 95])
    return SpawnOverhead(len(spawn_overhead_ns), float(p5), float(p50), float(p95))
