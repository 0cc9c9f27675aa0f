"""Comparisons of two results files: is B faster, slower, the same, or can't we tell?

For each benchmark present in both files (matched by :attr:`Benchmark.id`)
this module computes the ratio B/A of a location estimate with a bootstrap
CI, a p-value and a verdict; across the suite it adds the Benjamini–Hochberg
correction, the geometric mean of the ratios with its CI, verdict counts,
and plain-words warnings when the two environments differ.

Methods (the verdict rule and the tests are :mod:`perflab.analyze.decisions`'s):
    * python benchmarks: each side's median and CI are exactly what ``perflab run``
      printed for it (:func:`perflab.analyze.run.summary.median_estimate`: the geometric
      mean of the processes' medians with the random-effects t-interval, P − 1 df);
      B/A is the ratio of the two locations, its CI the t-interval of the difference of
      their logs (variances add, Welch–Satterthwaite df:
      :class:`perflab.analyze.stats.LogLocation`); its log-replicates for the suite's
      geometric mean are draws from that t distribution (a parametric bootstrap). With a
      single process on a side, the bootstrap below stands in;
    * commands (each run is a process with one value, its wall time) and single-process
      sides: ratio of pooled medians with a hierarchical bootstrap (processes, then
      samples within them; Davison & Hinkley 1997 §3.8), its percentile CI widened
      for the number of processes of the smaller side (Hesterberg's expanded
      percentile);
    * every ratio CI is judged against the noise threshold: faster, slower, same or
      inconclusive;
    * p-value: two-sided Mann–Whitney U on per-process values, because samples
      inside one process are not independent;
    * suite: Benjamini–Hochberg q-values; geometric mean of the ratios, its CI
      from the per-benchmark bootstrap replicates;
    * HTTP steps: latency percentiles from the HdrHistograms, their CIs from
      the order-statistic bootstrap (the m-th of N draws is F⁻¹(U), U ~
      Beta(m, N−m+1)); achieved rate by the exact Poisson rate-ratio test
      (conditional binomial, Clopper–Pearson CI; Przyborowski & Wilenski 1940);
    * trace spans (``perflab.trace`` dumps): each span name's duration percentiles,
      the same way as HTTP latencies;
    * python benchmarks also at equal machine speed (CPU time ÷ the machine-speed
      reference), a row for reading beside the seconds: :mod:`perflab.analyze.compare.speed`;
      when the machine's speed moved between the two runs beyond the threshold, no
      seconds verdict is slower or faster (the runs are not paired; ``held``).
"""

from __future__ import annotations

from collections.abc import Sequence

from perflab.analyze.compare.counts import count_row, is_counted
from perflab.analyze.compare.http import compare_http, compare_spans, step_verdict_lines
from perflab.analyze.compare.memory import memory_rows
from perflab.analyze.compare.speed import (
    hold_verdicts,
    machine_speed,
    machine_speed_warning,
    speed_normalized_row,
)
from perflab.analyze.compare.timing import DRIFTING_RUN_SHARE, MACHINE_WIDE_SHARE, compare_timed
from perflab.analyze.decisions import (
    FAILED,
    FASTER,
    INCONCLUSIVE,
    SLOWER,
    VERDICTS,
    benjamini_hochberg,
    geometric_mean_ci,
    verdict,
)
from perflab.analyze.run.summary import timing_groups
from perflab.environment import environment_differences
from perflab.errors import UsageError
from perflab.model import Benchmark, Results
from perflab.model.comparison import (
    DEFAULT_PERCENTILES,
    DEFAULT_THRESHOLD,
    MEMORY,
    MEMORY_VERDICTS,
    SPEED_NORMALIZED,
    Row,
    SuiteComparison,
)


def _index(benches: Sequence[Benchmark]) -> dict[str, Benchmark]:
    """Benchmarks by id; a repeated id gets " #2", " #3"… so none is dropped."""
    out: dict[str, Benchmark] = {}
    for bench in benches:
        key, n = bench.id, 2
        while key in out:
            key, n = f"{bench.id} #{n}", n + 1
        out[key] = bench
    return out


def _cost(results: Results, ids: Sequence[str]) -> dict[str, int]:
    """What the compared benchmarks of one file cost: benchmarks, processes, samples."""
    chosen = [b for key, b in _index(results.benchmarks).items() if key in set(ids)]
    processes = sum(len(timing_groups(b)) for b in chosen)
    processes += sum(sum(r.ok and not r.warmup for r in b.runs) for b in chosen)
    samples = sum(g.size for b in chosen for g in timing_groups(b))
    samples += sum(sum(r.ok and not r.warmup for r in b.runs) for b in chosen)
    requests = sum(s.requests_sent for b in chosen for s in b.steps)
    return {
        "benchmarks": len(chosen),
        "processes": processes,
        "samples": samples,
        "requests": requests,
    }


def _no_common(names: tuple[str, str], ids_a: Sequence[str], ids_b: Sequence[str]) -> UsageError:
    def some(ids: Sequence[str]) -> str:
        shown = ", ".join(repr(i) for i in ids[:3])
        return (shown + ", …" if len(ids) > 3 else shown) or "no benchmarks"

    return UsageError(
        f"{names[0]} and {names[1]} have no benchmark in common ({names[0]} has "
        f"{some(ids_a)}; {names[1]} has {some(ids_b)}); compare two results of "
        "the same suite (ids are group/name[stage](params))"
    )


def compare_benchmark(
    a: Benchmark,
    b: Benchmark,
    threshold: float = DEFAULT_THRESHOLD,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
    percentiles: Sequence[float] = DEFAULT_PERCENTILES,
    count_threshold: float | None = None,
    paired: bool = False,
) -> list[Row]:
    """Rows comparing one benchmark of A with its match in B, verdicts included
    (``paired``: A and B were measured together, see :func:`compare_results`).

    A counted benchmark (``--count instructions``) is judged on instructions per op
    (:func:`perflab.analyze.compare.counts.count_row`, at ``count_threshold``, None: from
    its layout bands); a counted command also on its seconds.

    Memory figures both sides have follow the time rows
    (:func:`perflab.analyze.compare.memory.memory_rows`: allocations, RSS peak and growth).

    Returns:
        One row (python, command) or several (http: per step and metric; trace: per
        percentile of the span's durations), then the memory rows;
        a "failed" row when the kinds differ.
    """
    rows = _time_rows(
        a, b, threshold, confidence, resamples, seed, percentiles, count_threshold, paired
    )
    return rows + memory_rows(a, b, threshold, confidence, resamples, seed)


def _time_rows(
    a: Benchmark,
    b: Benchmark,
    threshold: float,
    confidence: float,
    resamples: int,
    seed: int,
    percentiles: Sequence[float],
    count_threshold: float | None,
    paired: bool,
) -> list[Row]:
    """The time (or count) rows of :func:`compare_benchmark`."""
    if a.kind != b.kind:
        return [
            Row(
                a.id,
                a.kind,
                "time",
                "s",
                verdict=FAILED,
                primary=False,
                notes=[f"A measured it as {a.kind!r}, B as {b.kind!r}"],
            )
        ]
    if a.kind == "http":
        rows = compare_http(a, b, percentiles, confidence, resamples, seed)
    elif a.kind == "trace":
        rows = compare_spans(a, b, percentiles, confidence, resamples, seed)
    elif a.kind == "python" and (is_counted(a) or is_counted(b)):
        return [count_row(a, b, count_threshold)]
    else:
        rows = [compare_timed(a, b, confidence, resamples, seed, threshold, paired)]
        normalized = speed_normalized_row(a, b, confidence)
        rows += [normalized] if normalized is not None and rows[0].verdict != FAILED else []
        if is_counted(a) or is_counted(b):
            return [*_judged(rows, threshold), count_row(a, b, count_threshold)]
    return _judged(rows, threshold)


def _judged(rows: list[Row], threshold: float) -> list[Row]:
    """``rows`` with each verdict set from its ratio's CI against ``threshold``."""
    for row in rows:
        if row.verdict != FAILED and row.ratio is not None:
            row.verdict = verdict(
                row.ratio.ci_low, row.ratio.ci_high, threshold, row.higher_is_better
            )
    return rows


def compare_results(
    a: Results,
    b: Results,
    threshold: float = DEFAULT_THRESHOLD,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
    percentiles: Sequence[float] = DEFAULT_PERCENTILES,
    names: tuple[str, str] = ("A", "B"),
    count_threshold: float | None = None,
    paired: bool = False,
) -> SuiteComparison:
    """Compare every benchmark of B with its match in A, then summarize the suite.

    Args:
        a / b: the baseline and the candidate results.
        threshold: noise threshold t (0.02 = ±2%).
        confidence: CI level.
        resamples: bootstrap replicates per benchmark.
        seed: bootstrap seed (each row derives its own stream from its id).
        percentiles: latency percentiles compared for HTTP steps, e.g. 99.9.
        names: how to call A and B in messages (e.g. the file names).
        count_threshold: the threshold of rows on instruction counts, when the user set
            one (None: each row's from its layout bands; see docs/count.md).
        paired: A's benchmarks were measured in the same run as B's, paired with them
            (``run --compare-to REF``): each ratio is the paired ratio of their pairs
            (:mod:`perflab.analyze.paired`) where they have some. Never for two files
            measured apart, whose process records could look paired by accident.

    Returns:
        The suite comparison.

    Raises:
        UsageError: no benchmark in common.
    """
    by_a, by_b = _index(a.benchmarks), _index(b.benchmarks)
    common = [k for k in by_a if k in by_b]
    if not common:
        raise _no_common(names, list(by_a), list(by_b))
    rows = [
        row
        for key in common
        for row in compare_benchmark(
            by_a[key],
            by_b[key],
            threshold,
            confidence,
            resamples,
            seed,
            percentiles,
            count_threshold,
            paired,
        )
    ]
    suite = SuiteComparison(
        rows,
        [k for k in by_a if k not in by_b],
        [k for k in by_b if k not in by_a],
        threshold=threshold,
        confidence=confidence,
        environment=environment_differences(a.environment, b.environment),
        cost={"A": _cost(a, common), "B": _cost(b, common)},
    )
    speed = None if paired else machine_speed(a.benchmarks, b.benchmarks, threshold, confidence)
    if speed is not None:  # not paired, and the machine moved: no slower/faster verdict
        suite.machine_speed, suite.machine_words = speed.ratio, speed.words
        suite.held = hold_verdicts(rows, speed)
    _summarize(suite)
    suite.warnings += [machine_speed_warning(speed)] if speed is not None else []
    suite.warnings += step_verdict_lines(a, b)  # http: steps that were not ok on a side
    pairs = [r.pairs for r in rows if r.pairs]
    if pairs:
        lockstep = any(
            p.pair is not None and p.pair.get("mode") == "lockstep"
            for bench in b.benchmarks
            for p in bench.processes
        )
        how = (
            "in lock-step with B, sample by sample, in two worker processes at once"
            if lockstep
            else "alternately with B, sample by sample, in the same worker processes"
        )
        suite.warnings.insert(
            0,
            f"B/A paired: A ({names[0]}) was measured in this run, {how} "
            f"({min(pairs):,}–{max(pairs):,} pairs a benchmark); each side's ± CI is its "
            "own median's (docs/compare.md)",
        )
    return suite


def _summarize(suite: SuiteComparison) -> None:
    """Fill q-values, counts, the geometric mean and suite-wide warnings."""
    _apply_bh([r for r in suite.rows if not r.is_memory])  # two families, two corrections
    _apply_bh([r for r in suite.rows if r.is_memory])
    counted = [r for r in suite.rows if r.metric != SPEED_NORMALIZED and not r.is_memory]
    suite.counts = {v: sum(r.verdict == v for r in counted) for v in VERDICTS}
    memory = [r for r in suite.rows if r.is_memory]
    suite.memory_counts = (
        {v: sum(r.verdict == v for r in memory) for v in MEMORY_VERDICTS} if memory else {}
    )
    primary = [
        r for r in suite.rows if r.primary and r.ratio is not None and r.log_replicates is not None
    ]
    if primary:
        suite.geomean = geometric_mean_ci(
            [r.log_replicates for r in primary], [r.ratio.value for r in primary], suite.confidence
        )
        suite.geomean_verdict = verdict(
            suite.geomean.ci_low, suite.geomean.ci_high, suite.threshold
        )
        if suite.machine_speed is not None and suite.geomean_verdict in (SLOWER, FASTER):
            suite.geomean_verdict = INCONCLUSIVE
        suite.geomean_over = len(primary)
    suite.warnings = _suite_warnings(suite, primary)


def _apply_bh(rows: list[Row]) -> None:
    """Benjamini–Hochberg over one p-value per test (rows sharing a test share its q)."""
    if not rows:
        return
    tests: dict[str, float] = {}
    for row in rows:
        tests.setdefault(row.test_key or row.id, row.p_value)
    q_by_key = dict(zip(tests, benjamini_hochberg(list(tests.values()))))
    for row in rows:
        row.q_value = float(q_by_key[row.test_key or row.id])


def _suite_warnings(suite: SuiteComparison, primary: list[Row]) -> list[str]:
    """A run that drifted, or a move shared by nearly every benchmark, hints at the machine."""
    out = _drift_warnings(suite)
    if len(primary) < 5:
        return out
    for word in (SLOWER, FASTER):
        share = sum(r.verdict == word for r in primary) / len(primary)
        if share >= MACHINE_WIDE_SHARE:
            out.append(
                f"{share:.0%} of the benchmarks are {word}: a machine-wide change "
                "(load, CPU frequency, thermal state, interpreter) is a likelier cause "
                "than the code; check the environment notes and re-run both"
            )
    return out


def _drift_warnings(suite: SuiteComparison) -> list[str]:
    timed = [
        r
        for r in suite.rows
        if r.kind in ("python", "command") and r.ratio is not None and not r.is_memory
    ]
    out = []
    for side in ("A", "B"):
        moved = [r.drift[side] for r in timed if side in r.drift]
        if len(moved) >= 2 and len(moved) >= DRIFTING_RUN_SHARE * len(timed):
            out.append(
                f"{side}'s machine changed during its run: {len(moved)} of {len(timed)} "
                f"benchmarks moved by more than ±{suite.threshold:.0%} (up to "
                f"{max(moved, key=abs):+.1%}) between the first and second half of "
                "their processes. Runs made at different times differ by as much, which "
                "CIs computed inside each run don't cover: measure A and B interleaved, "
                "or raise --threshold"
            )
    return out


def fail_on_words() -> tuple[str, ...]:
    """Words accepted by ``--fail-on``: the verdicts of time rows, "missing" (ids only in
    A) and "memory" (a memory row reading more: allocations, RSS peak or growth)."""
    return (*VERDICTS, "missing", MEMORY)


def parse_fail_on(text: str) -> list[str]:
    """ "slower,inconclusive" → ["slower", "inconclusive"]. Raises UsageError on other words."""
    words = [w.strip().lower() for w in text.split(",") if w.strip()]
    bad = [w for w in words if w not in fail_on_words()]
    if bad:
        raise UsageError(
            f"--fail-on {', '.join(bad)}: not a verdict; use some of "
            f"{', '.join(fail_on_words())}, comma separated"
        )
    return words
