"""Units: base units inside (seconds, bytes, 1/s), formatting and parsing only at the edge."""

from __future__ import annotations

import math

from perflab.errors import UsageError

_TIME_UNITS = (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9))


def significant(value: float, digits: int = 3) -> str:
    """``value`` with ``digits`` significant digits as plain decimals with thousands
    separators, never an exponent: ``significant(12345.6, 4)`` is "12,346",
    ``significant(0.0012345)`` "0.00123"; 0, NaN and infinities as ``:g`` writes them."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    decimals = max(0, digits - 1 - int(math.floor(math.log10(abs(value)))))
    return f"{value:,.{decimals}f}"


def time_unit_for(seconds: float) -> tuple[str, float]:
    """Pick the display unit for a time.

    Args:
        seconds: a time in seconds (may be negative, zero or NaN).

    Returns:
        (unit name, seconds per unit), e.g. ("µs", 1e-6) for 3.2e-6.
    """
    magnitude = abs(seconds) if math.isfinite(seconds) else 1.0
    for unit, scale in _TIME_UNITS:
        if magnitude >= scale:
            return unit, scale
    return _TIME_UNITS[-1]


def format_time(seconds: float, unit: tuple[str, float] | None = None, digits: int = 3) -> str:
    """Format a time with an automatic (or given) unit: 1.23 µs, 45.6 ms.

    Args:
        seconds: the time in seconds.
        unit: (name, scale) from :func:`time_unit_for`, to align a column.
        digits: significant digits.

    Returns:
        The formatted string, "–" for NaN.
    """
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return "–"
    name, scale = unit or time_unit_for(seconds)
    return f"{significant(seconds / scale, digits)} {name}"


def format_span(seconds: float) -> str:
    """A wall-clock span for a person planning their time, to the nearest second (or
    minute past an hour): "45 s", "1 min 30 s", "2 h 5 min"; "–" for NaN."""
    if not math.isfinite(seconds):
        return "–"
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        minutes, rest = divmod(whole, 60)
        return f"{minutes} min" + (f" {rest} s" if rest else "")
    hours, rest = divmod(round(whole / 60), 60)
    return f"{hours} h" + (f" {rest} min" if rest else "")


def format_bytes(n: float | None) -> str:
    """Format a byte count with binary-free SI-ish units (B, kB, MB, GB), "–" for None."""
    if n is None or (isinstance(n, float) and math.isnan(n)):
        return "–"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(n) >= scale:
            return f"{significant(n / scale)} {unit}"
    return f"{significant(float(n))} B" if n != int(n) else f"{int(n):,} B"


def format_quantity(value: float | None, unit: str = "") -> str:
    """Format a value in ``unit``: bytes get byte units, "s" gets time units, others 3 digits."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if unit == "B":
        return format_bytes(value)
    if unit == "s":
        return format_time(value)
    return f"{significant(float(value))} {unit}".rstrip()


def format_reference(loops: float) -> str:
    """Format a speed-normalized cost (CPU time ÷ the machine-speed reference loop's time,
    unitless: how many reference loops one op costs) to 3 significant digits: 100, 27.5,
    1,270 (never an exponent)."""
    return significant(loops, 3)


def format_rate(per_second: float) -> str:
    """Format an operation rate: 1.23 M/s, 456 k/s, 12.3 /s."""
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(per_second) >= scale:
            return f"{significant(per_second / scale)} {unit}/s"
    return f"{significant(per_second)} /s"


def _ratio_digits(value: float) -> str:
    """Two decimals near 1 (where the verdicts live), three significant digits elsewhere."""
    if 0.1 <= abs(value) < 10:
        return f"{value:.2f}"
    return significant(value, 3)


def format_ratio(ratio: float, low: float | None = None, high: float | None = None) -> str:
    """Format a ratio with an optional CI: ``1.23× (1.20–1.26)``; ``1.56× (CI 2,300×
    wide)`` when its ends are over :data:`WIDE_CI` times apart."""
    if ratio is None or math.isnan(ratio):
        return "–"
    text = f"{_ratio_digits(ratio)}×"
    if low is not None and high is not None and math.isfinite(low) and math.isfinite(high):
        if low > 0 and high / low > WIDE_CI:
            return f"{text} ({ci_width(high / low)})"
        text += f" ({_ratio_digits(low)}–{_ratio_digits(high)})"
    return text


#: a CI whose high end is over this many times its low end is not printed as two figures
#: ("98.7 ns–280 s" or "0.00103–2,378" read as nothing): its width is named instead
WIDE_CI = 30.0


def ci_width(factor: float) -> str:
    """How wide a CI is whose high end is ``factor`` times its low end, in words for a
    cell: "CI 570× wide", "CI over a million times wide"."""
    return f"CI {significant(factor, 2)}× wide" if factor < 1e6 else "CI over a million times wide"


def parse_duration(text: str, option: str = "duration") -> float:
    """Parse a duration into seconds with the tool's one duration grammar (the native
    ``perflab._core.parse_duration_s``, which ``perflab serve``'s delays and stalls use
    too): a bare number is seconds ("1.5"); units ns, us (µs), ms, s, m (min), h; compounds
    from the largest unit down ("1m30s"). A sign is accepted, so that callers reject a
    negative value by its meaning.

    Args:
        text: the user's text.
        option: the option name for the error message.

    Returns:
        Seconds as a float, at most a year either way (> 0 is not checked here).

    Raises:
        UsageError: the text is not a duration, or longer than a year.
    """
    from perflab._core import parse_duration_s

    try:
        return parse_duration_s(str(text), option)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


#: Byte units of :func:`parse_bytes`: decimal (kB, MB, GB) and binary (KiB, MiB, GiB).
_BYTE_UNITS = {
    "": 1,
    "b": 1,
    "k": 1e3,
    "kb": 1e3,
    "m": 1e6,
    "mb": 1e6,
    "g": 1e9,
    "gb": 1e9,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
}


def parse_bytes(text: str, option: str) -> float:
    """A memory size in bytes: "200MB", "1.5 GiB", "512k", "4096" (bytes); > 0.

    Args:
        text: the user's text.
        option: the option name for the error message.

    Raises:
        UsageError: not a size, or not above zero.
    """
    import re

    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?)\s*([A-Za-z]*)\s*", str(text))
    unit = match.group(2).lower() if match else ""
    if not match or unit not in _BYTE_UNITS or float(match.group(1)) <= 0:
        raise UsageError(
            f"{option}: {text!r} is not a memory size above zero; write e.g. 200MB, 1.5GiB or 512kB"
        )
    return float(match.group(1)) * _BYTE_UNITS[unit]


def parse_positive_duration(text: str, option: str) -> float:
    """Like :func:`parse_duration` but rejects zero. Raises UsageError."""
    seconds = parse_duration(text, option)
    if seconds <= 0:
        raise UsageError(f"{option} must be above zero, got {text!r}; write e.g. 500ms or 5s")
    return seconds


def parse_fraction(
    text: str, option: str, example_percent: str, example_fraction: str, allow_zero: bool = False
) -> float:
    """Parse a share written as a percentage ("2%") or a fraction ("0.02") into a fraction.

    The one parser of percentages (``--precision``, ``--threshold``).

    Args:
        text: the user's text.
        option: the option name for the error message.
        example_percent / example_fraction: examples the error message suggests ("1%",
            "0.005").
        allow_zero: accept 0 (the range is then [0, 1), else (0, 1)).

    Returns:
        The fraction: 0.02 for "2%" or "0.02".

    Raises:
        UsageError: not a number, or outside the range.
    """
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise UsageError(
            f"{option} {text!r} is not a number; write e.g. {example_percent} or {example_fraction}"
        ) from None
    if allow_zero and not 0 <= value < 1:
        raise UsageError(
            f"{option} {text!r} must be at least 0% and below 100%, e.g. {example_percent}"
        )
    if not allow_zero and not 0 < value < 1:
        raise UsageError(f"{option} {text!r} must be between 0% and 100%, e.g. {example_percent}")
    return value
