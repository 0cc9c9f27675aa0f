"""The one estimate type: a value with its confidence interval (and SE where known)."""

from __future__ import annotations

import math
from dataclasses import dataclass

#: The default confidence level of every interval perflab prints.
LEVEL = 0.95


@dataclass(frozen=True)
class Estimate:
    """A value with its confidence interval: a model parameter, a ratio, a median.

    One type for every figure with a CI (as criterion's ``Estimate``): value, CI
    low/high, level, and the standard error where one is known.

    Attributes:
        value: Point estimate, in the quantity's unit.
        ci_low: Lower bound of the two-sided interval at ``level``.
        ci_high: Upper bound of that interval.
        level: Confidence level of the interval, e.g. 0.95.
        se: Standard error, in the unit of ``value``; NaN when not known (or
            when no degrees of freedom are left), 0 for a value held fixed.
    """

    value: float
    ci_low: float
    ci_high: float
    level: float = LEVEL
    se: float = math.nan

    def contains(self, x: float) -> bool:
        """Whether ``x`` lies inside [ci_low, ci_high] (False when the CI is NaN)."""
        return bool(self.ci_low <= x <= self.ci_high)

    @property
    def half_width(self) -> float:
        """(ci_high − ci_low) / 2, in the unit of ``value``."""
        return (self.ci_high - self.ci_low) / 2

    @property
    def relative_half_width(self) -> float:
        """Half-width divided by |value| (inf when value is 0)."""
        return self.half_width / abs(self.value) if self.value else math.inf
