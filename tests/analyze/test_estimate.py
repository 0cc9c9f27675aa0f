"""The one estimate type."""

import math

from perflab.model.estimate import LEVEL, Estimate


def test_an_estimate_knows_its_interval() -> None:
    est = Estimate(2.0, 1.5, 3.0)
    assert est.level == LEVEL == 0.95 and math.isnan(est.se)
    assert est.half_width == 0.75 and est.relative_half_width == 0.375
    assert est.contains(1.5) and est.contains(3.0) and not est.contains(3.01)
    assert Estimate(0.0, -1.0, 1.0).relative_half_width == math.inf
    assert not Estimate(1.0, math.nan, math.nan).contains(1.0)
