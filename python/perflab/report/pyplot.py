"""matplotlib set up once for every chart perflab draws."""

from __future__ import annotations

from typing import Any


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the non-interactive Agg backend, with math text off.

    Names in charts are untrusted text: with math text on, a "$" in a benchmark name
    would be parsed as a formula (and may fail to render). Imported lazily so that
    commands that draw nothing never load matplotlib.

    Returns:
        The ``matplotlib.pyplot`` module.
    """
    import matplotlib

    matplotlib.use("Agg", force=True)
    matplotlib.rcParams["text.parse_math"] = False
    import matplotlib.pyplot as plt

    return plt


def visible_text(fig: Any) -> Any:
    """Every text of ``fig`` with its control characters shown as escapes (``\\x1b``;
    newlines and tabs kept), as the terminal shows names
    (:func:`perflab.report.escape.terminal`): titles, axis labels, legends,
    annotations. Call it just before saving: names in charts are untrusted, and a raw
    ESC or BEL would reach the HTML report's inline SVG as text (and matplotlib would
    warn of a missing glyph on stderr). Tick labels given as text are formatted again
    when the figure is drawn: escape them where they are set
    (``perflab.report.html.charts``' labels are).

    Returns:
        ``fig``, changed in place.
    """
    from matplotlib.text import Text

    from perflab.report.escape import terminal

    for ax in fig.axes:
        plain_log_ticks(ax)
    for text in fig.findobj(Text):
        raw = text.get_text()
        if (clean := terminal(raw)) != raw:
            text.set_text(clean)
    return fig


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def power_of_ten(value: float, _pos: object = None) -> str:
    """A log-axis tick as plain text: 1, 10, 100, 1000, then 10⁴, 10⁻³ (no math text).

    Args:
        value: The tick's value (> 0).

    Returns:
        The label; "" for values that are not a power of ten (minor ticks).
    """
    import math

    if not (value > 0 and math.isfinite(value)):
        return ""
    exponent = round(math.log10(value))
    if abs(math.log10(value) - exponent) > 1e-9:
        return ""
    if 0 <= exponent <= 3:
        return f"{10**exponent:,}"
    return "10" + str(exponent).translate(_SUPERSCRIPT)


def plain_log_ticks(ax: object) -> None:
    """Give log axes that still use matplotlib's default formatters plain-text labels.

    With math text off (``pyplot()``: names are untrusted), matplotlib's log
    formatters would print their math markup raw: ``$\\mathdefault{10^{1}}$``.
    Formatters a chart set itself are left alone.
    """
    from matplotlib.ticker import FuncFormatter, LogFormatter, NullFormatter

    for axis in (ax.xaxis, ax.yaxis):  # type: ignore[attr-defined]
        if axis.get_scale() != "log":
            continue
        if isinstance(axis.get_major_formatter(), LogFormatter):
            axis.set_major_formatter(FuncFormatter(power_of_ten))
        if isinstance(axis.get_minor_formatter(), LogFormatter):
            axis.set_minor_formatter(NullFormatter())
