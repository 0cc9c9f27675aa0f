"""Escaping of untrusted text (names, groups, labels, notes, paths) for each output.

Everything that comes from a file or the user passes through one of these
before it is shown:

* :func:`terminal` — control characters (C0, DEL, C1, and the Unicode bidi
  overrides that reorder text) become visible ``\\xNN`` / ``\\uNNNN`` escapes, so
  no escape sequence (colours, OSC window titles, OSC 8 links) reaches the
  terminal; rich markup is neutralized by :func:`rich_text`;
* :func:`markdown_cell` — one line (newlines shown as ``\\x0a``), ``<`` as
  ``&lt;`` (no HTML tag), backticks, link brackets and pipes escaped;
* :func:`csv_cell` — a text starting with ``=``, ``+``, ``-``, ``@``, tab or CR
  is prefixed with ``'`` (OWASP's defence against spreadsheet formula
  injection); numbers are written in their shortest exact form;
* :func:`html` — ``& < > " '`` as entities.
"""

from __future__ import annotations

import math
import re
from typing import Any

#: C0 controls but tab and newline, DEL, C1 controls, and bidi/isolate overrides.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_CONTROL_ALL = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
#: Markdown that changes what a cell shows: code spans, links/images, HTML, cell breaks.
_MARKDOWN_SPECIAL = re.compile(r"([\\`\[\]|])")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal(text: Any, one_line: bool = False) -> str:
    """``text`` with every control character shown as an escape (``\\x1b``).

    Args:
        text: any value; it is turned into a string first.
        one_line: also escape tab and newline (for a single table cell or a log line).
    """
    return (_CONTROL_ALL if one_line else _CONTROL).sub(_visible, str(text))


def rich_text(text: Any, style: str = "", one_line: bool = False) -> Any:
    """A rich ``Text`` of ``text``: never parsed as markup, controls made visible
    (with ``one_line``, newlines and tabs too: a title, a header, a name)."""
    from rich.text import Text

    return Text(terminal(text, one_line), style=style)


def markdown_cell(text: Any) -> str:
    """One Markdown table cell: a single line, HTML and Markdown syntax escaped."""
    line = terminal(str(text).replace("\r\n", "\n"), one_line=True)
    # "<" as an entity: no renderer reads a tag from it (backslash escapes vary)
    return _MARKDOWN_SPECIAL.sub(r"\\\1", line).replace("<", "&lt;")


def markdown_text(text: Any) -> str:
    """A Markdown paragraph or heading from plain text: one line, HTML escaped."""
    return markdown_cell(text)


def csv_cell(value: Any) -> Any:
    """A CSV field: numbers in shortest exact form, text guarded against formulas.

    Returns:
        ``value`` unchanged for None and bools, the shortest repr of a number
        (``0.0002``, ``1e-09``; "" for NaN/inf), a string otherwise.
    """
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, float):
        return shortest(value)
    if isinstance(value, int):
        return value
    text = terminal(value, one_line=True)
    return "'" + text if text.startswith(_FORMULA_START) else text


def shortest(value: float, digits: int = 12) -> str:
    """The shortest decimal text of ``value`` at ``digits`` significant digits:
    0.00019999999999999998 → ``0.0002``; "" for NaN or inf.

    Figures computed in base units (2e-4 s from 200 µs × 1e-6) carry binary noise
    in their last digits; 12 significant digits keep nanoseconds exact for times
    below 1,000 s and are far beyond any figure's confidence interval.
    """
    if not math.isfinite(value):
        return ""
    text = repr(float(f"{value:.{digits}g}"))
    return text[:-2] if text.endswith(".0") else text


def html(text: Any) -> str:
    """``text`` for HTML: ``& < > " '`` as entities and controls made visible."""
    import html as _html  # here: html.entities' table is no terminal run's start-up

    return _html.escape(terminal(text), quote=True)
