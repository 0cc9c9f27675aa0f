"""matplotlib set up once for every chart perflab draws."""

from __future__ import annotations

from typing import Any


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the non-interactive Agg backend, with math text off.

    Names in charts are untrusted text: with math text on, a "$" in a benchmark name
    would be parsed as a formula (and may fail to render); and every text matplotlib is
    given — titles, labels, legends, annotations, tick labels set as text or made by a
    formatter at draw time — has its control characters and bidi overrides shown as
    escapes (``\\x1b``, ``\\u202e``; newlines and tabs kept), as the terminal shows
    names (:func:`perflab.report.escape.terminal`), from the moment it is set: a raw ESC
    or BEL would reach the HTML report's inline SVG as text, and matplotlib would warn
    of a missing glyph on stderr, as soon as any layout (``tight_layout``) measured it.
    This is done once, at matplotlib's one door for text (``Text.set_text``), so no chart
    can forget it; it changes only those characters, which no font draws. Imported
    lazily so that commands that draw nothing never load matplotlib.

    Returns:
        The ``matplotlib.pyplot`` module.
    """
    import matplotlib

    matplotlib.use("Agg", force=True)
    matplotlib.rcParams["text.parse_math"] = False
    import matplotlib.pyplot as plt

    _escape_every_text()
    return plt


def _escape_every_text() -> None:
    """Make ``matplotlib.text.Text.set_text`` escape control characters (once)."""
    from matplotlib.text import Text

    from perflab.report.escape import terminal

    original = Text.set_text
    if getattr(original, "perflab_escapes", False):
        return

    def set_text(self: Text, s: object) -> None:
        original(self, None if s is None else terminal(s))

    set_text.perflab_escapes = True  # type: ignore[attr-defined]
    set_text.__doc__ = original.__doc__
    Text.set_text = set_text  # type: ignore[method-assign]


def visible_text(fig: Any) -> Any:
    """Every text of ``fig`` with its control characters shown as escapes (``\\x1b``;
    newlines and tabs kept), and log axes with plain-text ticks. Every text set
    through matplotlib after :func:`pyplot` is escaped already; this catches a text
    made before (a figure from another source) and is called just before saving.

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
