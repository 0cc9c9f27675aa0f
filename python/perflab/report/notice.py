"""One line of news on stderr ("results saved to PATH", "note: …", "error: …").

Paths, names and messages in such lines come from the user or from files: a path
holding ``ESC ] 0 ;`` would retitle the terminal, a newline would forge a second line.
:func:`tell` shows every control character (and bidi override) as a visible escape
(:func:`perflab.report.escape.terminal`, newlines and tabs included), as the tables do.
"""

from __future__ import annotations

import sys

from perflab.report.escape import terminal


def tell(line: str) -> None:
    """Write ``line`` and a newline to stderr with its control characters escaped.

    Args:
        line: the whole line, without its newline (``f"results saved to {path}"``).
    """
    sys.stderr.write(terminal(line, one_line=True) + "\n")
