"""Numbers that must agree with each other (issue 28 §3): × best is the median column's quotient."""

from __future__ import annotations

import pytest

from perflab.analyze.run.ratios import summarize_group
from tests.conftest import lognormal_groups, make_bench


def test_x_best_with_one_process_is_the_ratio_of_the_median_column() -> None:
    """Before: a one-process benchmark's × best came from pooled sample medians (615×)
    while the median column showed process medians implying 410×."""
    # the best: 5 processes whose medians differ (a speed switch between them),
    # so the pooled sample median is not the median of the process medians
    fast = [g for g in lognormal_groups(1e-6, 3, 30, 0.02, 0.001, 1)]
    fast += [[2 * v for v in g] for g in lognormal_groups(1e-6, 2, 200, 0.02, 0.001, 2)]
    slow = lognormal_groups(4.1e-4, 1, 30, 0.05, 0.0, 3)
    summaries = summarize_group(
        [make_bench("fast", fast), make_bench("slow", slow)], resamples=400, seed=0
    )
    best, one = summaries
    shown = one.median_s / best.median_s
    assert one.ratio_best.value == pytest.approx(shown, rel=1e-9)
    assert one.ratio_best.ci_low <= shown <= one.ratio_best.ci_high
