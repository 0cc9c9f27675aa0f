"""Comparisons of two results files: is B faster, slower, the same, or can't we tell?

For each benchmark present in both files (matched by :attr:`Benchmark.id`)
this module computes the ratio B/A of a location estimate with a bootstrap
CI, a p-value and a verdict; across the suite it adds the Benjamini–Hochberg
correction, the geometric mean of the ratios with its CI, verdict counts,
and plain-words warnings when the two environments differ.

Methods (the verdict rule and the tests are :mod:`perflab.analyze.decisions`'s):
    * python benchmarks: each side's median and CI are exactly what ``perflab run``
      printed for it (:func:`perflab.analyze.summary.median_estimate`: the geometric
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
      reference), a row for reading beside the seconds: :mod:`perflab.analyze.compare_speed`.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence

import numpy as np

from perflab.analyze import stats
from perflab.analyze.compare_rows import (
    DEFAULT_PERCENTILES,
    DEFAULT_THRESHOLD,
    SPEED_NORMALIZED,
    Row,
    Side,
    SuiteComparison,
)
from perflab.analyze.compare_speed import machine_speed_warning, speed_normalized_row
from perflab.analyze.decisions import (
    FAILED,
    FASTER,
    SLOWER,
    VERDICTS,
    benjamini_hochberg,
    expanded_ratio_ci,
    geometric_mean_ci,
    mann_whitney_p,
    verdict,
)
from perflab.analyze.estimate import Estimate
from perflab.analyze.hdr import (
    HdrCounts,
    decode_histogram,
    mann_whitney_counts,
    quantile_replicates,
)
from perflab.analyze.server_timing import histogram_pairs
from perflab.analyze.summary import median_estimate, timing_groups
from perflab.environment import environment_differences
from perflab.errors import UsageError
from perflab.model import Benchmark, Histogram, HttpStep, Results

#: Share of benchmarks moving the same way above which the move looks machine-wide.
MACHINE_WIDE_SHARE = 0.8
#: p-value below which a move between the halves of a run counts as drift.
DRIFT_P = 0.01
#: Share of a side's benchmarks that drifted above which the whole run is called drifting.
DRIFTING_RUN_SHARE = 0.2


# --------------------------------------------------------------------------- engines


def _rng(seed: int, key: str) -> np.random.Generator:
    """A generator per row, so a row's CI doesn't change when other benchmarks do."""
    return np.random.default_rng([seed, zlib.crc32(key.encode())])


def _unit_groups(bench: Benchmark) -> tuple[list[np.ndarray], int]:
    """Per-unit value arrays (seconds) and the sample count, python or command kind."""
    if bench.kind == "command":
        walls = [r.wall_ns * 1e-9 for r in bench.runs if r.ok and not r.warmup]
        return [np.array([w]) for w in walls], len(walls)
    groups = timing_groups(bench)
    return groups, sum(g.size for g in groups)


def compare_groups(
    row: Row,
    groups_a: list[np.ndarray],
    groups_b: list[np.ndarray],
    confidence: float,
    resamples: int,
    rng: np.random.Generator,
) -> Row:
    """Fill ``row`` from per-process values of A and B (the python and command engines).

    Ratio of pooled medians B/A, hierarchical bootstrap replicates widened
    for the number of processes, Mann–Whitney U on per-process medians.
    Cost: O(resamples · P · max samples per process).

    Args:
        row: the row to fill (id, kind, metric set).
        groups_a / groups_b: P arrays of seconds per op, one per process (non-empty).
    """
    median_a, median_b = stats.pooled_median(groups_a), stats.pooled_median(groups_b)
    reps_a = stats.bootstrap_medians(groups_a, resamples, rng)
    reps_b = stats.bootstrap_medians(groups_b, resamples, rng)
    row.a = _side(median_a, reps_a, groups_a, confidence)
    row.b = _side(median_b, reps_b, groups_b, confidence)
    if median_a <= 0 or median_b <= 0:
        row.verdict, row.primary = FAILED, False
        row.notes.append("a median of zero: no ratio can be formed")
        return row
    n = min(len(groups_a), len(groups_b))
    if n < 2:
        row.notes.append(
            "one process on a side: processes are the unit of replication, so "
            "no CI can be formed; measure with more processes"
        )
    with np.errstate(divide="ignore", invalid="ignore"):
        row.ratio, row.log_replicates = expanded_ratio_ci(
            median_b / median_a, reps_b / reps_a, n, confidence
        )
    row.p_value = mann_whitney_p([np.median(g) for g in groups_a], [np.median(g) for g in groups_b])
    return row


def _side(median: float, reps: np.ndarray, groups: list[np.ndarray], confidence: float) -> Side:
    return Side(
        stats.percentile_ci(reps, median, confidence), len(groups), int(sum(g.size for g in groups))
    )


def compare_timed(
    a: Benchmark,
    b: Benchmark,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
    threshold: float = DEFAULT_THRESHOLD,
) -> Row:
    """Compare one python or command benchmark in A and B (see :func:`compare_groups`).

    Also checks each side for drift within its run (see :func:`within_run_drift`).

    Returns:
        A row; its verdict is "failed" when a side has no usable data.
    """
    row = Row(a.id, a.kind, "time", "s", test_key=a.id)
    groups_a, _ = _unit_groups(a)
    groups_b, _ = _unit_groups(b)
    missing = [
        f"{side}: {bench.error or 'no successful samples'}"
        for side, bench, groups in (("A", a, groups_a), ("B", b, groups_b))
        if not groups
    ]
    if missing:
        row.verdict, row.primary, row.notes = FAILED, False, missing
        return row
    for side, groups in (("A", groups_a), ("B", groups_b)):
        change, p_value = within_run_drift(groups)
        if abs(change) > threshold and p_value < DRIFT_P:
            row.drift[side] = change
            row.notes.append(
                f"{side} drifted {change:+.1%} from the first to the second half "
                "of its processes: the machine changed during the run"
            )
    rng = _rng(seed, a.id)
    if a.kind == "python":
        return compare_processes(row, a, b, confidence, resamples, rng)
    return compare_groups(row, groups_a, groups_b, confidence, resamples, rng)


def compare_processes(
    row: Row,
    a: Benchmark,
    b: Benchmark,
    confidence: float,
    resamples: int,
    rng: np.random.Generator,
) -> Row:
    """Fill ``row`` for a python benchmark (both sides with usable samples): each side's
    median and CI as ``perflab run`` computes them (:func:`median_estimate`), B/A and
    its CI from the two random-effects locations (see the module docstring), the
    Mann–Whitney U p on per-process medians. With fewer than 2 processes (or no spread)
    on a side, the ratio comes from :func:`compare_groups`' bootstrap. O(N + resamples).
    """
    groups_a, groups_b = timing_groups(a), timing_groups(b)
    loc_a, loc_b = stats.process_location(groups_a), stats.process_location(groups_b)
    if loc_a is None or loc_b is None:
        compare_groups(row, groups_a, groups_b, confidence, resamples, rng)
    else:
        ratio = loc_b / loc_a
        row.ratio = ratio.ci(confidence)
        row.log_replicates = math.log(ratio.value) + ratio.se_log * rng.standard_t(
            ratio.df, resamples
        )
        row.p_value = mann_whitney_p(
            [np.median(g) for g in groups_a], [np.median(g) for g in groups_b]
        )
    for side, bench, groups in (("a", a, groups_a), ("b", b, groups_b)):
        est = median_estimate(bench, confidence, resamples)
        if est is not None:
            setattr(row, side, Side(est, len(groups), int(sum(g.size for g in groups))))
    return row


def within_run_drift(groups: list[np.ndarray]) -> tuple[float, float]:
    """How much a benchmark's time moved during its run, and whether that is beyond noise.

    Processes are taken in the order they ran (the order of the results file);
    the pooled median of the second half is compared with the first half's, and
    a Mann–Whitney U test on their per-process medians says whether the move
    is more than process-to-process noise. A machine that changes during a run
    (other programs' load, frequency, thermals) changes between runs too, and
    CIs computed inside one run don't cover that. O(N log N).

    Args:
        groups: per-process values in run order, P arrays.

    Returns:
        (second half / first half − 1, p-value); (0, NaN) for fewer than 4 processes.
    """
    if len(groups) < 4:
        return 0.0, math.nan
    half = len(groups) // 2
    early, late = groups[:half], groups[half:]
    change = stats.pooled_median(late) / stats.pooled_median(early) - 1
    return change, mann_whitney_p([np.median(g) for g in early], [np.median(g) for g in late])


# --------------------------------------------------------------------------- HTTP


#: The caveat of every http row: each side is one run, so its CI (from that run's
#: histogram or response count) cannot see how much a repeat run would differ.
ONE_RUN = "one run per side: the CI leaves out run-to-run variation"


def step_label(step: HttpStep) -> str:
    """How a step is named in ids: "open 1,000/s", "closed 16 conn"."""
    if step.mode == "closed" or step.offered_rate is None:
        return f"{step.mode} {step.connections} conn"
    return f"{step.mode} {step.offered_rate:,.0f}/s"


def _achieved_rate(step: HttpStep) -> Estimate:
    """Ok responses / elapsed s, 1/s, without a CI of its own (nan when nothing elapsed)."""
    rate = step.ok_responses / step.elapsed_s if step.elapsed_s > 0 else math.nan
    return Estimate(rate, math.nan, math.nan)


def compare_rates(row: Row, a: HttpStep, b: HttpStep, confidence: float) -> Row:
    """Fill ``row`` with the achieved rates (ok responses / elapsed s) of two steps.

    Exact Poisson rate-ratio test: conditional on the total, B's count is
    binomial; its Clopper–Pearson CI maps to a CI of the rate ratio.
    """
    from scipy import stats as sps

    k_a, k_b, t_a, t_b = a.ok_responses, b.ok_responses, a.elapsed_s, b.elapsed_s
    row.a = Side(_achieved_rate(a), units=k_a, samples=k_a)
    row.b = Side(_achieved_rate(b), units=k_b, samples=k_b)
    row.notes.append(ONE_RUN)
    if k_a == 0 or k_b == 0 or t_a <= 0 or t_b <= 0:
        row.verdict = FAILED
        row.notes.append("no successful response on a side")
        return row
    test = sps.binomtest(k_b, k_a + k_b, t_b / (t_a + t_b))
    ci = test.proportion_ci(confidence, method="exact")
    scale = t_a / t_b
    high = ci.high / (1 - ci.high) * scale if ci.high < 1 else math.inf
    row.ratio = Estimate(row.b.value / row.a.value, ci.low / (1 - ci.low) * scale, high, confidence)
    row.p_value = float(test.pvalue)
    return row


def compare_latencies(
    key: str,
    a: HttpStep,
    b: HttpStep,
    percentiles: Sequence[float],
    confidence: float,
    resamples: int,
    seed: int,
    hists: tuple[Histogram, Histogram] | None = None,
) -> list[Row]:
    """One row per latency percentile of two steps, CIs from their HdrHistograms.

    The Mann–Whitney U p-value of the two latency distributions is shared by
    the step's rows (one test in the Benjamini–Hochberg correction). ``hists``: compare
    these two histograms (µs) instead of the steps' latencies, in rows that are never
    primary (a Server-Timing metric).
    """
    primary = hists is None
    hists = hists or (a.latency, b.latency)
    try:
        hist_a, hist_b = decode_histogram(hists[0].encoded), decode_histogram(hists[1].encoded)
    except ValueError as exc:
        return [
            Row(
                f"{key} latency",
                "http",
                "latency",
                "s",
                verdict=FAILED,
                primary=False,
                notes=[f"latency histogram unreadable: {exc}"],
            )
        ]
    rows = []
    p_value = mann_whitney_counts(hist_a, hist_b) if hist_a.total and hist_b.total else math.nan
    for pct in percentiles:
        row = Row(
            f"{key} p{pct:g}",
            "http",
            f"p{pct:g}",
            "s",
            test_key=key,
            primary=primary and pct == 50,
            p_value=p_value,
            notes=[ONE_RUN],
        )
        rows.append(
            _latency_row(row, hist_a, hist_b, pct / 100, confidence, resamples, _rng(seed, row.id))
        )
    return rows


def _latency_row(
    row: Row,
    hist_a: HdrCounts,
    hist_b: HdrCounts,
    q: float,
    confidence: float,
    resamples: int,
    rng: np.random.Generator,
    scale_s: float = 1e-6,
) -> Row:
    """Fill ``row`` with the q-quantiles of two histograms (values × ``scale_s`` = s:
    1e-6 for the µs of HTTP steps, 1e-9 for the ns of trace spans), their CIs and B/A."""
    if not hist_a.total or not hist_b.total:
        row.verdict, row.primary, row.notes = FAILED, False, ["no recorded latency on a side"]
        return row
    sides = []
    for hist in (hist_a, hist_b):
        reps = quantile_replicates(hist, q, resamples, rng) * scale_s
        ci = stats.percentile_ci(reps, hist.quantile(q) * scale_s, confidence)
        sides.append((Side(ci, hist.total, hist.total), reps))
    (row.a, reps_a), (row.b, reps_b) = sides
    with np.errstate(divide="ignore", invalid="ignore"):
        row.ratio, row.log_replicates = expanded_ratio_ci(
            row.b.value / row.a.value, reps_b / reps_a, min(hist_a.total, hist_b.total), confidence
        )
    return row


def compare_http(
    a: Benchmark,
    b: Benchmark,
    percentiles: Sequence[float] = DEFAULT_PERCENTILES,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> list[Row]:
    """Compare two HTTP benchmarks step by step (steps matched by mode and rate/connections).

    Returns:
        Per matched step: an achieved-rate row and one row per percentile;
        a "failed" row for each step present on one side only.
    """
    steps_a, steps_b = _steps_by_label(a), _steps_by_label(b)
    rows: list[Row] = []
    for label in list(steps_a) + [k for k in steps_b if k not in steps_a]:
        key = f"{a.id} {label}"
        if label not in steps_a or label not in steps_b:
            side = "B" if label in steps_a else "A"
            rows.append(
                Row(
                    key,
                    "http",
                    "rate",
                    "1/s",
                    verdict=FAILED,
                    primary=False,
                    notes=[f"step missing in {side}"],
                )
            )
            continue
        sa, sb = steps_a[label], steps_b[label]
        rows.append(
            compare_rates(
                Row(
                    f"{key} rate",
                    "http",
                    "rate",
                    "1/s",
                    True,
                    test_key=f"{key} rate",
                    primary=False,
                ),
                sa,
                sb,
                confidence,
            )
        )
        rows += compare_latencies(key, sa, sb, percentiles, confidence, resamples, seed)
        for metric, ha, hb in histogram_pairs(sa, sb):  # Server-Timing
            rows += compare_latencies(
                f"{key} server-timing {metric}",
                sa,
                sb,
                percentiles,
                confidence,
                resamples,
                seed,
                (ha, hb),
            )
    return rows


def _steps_by_label(bench: Benchmark) -> dict[str, HttpStep]:
    out: dict[str, HttpStep] = {}
    for step in bench.steps:
        label = step_label(step)
        n = sum(1 for k in out if k == label or k.startswith(label + " #"))
        out[label if n == 0 else f"{label} #{n + 1}"] = step
    return out


# --------------------------------------------------------------------------- trace


def compare_spans(
    a: Benchmark,
    b: Benchmark,
    percentiles: Sequence[float],
    confidence: float,
    resamples: int,
    seed: int,
) -> list[Row]:
    """Rows comparing one span name of two trace files (``perflab.trace.dump``).

    Method: as HTTP latencies (:func:`compare_latencies`): each percentile of the
    span's duration HdrHistogram (ns) with its order-statistic bootstrap CI, B/A with
    the expanded-percentile CI, one Mann–Whitney U test per span shared by its rows.
    Spans of one process are not independent runs: the CI leaves out
    process-to-process variation, which a note says.

    Args:
        a / b: benchmarks of kind "trace" (their ``span`` set).
        percentiles: of the durations, e.g. (50, 90, 99, 99.9).
        confidence: CI level.
        resamples: bootstrap replicates.
        seed: bootstrap seed (each row derives its stream from its id).

    Returns:
        One row per percentile (metric "p50", …, unit "s"; p50 is the primary row),
        or one "failed" row when a side has no span data or an unreadable histogram.
    """
    key = a.id
    if a.span is None or b.span is None:
        return [
            Row(
                key,
                "trace",
                "duration",
                "s",
                verdict=FAILED,
                primary=False,
                notes=["no span data on a side"],
            )
        ]
    try:
        hist_a = decode_histogram(a.span.duration.encoded)
        hist_b = decode_histogram(b.span.duration.encoded)
    except ValueError as exc:
        return [
            Row(
                key,
                "trace",
                "duration",
                "s",
                verdict=FAILED,
                primary=False,
                notes=[f"duration histogram unreadable: {exc}"],
            )
        ]
    p_value = mann_whitney_counts(hist_a, hist_b) if hist_a.total and hist_b.total else math.nan
    rows = []
    for pct in percentiles:
        row = Row(
            f"{key} p{pct:g}",
            "trace",
            f"p{pct:g}",
            "s",
            test_key=key,
            primary=pct == 50,
            p_value=p_value,
            notes=["spans of one process per side: the CI leaves out process-to-process variation"],
        )
        rows.append(
            _latency_row(
                row,
                hist_a,
                hist_b,
                pct / 100,
                confidence,
                resamples,
                _rng(seed, row.id),
                scale_s=1e-9,
            )
        )
    return rows


# --------------------------------------------------------------------------- suite


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
) -> list[Row]:
    """Rows comparing one benchmark of A with its match in B, verdicts included.

    Returns:
        One row (python, command) or several (http: per step and metric; trace: per
        percentile of the span's durations);
        a "failed" row when the kinds differ.
    """
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
    else:
        rows = [compare_timed(a, b, confidence, resamples, seed, threshold)]
        normalized = speed_normalized_row(a, b, confidence)
        rows += [normalized] if normalized is not None and rows[0].verdict != FAILED else []
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
            by_a[key], by_b[key], threshold, confidence, resamples, seed, percentiles
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
    _summarize(suite)
    speed = machine_speed_warning(a.benchmarks, b.benchmarks, threshold, confidence)
    suite.warnings += [speed] if speed else []
    return suite


def _summarize(suite: SuiteComparison) -> None:
    """Fill q-values, counts, the geometric mean and suite-wide warnings."""
    _apply_bh(suite.rows)
    counted = [r for r in suite.rows if r.metric != SPEED_NORMALIZED]  # one verdict per metric
    suite.counts = {v: sum(r.verdict == v for r in counted) for v in VERDICTS}
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
        suite.geomean_over = len(primary)
    suite.warnings = _suite_warnings(suite, primary)


def _apply_bh(rows: list[Row]) -> None:
    """Benjamini–Hochberg over one p-value per test (rows sharing a test share its q)."""
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
    timed = [r for r in suite.rows if r.kind in ("python", "command") and r.ratio is not None]
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
    """Words accepted by ``--fail-on``: the verdicts plus "missing" (ids only in A)."""
    return (*VERDICTS, "missing")


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
