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

    for text in fig.findobj(Text):
        raw = text.get_text()
        if (clean := terminal(raw)) != raw:
            text.set_text(clean)
    return fig
