"""Untrusted input in charts: control characters in names are drawn as visible escapes;
the rows one chart draws are bounded."""

from __future__ import annotations

import re
import warnings

from perflab.model.estimate import Estimate
from perflab.report.html import charts
from perflab.report.pyplot import pyplot

EVIL = ["evil \x1b[31mRED\x1b[0m", "bell\x07 and\rreturn"]
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f]")


def test_names_with_control_characters_reach_neither_the_svg_nor_stderr() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib warns of a missing glyph for ESC
        fig = charts.forest_figure(
            f"group {EVIL[0]}", EVIL, [Estimate(1.1, 1.0, 1.2)] * 2, "the fastest"
        )
        fig.axes[0].legend([EVIL[1]])
        svg = charts.to_svg(fig)
    assert not CONTROL.search(svg)
    assert svg.count("evil \\x1b[31mRED\\x1b[0m") >= 2  # the title and the tick label
    assert "bell\\x07 and\\x0dreturn" in svg  # the tick label and the legend


def test_a_chart_draws_at_most_max_rows_and_says_so() -> None:
    # 2,000 compared rows took about two minutes and 850 MB to draw
    names = [f"b{i}" for i in range(200)]
    fig = charts.forest_figure(
        "ratios", names, [Estimate(1.1, 1.0, 1.2)] * 200, "A", verdicts=["slower"] * 200
    )
    ax = fig.axes[0]
    assert len(ax.get_yticks()) == charts.MAX_ROWS
    assert ax.get_title(loc="left") == (
        f"ratios (the first {charts.MAX_ROWS} of 200; the table lists every one)"
    )
    few = charts.cold_warm_figure("t", names[:3], [2e-6] * 3, [1e-6] * 3)
    assert len(few.axes[0].get_yticks()) == 3 and few.axes[0].get_title(loc="left") == "t"
    pyplot().close("all")
