"""The HTML report's page: one self-contained file, no script, no network.

Everything is inline: the style sheet and the charts (SVG). The page has no
JavaScript at all, so it reads the same with scripts disabled, opens from disk,
prints (charts keep their size, sections don't break inside a chart), and can
make no request. Every text that comes from a file or the user goes through
:func:`perflab.report.escape.html`; figures that tests and tools read back are
in ``data-*`` attributes as exact numbers (``repr`` of the float).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from perflab.report.escape import html as esc
from perflab.report.table import Table

#: What every report file starts with (how perflab knows an existing file is its own).
SIGNATURE = "<!DOCTYPE html><!-- perflab report -->"

_STYLE = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:2em auto;
max-width:1100px;padding:0 1em;color:#1b1b1b}
h1{font-size:1.5em}h2{font-size:1.25em;border-bottom:1px solid #ccc;padding-bottom:.2em;
margin-top:2em}h3{font-size:1.05em;margin-top:1.5em}
table{border-collapse:collapse;margin:.6em 0;font-size:13px}
th,td{border-bottom:1px solid #e3e3e3;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f4f4f4}td.r,th.r{text-align:right;font-variant-numeric:tabular-nums}
ul.notes{font-size:12.5px;color:#444;margin:.2em 0 1em}
figure{margin:1em 0;break-inside:avoid}figure svg{max-width:100%;height:auto}
code,.cmd{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12.5px}
.cmd{background:#f6f6f6;padding:.4em .6em;display:block;white-space:pre-wrap;
overflow-wrap:anywhere}
details{margin:.6em 0}summary{cursor:pointer;color:#333}
.ok{color:#1a7f37}.warn{color:#9a6700}.fail{color:#cf222e}
@media print{body{max-width:none;margin:0}details{display:block}h2{break-before:auto}}
"""


@dataclass
class Section:
    """One part of the page: a heading and its blocks of HTML (already escaped).

    Attributes:
        title: the heading text (escaped when rendered).
        blocks: HTML fragments in order.
        level: 2 for a top-level section, 3 for a subsection.
    """

    title: str
    blocks: list[str] = field(default_factory=list)
    level: int = 2


def table_html(
    table: Table, data: Sequence[dict[str, float | str]] | None = None, css_class: str = ""
) -> str:
    """A :class:`Table` as an HTML table, its footnotes as a list under it.

    Args:
        table: the rendered-agnostic table (cells are untrusted text).
        data: per row, attributes written as ``data-KEY="VALUE"`` on the ``<tr>``
            (numbers as ``repr``: exact), or None.
        css_class: the table's class attribute.

    Returns:
        The HTML.
    """
    align = table.align or ["l"] * len(table.columns)
    head = "".join(
        f'<th class="{"r" if a == "r" else ""}">{esc(c)}</th>' for c, a in zip(table.columns, align)
    )
    rows = []
    for i, row in enumerate(table.rows):
        attrs = ""
        if data is not None and i < len(data):
            attrs = "".join(f' data-{esc(k)}="{esc(_exact(v))}"' for k, v in data[i].items())
        cells = "".join(
            f'<td class="{"r" if a == "r" else ""}">{esc(c)}</td>' for c, a in zip(row, align)
        )
        rows.append(f"<tr{attrs}>{cells}</tr>")
    out = [
        f'<table class="{esc(css_class)}"><caption>{esc(table.title)}</caption>'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    ]
    if table.footnotes:
        out.append(
            '<ul class="notes">' + "".join(f"<li>{esc(n)}</li>" for n in table.footnotes) + "</ul>"
        )
    return "".join(out)


def _exact(value: float | str) -> str:
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else "nan"
    return str(value)


def pairs_html(rows: Sequence[tuple[str, str]]) -> str:
    """A two-column table of (label, text) pairs, e.g. the environment fingerprint."""
    body = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in rows)
    return f'<table class="pairs"><tbody>{body}</tbody></table>'


def figure_html(svg: str, caption: str, kind: str) -> str:
    """A chart (an ``<svg>`` made by matplotlib, trusted) with an escaped caption;
    ``kind`` names the chart in ``data-chart`` (what tests count)."""
    return f'<figure data-chart="{esc(kind)}">{svg}<figcaption>{esc(caption)}</figcaption></figure>'


def command_html(argv: Sequence[str]) -> str:
    """The exact command line, shell-quoted, as a code block."""
    import shlex

    return f'<code class="cmd">{esc(shlex.join(str(a) for a in argv))}</code>'


def paragraph(text: str) -> str:
    """An escaped paragraph."""
    return f"<p>{esc(text)}</p>"


def page(title: str, intro: Sequence[str], sections: Sequence[Section]) -> str:
    """The whole document.

    Args:
        title: the page title (escaped).
        intro: escaped-on-render paragraphs under the title.
        sections: the content.

    Returns:
        The HTML text, starting with :data:`SIGNATURE`.
    """
    parts = [
        SIGNATURE,
        '\n<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        # no script, no request: a policy that says so to the browser too
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; img-src data:\">",
        f"<title>{esc(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{esc(title)}</h1>",
        *(paragraph(p) for p in intro),
    ]
    contents = "".join(
        f'<li><a href="#s{i}">{esc(s.title)}</a></li>'
        for i, s in enumerate(sections)
        if s.level == 2
    )
    if contents:
        parts.append(f"<nav><ul>{contents}</ul></nav>")
    for i, section in enumerate(sections):
        parts.append(
            f'<section id="s{i}"><h{section.level}>{esc(section.title)}'
            f"</h{section.level}>{''.join(section.blocks)}</section>"
        )
    parts.append("</body></html>\n")
    return "".join(parts)
