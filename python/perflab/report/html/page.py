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
from typing import Any

from perflab.report.escape import html as esc
from perflab.report.table import Table

#: What every report file starts with (how perflab knows an existing file is its own).
SIGNATURE = "<!DOCTYPE html><!-- perflab report -->"

_STYLE = """
*{box-sizing:border-box}
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1b1b1b;
background:#fff}
main{max-width:1360px;margin:0 auto;padding:1.2em 2.2em 3em}
h1{font-size:1.6em;margin:.2em 0}h2{font-size:1.3em;border-bottom:2px solid #d0d7de;
padding-bottom:.25em;margin-top:2.2em}h3{font-size:1.08em;margin-top:1.8em}
p.lead{color:#555;margin:.2em 0 1em}
h1,h2,h3,p,li,figcaption,summary,caption,table.summary td{overflow-wrap:anywhere}
nav ul{list-style:none;padding:0;margin:.8em 0;display:flex;flex-wrap:wrap;gap:.4em}
nav a{display:inline-block;padding:.15em .7em;border:1px solid #d0d7de;border-radius:1em;
text-decoration:none;color:#0550ae;font-size:13px}
.tw{overflow-x:auto;margin:.6em 0;max-width:100%}
table{border-collapse:collapse;font-size:13px;width:100%}
caption{text-align:left;font-weight:600;padding:.2em 0 .4em;color:#333}
th,td{border-bottom:1px solid #e3e3e3;padding:.3em .65em;text-align:left;vertical-align:top}
th{background:#f4f6f8;font-weight:600}
td.r,th.r{text-align:right;font-variant-numeric:tabular-nums}
td.r{white-space:nowrap}
td.n{white-space:nowrap}
table.pairs{width:auto}table.pairs th{text-align:left}
ul.notes{font-size:12.5px;color:#444;margin:.2em 0 1em;padding-left:1.3em}
figure{margin:1.4em 0;break-inside:avoid}
figure svg{display:block;max-width:100%;height:auto}
figcaption{font-size:13px;color:#444;margin-top:.3em}
code,.cmd{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12.5px}
.cmd{background:#f6f8fa;padding:.4em .6em;display:block;white-space:pre-wrap;
overflow-wrap:anywhere}
details{margin:.6em 0}summary{cursor:pointer;color:#333}
.ok,.faster,.less{color:#1a7f37}.warn,.inconclusive{color:#9a6700}.fail,.slower,.more{color:#cf222e}
.same{color:#0550ae}.failed{color:#cf222e}
td.verdict{font-weight:600;white-space:nowrap}
.counts{display:flex;flex-wrap:wrap;gap:.6em;margin:.8em 0}
.counts span{border:1px solid #d0d7de;border-radius:.4em;padding:.3em .8em;font-size:14px}
.counts b{font-size:18px;margin-right:.3em}
@media (max-width:700px){main{padding:.8em .8em 2em}body{font-size:14px}
th,td{padding:.25em .4em}
.tw table{width:max-content;min-width:100%}.tw td{max-width:20em}
table.summary thead{display:none}table.summary tr{display:block;padding:.4em 0;
border-bottom:1px solid #e3e3e3}table.summary td{display:inline;border:0;padding:0 .5em 0 0}
table.summary td.sure{display:block;font-size:12.5px;color:#444}}
@media print{main{max-width:none;padding:0}details{display:block}h2{break-before:auto}
.tw{overflow:visible}}
"""


@dataclass
class Section:
    """One part of the page: a heading and its blocks of HTML (already escaped).

    Attributes:
        title: the heading text (escaped when rendered).
        blocks: HTML fragments in order.
        level: 2 for a top-level section, 3 for a subsection.
        kind: what the section shows, written as ``data-section`` ("summary", "run",
            "doctor", …; "" for none): what tests and the page's own checks read.
    """

    title: str
    blocks: list[str] = field(default_factory=list)
    level: int = 2
    kind: str = ""


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
        f'<div class="tw"><table class="{esc(css_class)}"><caption>{esc(table.title)}</caption>'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    ]
    if table.footnotes:
        notes = '<ul class="notes">' + "".join(f"<li>{esc(n)}</li>" for n in table.footnotes)
        notes += "</ul>"
        if len(table.footnotes) > FOLD_NOTES:
            notes = folded(f"{len(table.footnotes)} notes on this table", notes)
        out.append(notes)
    return "".join(out)


#: Most footnotes a table shows open; more are folded under one line (open to read).
FOLD_NOTES = 3


def folded(summary: str, html: str, open_: bool = False) -> str:
    """``html`` folded under a ``<details>`` line reading ``summary`` (escaped); printed
    pages show it unfolded."""
    return f"<details{' open' if open_ else ''}><summary>{esc(summary)}</summary>{html}</details>"


def _exact(value: float | str) -> str:
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else "nan"
    return str(value)


def pairs_html(rows: Sequence[tuple[str, str]]) -> str:
    """A two-column table of (label, text) pairs, e.g. the environment fingerprint."""
    body = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in rows)
    return f'<div class="tw"><table class="pairs"><tbody>{body}</tbody></table></div>'


def figure_html(
    svg: str, caption: str, kind: str, data: dict[str, float | str] | None = None
) -> str:
    """A chart (an ``<svg>`` made by matplotlib, trusted) with an escaped caption;
    ``kind`` names the chart in ``data-chart`` (what tests count), ``data`` adds
    ``data-KEY="VALUE"`` attributes (e.g. the axes' scales, the measured points drawn)."""
    attrs = "".join(f' data-{esc(k)}="{esc(_exact(v))}"' for k, v in (data or {}).items())
    return (
        f'<figure data-chart="{esc(kind)}"{attrs}>{svg}'
        f"<figcaption>{esc(caption)}</figcaption></figure>"
    )


def command_html(argv: Sequence[str]) -> str:
    """The exact command line, shell-quoted, as a code block."""
    import shlex

    return f'<code class="cmd">{esc(shlex.join(str(a) for a in argv))}</code>'


def paragraph(text: str) -> str:
    """An escaped paragraph."""
    return f"<p>{esc(text)}</p>"


def short_paths(text: str) -> str:
    """``text`` with each word that is a file path cut to its last part:
    "run: /tmp/x/run.json" → "run: run.json" (the contents' chips; titles keep the path)."""
    return " ".join(w.rstrip("/").rsplit("/", 1)[-1] if "/" in w else w for w in text.split(" "))


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
        f"<title>{esc(title)}</title><style>{_STYLE}</style></head><body><main>",
        f"<h1>{esc(title)}</h1>",
        *(f'<p class="lead">{esc(p)}</p>' for p in intro),
    ]
    contents = "".join(
        f'<li><a href="#s{i}" title="{esc(s.title)}">{esc(short_paths(s.title))}</a></li>'
        for i, s in enumerate(sections)
        if s.level == 2
    )
    if contents:
        parts.append(f"<nav><ul>{contents}</ul></nav>")
    for i, section in enumerate(sections):
        parts.append(
            f'<section id="s{i}" data-section="{esc(section.kind)}">'
            f"<h{section.level}>{esc(section.title)}</h{section.level}>"
            f"{''.join(section.blocks)}</section>"
        )
    parts.append("</main></body></html>\n")
    return "".join(parts)


def header(results: Any, name: str) -> list[str]:
    """The line naming one results file (kind, start, perflab version), its exact command
    line and its environment fingerprint (folded), as HTML blocks; ``results`` is a
    :class:`perflab.model.Results`."""
    from perflab.environment import describe

    return [
        paragraph(
            f"{results.kind} results from {name}, started {results.created}, "
            f"perflab {results.perflab_version}"
            + (" (interrupted: partial)" if results.interrupted else "")
        ),
        command_html(results.command_line),
        "<details><summary>environment fingerprint</summary>"
        + pairs_html(describe(results.environment))
        + "</details>",
    ]
