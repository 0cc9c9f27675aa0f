"""Axes of the HTML report's charts: when to use a log scale, and tick labels for people.

One rule for every chart of the page: an axis whose values span more than a decade
(largest ÷ smallest positive value > :data:`DECADE`) is drawn on a log scale, so a
row at 400 ns and a row at 100 ms are both readable (on a linear axis the first sits
at 0). Tick labels are plain numbers with thousands separators (``0.5``, ``20``,
``1,000``, ``10⁶``), never ``1e+03`` (:func:`perflab.units.significant`,
:func:`perflab.report.pyplot.power_of_ten`); minor ticks (2 and 5 of each decade) are
labelled only while the axis spans at most :data:`MINOR_DECADES` decades, so the labels
never run into each other on a wide axis.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from perflab.report.pyplot import power_of_ten
from perflab.units import significant

#: Largest ÷ smallest positive value above which an axis is logarithmic.
DECADE = 10.0
#: Widest span, in decades, whose minor ticks (2, 5) still get labels.
MINOR_DECADES = 2.0


def positive(values: Iterable[float]) -> list[float]:
    """The finite positive values of ``values`` (what a log axis can show)."""
    return [float(v) for v in values if v is not None and math.isfinite(v) and v > 0]


def spans_decade(values: Iterable[float]) -> bool:
    """True when the finite positive ``values`` span more than :data:`DECADE` (max/min)."""
    shown = positive(values)
    return bool(shown) and max(shown) / min(shown) > DECADE


def number(value: float) -> str:
    """A tick value for people: ``0.005``, ``20``, ``1,000``, ``50,000``; ``10⁶`` and
    ``10⁻⁴`` outside 10⁻³…10⁵; "" for NaN and infinities."""
    if not math.isfinite(value):
        return ""
    if value == 0:
        return "0"
    if 1e-3 <= abs(value) < 1e5:
        text = significant(value, 3)
        return text.rstrip("0").rstrip(".") if "." in text else text
    sign = "-" if value < 0 else ""
    if label := power_of_ten(abs(value)):
        return sign + label
    exponent = math.floor(math.log10(abs(value)))
    mantissa = f"{abs(value) / 10**exponent:.2g}"
    return f"{sign}{mantissa}×{power_of_ten(10.0**exponent)}"


def _decades(axis: Any) -> float:
    low, high = sorted(axis.get_view_interval())
    return math.log10(high / low) if low > 0 and high > 0 else math.inf


def log_axis(*axes: Any) -> None:
    """Plain-number labels on log axes (matplotlib ``Axis`` objects, already log scale):
    majors at each decade, minors at 2 and 5 labelled while the axis spans at most
    :data:`MINOR_DECADES` decades (decided when the figure is drawn)."""
    from matplotlib.ticker import FuncFormatter

    for axis in axes:

        def minor(value: float, _: object, axis: Any = axis) -> str:
            if not value > 0 or _decades(axis) > MINOR_DECADES:
                return ""
            lead = value / 10 ** math.floor(math.log10(value) + 1e-9)
            return number(value) if round(lead, 6) in (2.0, 5.0) else ""

        axis.set_major_formatter(FuncFormatter(lambda v, _: number(v)))
        axis.set_minor_formatter(FuncFormatter(minor))


def linear_axis(*axes: Any) -> None:
    """Plain-number labels on linear axes (``1,500``, not ``1.5e3`` with an offset)."""
    from matplotlib.ticker import FuncFormatter

    for axis in axes:
        axis.set_major_formatter(FuncFormatter(lambda v, _: number(v)))


def scale_axis(ax: Any, which: str, values: Iterable[float]) -> bool:
    """Set ``ax``'s ``which`` axis ("x" or "y") to log when ``values`` span more than a
    decade (:func:`spans_decade`), else linear; label its ticks for people either way.

    Returns:
        True when the axis is logarithmic.
    """
    log = spans_decade(values)
    axis = ax.xaxis if which == "x" else ax.yaxis
    if log:
        (ax.set_xscale if which == "x" else ax.set_yscale)("log")
        log_axis(axis)
    else:
        linear_axis(axis)
    return log
