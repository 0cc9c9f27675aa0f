"""Untrusted names in charts: control characters are drawn as visible escapes."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

from perflab.analyze.estimate import Estimate
from perflab.report.html import charts

EVIL = ["evil \x1b[31mRED\x1b[0m", "bell\x07 and\rreturn"]
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f]")


def test_names_with_control_characters_reach_neither_the_svg_nor_stderr(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib warns of a missing glyph for ESC
        fig = charts.forest_figure(f"group {EVIL[0]}", EVIL, [Estimate(1.1, 1.0, 1.2)] * 2,
                                   "the fastest")
        fig.axes[0].legend([EVIL[1]])
        svg = charts.to_svg(fig)
        charts.save_png(charts.distribution_figure("t", EVIL, [[1e-6, 2e-6]] * 2,
                                                   [[1.5e-6]] * 2, "dots"), tmp_path / "x.png")
    assert not CONTROL.search(svg)
    assert svg.count("evil \\x1b[31mRED\\x1b[0m") >= 2  # the title and the tick label
    assert "bell\\x07 and\\x0dreturn" in svg  # the tick label and the legend
