"""The seeded trials of the complexity study that once read a wrong class as "best", or a
tie that left the truth out (issue 28 §1: "never a wrong class as best"). Each is named
by its stream (tests/analyze/cost_trials.py: seed 0, class, SEs known, outlier) and its
index; the comment says what had misled the rule. Deterministic: no timing."""

from __future__ import annotations

import numpy as np
import pytest

from perflab.analyze.fit.models import fit_complexity
from tests.analyze.cost_trials import TRUE_CLASSES, Trial, draw, reading

#: (true class, SEs known, outlier, index): what misled the rule before the fix.
ONCE_WRONG = [
    # 4 and 5 sizes, no SEs, an outlier at the largest: the F test "established" growth
    # that the log-log slope's 99% CI (holding 0) did not; O(1) was left out of the tie
    ("O(1)", False, True, 23),
    ("O(1)", False, True, 40),
    # 8 sizes with SEs, outlier at the largest: two middle costs 3.8 SE apart (one
    # falling) counted as growth with the outlier left out; scatter is no direction
    ("O(1)", True, True, 95),
    # an outlier at the smallest size bent a + b·n² towards n³; one point decided
    ("O(n^2)", False, True, 12),
    ("O(n^2)", True, True, 181),
    # 5 sizes with SEs: O(n log n) ruled out against O(n) by the residuals of all five,
    # though tied in three of the five subsets of four
    ("O(n log n)", True, False, 112),
]


def trial(true: str, known: bool, outlier: bool, index: int) -> Trial:
    rng = np.random.default_rng([0, TRUE_CLASSES.index(true), int(known), int(outlier)])
    for _ in range(index):
        draw(true, rng, known, outlier)
    return draw(true, rng, known, outlier)


@pytest.mark.parametrize("true, known, outlier, index", ONCE_WRONG)
def test_the_truth_is_named(true: str, known: bool, outlier: bool, index: int) -> None:
    t = trial(true, known, outlier, index)
    result, column = reading(t)
    assert result == "right", (column, t)
    fit = fit_complexity(t.n, t.cost, t.se)
    assert fit.verdict != "fits" or fit.model == true
    assert true not in fit.contradicted
