"""Numbers in the readings and warnings of the model fits, formatted like perflab's tables.

Times carry their unit (``261 ns``, ``3.77 ps`` below a nanosecond), rates
theirs (``143 k/s``), counts get thousands separators (``31,000``), and a
bare number is written ``1.04×10⁻⁴`` rather than ``1.04e-04``: never
e-notation. Built on :mod:`perflab.units`; used by the models' readings and by
:mod:`perflab.report.fit_table`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from perflab.units import format_quantity, format_rate, format_time

__all__ = ["fmt_count", "fmt_number", "fmt_percent", "fmt_time", "fmt_value", "sig_needed"]

#: Units below a nanosecond, for coefficients such as seconds per n² or n³.
_TINY_TIME = (("ps", 1e-12), ("fs", 1e-15), ("as", 1e-18))
_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def fmt_number(value: float, digits: int = 3) -> str:
    """A unitless number with ``digits`` significant digits: 0.0277, 1,234, 1.04×10⁻⁵.

    Values below 10⁻³ or from 10⁷ up use a power of ten; NaN is "–", ±inf "∞"/"-∞".
    """
    if math.isnan(value):
        return "–"
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    if value and (abs(value) < 1e-3 or abs(value) >= 1e7):
        exponent = math.floor(math.log10(abs(value)))
        mantissa = value / 10**exponent
        if round(abs(mantissa), digits - 1) >= 10:
            mantissa, exponent = mantissa / 10, exponent + 1
        return f"{mantissa:.{digits - 1}f}×10{str(exponent).translate(_SUPERSCRIPT)}"
    rounded = float(f"{value:.{digits}g}")
    if value and math.floor(math.log10(abs(rounded))) != math.floor(math.log10(abs(value))):
        value = rounded  # 0.99999 rounds up a decade: "1.00", not "1.000"
    return format_quantity(value)


def fmt_time(seconds: float, digits: int = 3) -> str:
    """A time with its unit: 3.4 ms, 261 ns, 0.377 ps → "377 fs"; "–" for NaN."""
    if math.isnan(seconds):
        return "–"
    if math.isinf(seconds):
        return "∞" if seconds > 0 else "-∞"
    magnitude = abs(seconds)
    if 0 < magnitude < 1e-9:
        unit = next((u for u in _TINY_TIME if magnitude >= u[1]), _TINY_TIME[-1])
        return format_time(seconds, unit, digits)
    return format_time(seconds, digits=digits)


def fmt_value(value: float, unit: str) -> str:
    """``value`` in ``unit``: "s" → a time, "/s" → a rate (143 k/s), else a bare number."""
    if not math.isfinite(value):
        return fmt_number(value)
    if unit == "s":
        return fmt_time(value)
    if unit == "/s":
        return format_rate(value)
    return f"{fmt_number(value)} {unit}".rstrip()


def fmt_percent(fraction: float) -> str:
    """A fraction as a percentage with two significant digits: 2.8%, 29%, 100%."""
    pct = 100 * fraction
    return f"{pct:.2g}%" if pct < 10 else f"{pct:.0f}%"


def fmt_count(x: float, sig: int = 2) -> str:
    """A count rounded to ``sig`` significant figures with thousands separators: 31,000.

    From 10⁷ up a power of ten: 1.0×10¹⁰.
    """
    if not math.isfinite(x):
        return "∞"
    if x >= 1e7:
        return fmt_number(x, sig)
    if x < 10:
        return f"{x:.{sig}g}"
    digits = sig - 1 - math.floor(math.log10(abs(x)))
    return f"{round(x, digits):,.0f}"


def sig_needed(values: Sequence[float]) -> int:
    """Fewest significant figures (2–4) that keep distinct finite values distinct in print."""
    finite = sorted({v for v in values if math.isfinite(v) and v >= 1})
    for sig in (2, 3):
        if len({fmt_count(v, sig) for v in finite}) == len(finite):
            return sig
    return 4
