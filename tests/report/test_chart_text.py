"""Every text perflab's charts hand matplotlib is escaped where it enters (``Text.set_text``,
set up by ``report.pyplot.pyplot``): titles, labels, legends, tick labels, before any
layout measures them, so no missing-glyph warning and no raw control character in an SVG."""

from __future__ import annotations

import io
import re
import warnings

from perflab.report.pyplot import pyplot

EVIL = "ev\x1b[31mil\x07 \u202egnp.exe \x85"
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def test_every_text_is_escaped_where_it_enters_matplotlib() -> None:
    plt = pyplot()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a missing glyph (ESC, BEL) warns
        fig, ax = plt.subplots()
        try:
            ax.bar([EVIL, "b"], [1, 2], label=EVIL)  # categorical tick labels
            ax.set_yticks([0.5, 1.5], [EVIL, EVIL])  # fixed tick labels
            ax.set_title(EVIL)
            ax.set_xlabel(EVIL)
            ax.annotate(EVIL, (0, 1))
            ax.legend()
            fig.suptitle(EVIL)
            fig.tight_layout()  # a layout measures the texts before any save
            out = io.StringIO()
            fig.savefig(out, format="svg")
        finally:
            plt.close(fig)
    svg = out.getvalue()
    assert not RAW.search(svg)
    assert svg.count("ev\\x1b[31mil\\x07 \\u202egnp.exe \\x85") >= 6


def test_newlines_and_tabs_are_kept_for_perflabs_own_texts() -> None:
    plt = pyplot()
    fig, ax = plt.subplots()
    try:
        ax.set_title("two\nlines\tand a tab")
        assert ax.get_title() == "two\nlines\tand a tab"
        ax.set_title(None)
        assert ax.get_title() == ""
    finally:
        plt.close(fig)
