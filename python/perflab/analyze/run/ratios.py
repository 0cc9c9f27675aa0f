"""A group of run benchmarks summarized together: each one's ratio to its baseline
(a paired ratio with a bootstrap CI over processes), the groups of a suite, and the
verdicts against a baseline threshold."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from perflab.analyze import stats
from perflab.analyze.paired import benchmark_ratio
from perflab.analyze.run.summary import RESAMPLES, Summary, summarize, timing_groups
from perflab.model import Benchmark
from perflab.model.estimate import Estimate


def summarize_group(
    benches: Sequence[Benchmark],
    confidence: float = 0.95,
    resamples: int = RESAMPLES,
    seed: int | None = None,
    precision: float | None = None,
    min_processes: int | None = None,
    n_plus_one: int | None = None,
) -> list[Summary]:
    """Summaries of one group's benchmarks with ratios against the best and the baseline.

    Like is compared with like: the best and the baseline are looked up among the
    benchmarks of the same stage and the same thread count (threads mode), so a
    benchmark on 8 threads is compared with the baseline on 8 threads, and among those
    with the same parameter values: ``pickle_dumps n=1000`` against ``json_dumps
    n=1000``, not ``n=10``. A case no other benchmark shares (one function at several
    sizes) is compared with the fastest of them all, so × best shows how its cost grows;
    a baseline without parameters is the baseline of every case (:func:`baseline_of`).
    The best is the benchmark with the lowest median; ratios are B/A of medians with the CI of
    two independent random-effects locations (see :func:`_ratio`), except the ratio to the
    baseline of two benchmarks the run measured together: the paired ratio
    (:func:`perflab.analyze.paired.benchmark_ratio`, docs/compare.md); a
    benchmark's ratio to itself is exactly 1 with no CI. Metric "× best" is
    value / best value, lower or higher being better as the metric says.

    ``n_plus_one``: ``--n-plus-one``, the N+1 check's limit
    (:func:`perflab.analyze.run.summary.summarize`).

    Returns:
        Summaries in input order.
    """
    rng = np.random.default_rng(seed)
    summaries = [
        summarize(b, confidence, resamples, None, precision, min_processes, n_plus_one)
        for b in benches
    ]
    alike: dict[tuple[str | None, int | None], list[int]] = {}
    for i, (s, b) in enumerate(zip(summaries, benches)):
        alike.setdefault((s.stage, b.threads), []).append(i)
    for members in alike.values():
        _ratios(benches, summaries, members, confidence, resamples, rng)
    return summaries


#: the ratio of a benchmark to itself: exactly 1, no CI to show
SELF_RATIO = Estimate(1.0, math.nan, math.nan, se=0.0)


def _ratios(
    benches: Sequence[Benchmark],
    summaries: list[Summary],
    members: list[int],
    confidence: float,
    resamples: int,
    rng: np.random.Generator,
) -> None:
    ok = [i for i in members if summaries[i].ok]
    if not ok:
        return
    for i in ok:
        peers = _same_params(benches, i, ok)
        best = min(peers if len(peers) > 1 else ok, key=lambda j: summaries[j].median_s)
        summaries[i].ratio_best = _ratio(
            benches, i, best, confidence, resamples, rng, _shown(summaries, i, best)
        )
        baseline = baseline_of(benches, i, [j for j in ok if summaries[j].baseline])
        pair = None if baseline in (None, i) else benchmark_ratio(benches[baseline], benches[i])
        if pair is not None:
            summaries[i].ratio_baseline = pair.ratio
            summaries[i].baseline_pairs = pair.pairs
        elif baseline is not None:
            summaries[i].ratio_baseline = _ratio(
                benches, i, baseline, confidence, resamples, rng, _shown(summaries, i, baseline)
            )
    for name in {k for i in ok for k in summaries[i].metrics}:
        values = {i: summaries[i].metrics[name] for i in ok if name in summaries[i].metrics}
        best_value = min(values.values())
        for i, v in values.items():
            summaries[i].metric_ratio_best[name] = v / best_value if best_value else math.nan


def _same_params(benches: Sequence[Benchmark], i: int, among: Sequence[int]) -> list[int]:
    """The benchmarks of ``among`` with exactly benchmark i's parameter values."""
    return [j for j in among if benches[j].params == benches[i].params]


def baseline_of(benches: Sequence[Benchmark], i: int, baselines: Sequence[int]) -> int | None:
    """Benchmark i's baseline among ``baselines``: the one with the same parameter values,
    else the first whose parameters (maybe none) all have i's values; None when no
    baseline case matches (e.g. the baseline was not measured at i's size)."""
    same = _same_params(benches, i, baselines)
    if same:
        return same[0]
    params = benches[i].params
    return next(
        (
            j
            for j in baselines
            if all(params.get(k, object()) == v for k, v in benches[j].params.items())
        ),
        None,
    )


def _shown(summaries: Sequence[Summary], i: int, j: int) -> float:
    """The ratio of the two medians the table shows, i over j (NaN without a positive j)."""
    den = summaries[j].median_s
    return summaries[i].median_s / den if den > 0 else math.nan


def _ratio(
    benches: Sequence[Benchmark],
    i: int,
    j: int,
    confidence: float,
    resamples: int,
    rng: np.random.Generator,
    shown: float = math.nan,
) -> Estimate:
    """The median ratio of benchmark i over benchmark j with its CI; SELF_RATIO when i is j.
    The CI combines both benchmarks' random-effects errors (:class:`stats.LogLocation`);
    with a single process on either side, the hierarchical bootstrap of the ratio, its
    interval moved (by the same factor at both ends) to the ratio of the medians the
    table shows (``shown``): the bootstrap's pooled sample medians are not the median
    column's figures, and "× best" must be the median column's quotient (issue 28 §3)."""
    if i == j:
        return SELF_RATIO
    num, den = timing_groups(benches[i]), timing_groups(benches[j])
    a, b = stats.process_location(num), stats.process_location(den)
    if a is not None and b is not None:
        return (a / b).ci(confidence)
    boot = stats.ratio_ci(num, den, confidence, resamples, rng)
    if not (math.isfinite(shown) and shown > 0 and boot.value > 0):
        return boot
    move = shown / boot.value
    return Estimate(shown, boot.ci_low * move, boot.ci_high * move, boot.level, boot.se * move)


def by_group(benches: Sequence[Benchmark]) -> dict[str, list[Benchmark]]:
    """Benchmarks grouped by group name, in order of first appearance."""
    groups: dict[str, list[Benchmark]] = {}
    for bench in benches:
        groups.setdefault(bench.group, []).append(bench)
    return groups


def summarize_benchmarks(
    benches: Sequence[Benchmark],
    confidence: float = 0.95,
    seed: int | None = 0,
    precision: float | None = None,
    min_processes: int | None = None,
    threshold: float | None = None,
    n_plus_one: int | None = None,
) -> dict[str, list[Summary]]:
    """Summaries of python-engine benchmarks, by group (see :func:`summarize_group`;
    ``n_plus_one``: the N+1 check's limit, ``--n-plus-one``).

    A fixed default seed makes re-rendering a file print the same CIs. With a noise
    ``threshold`` t (e.g. 0.02), every benchmark of a group that has a baseline gets
    its verdict against it (:func:`baseline_verdicts`).
    """
    grouped = {
        group: summarize_group(
            members,
            confidence,
            seed=seed,
            precision=precision,
            min_processes=min_processes,
            n_plus_one=n_plus_one,
        )
        for group, members in by_group(benches).items()
    }
    if threshold is not None:
        for summaries in grouped.values():
            baseline_verdicts(summaries, threshold)
    return grouped


def baseline_verdicts(summaries: Sequence[Summary], threshold: float) -> None:
    """Set each summary's in-run verdict against its group's baseline, in place.

    faster/slower/same/inconclusive from the CI of ``ratio_baseline`` against ±t, exactly
    as ``perflab compare`` decides (:func:`perflab.analyze.decisions.verdict`); "failed"
    when the benchmark (or the baseline) has no ratio; "" for the baseline itself, in
    a group without a baseline, for a case no baseline case matches (its parameter
    values were not measured for the baseline), and in a staged group (its table has
    no × baseline).
    """
    from perflab.analyze.decisions import FAILED, verdict

    if not any(s.baseline for s in summaries) or any(s.stage for s in summaries):
        return
    baseline_failed = any(s.baseline and not s.ok for s in summaries)
    for s in summaries:
        ratio = s.ratio_baseline
        unmatched = s.ok and ratio is None and not baseline_failed  # no case of its size
        s.verdict = (
            ""
            if s.baseline or unmatched
            else FAILED
            if not s.ok or ratio is None
            else verdict(ratio.ci_low, ratio.ci_high, threshold)
        )
