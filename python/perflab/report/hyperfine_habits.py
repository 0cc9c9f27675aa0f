"""hyperfine's output options on ``perflab cmd``: ``-u/--time-unit``, ``--style``,
``--sort``, ``--output``, ``--export-asciidoc`` and ``--export-orgmode``, as hyperfine
spells them (hyperfine 1.18's ``--help``), so a hyperfine command line runs unchanged.

Each option maps onto what perflab already does (``--output inherit`` is ``--show-output``;
``--style basic`` turns colours and the progress display off) or onto the table's
rendering (:func:`perflab.report.cmd_table.configure`); what perflab can't do gets one
``error:`` line naming what it does instead.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence
from typing import Any

from perflab.errors import UsageError
from perflab.report import escape
from perflab.report.table import Table

#: ``-u`` values → (unit name, seconds per unit), as :func:`perflab.units.format_time` takes.
TIME_UNITS = {
    "second": ("s", 1.0),
    "millisecond": ("ms", 1e-3),
    "microsecond": ("µs", 1e-6),
    "nanosecond": ("ns", 1e-9),
}
STYLES = ("auto", "basic", "full", "nocolor", "color", "none")
SORTS = ("auto", "command", "mean-time")
#: The export formats added here → the first line that marks the file as perflab's own.
EXPORTS = {"asciidoc": "// perflab cmd", "orgmode": "# perflab cmd"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options, with hyperfine's names and values."""
    parser.add_argument(
        "-u",
        "--time-unit",
        choices=list(TIME_UNITS),
        help="print every time of the table in this unit (hyperfine's -u; default: each "
        "figure in its own unit)",
    )
    parser.add_argument(
        "--style",
        choices=STYLES,
        default="auto",
        help="hyperfine's --style: basic (no colours, no progress), full (both), nocolor, "
        "color (no progress), none (print nothing; the results file is still written)",
    )
    parser.add_argument(
        "--sort",
        choices=SORTS,
        default="auto",
        help="row order: auto and command keep the commands' order, mean-time sorts by "
        "the median, fastest first (hyperfine's --sort)",
    )
    parser.add_argument(
        "--output",
        metavar="WHERE",
        default="null",
        help="where the commands' output goes: null (discarded, the default) or inherit "
        "(the terminal, as --show-output); hyperfine's pipe and FILE are refused with "
        "what to do instead",
    )
    for kind in EXPORTS:
        parser.add_argument(
            f"--export-{kind}",
            metavar="FILE",
            help=f"also write the table as {'AsciiDoc' if kind == 'asciidoc' else 'Org mode'} "
            "to FILE (hyperfine's option)",
        )


def apply(args: argparse.Namespace) -> None:
    """Map the options onto perflab's: ``--output inherit`` sets ``show_output``; a style
    without progress sets ``quiet``; one without colours sets ``NO_COLOR`` (which rich
    honours); the time unit and the sort go to the table
    (:func:`perflab.report.cmd_table.configure`).

    Raises:
        UsageError: ``--output pipe`` or ``--output FILE`` (one line naming what to use).
    """
    from perflab.report import cmd_table

    where = args.output.strip()
    if where == "inherit":
        args.show_output = True
    elif where == "pipe":
        raise UsageError(
            "--output pipe: perflab discards the output through /dev/null (--output null, "
            "the default) or shows it (--output inherit); a pipe's cost is not modelled"
        )
    elif where != "null":
        raise UsageError(
            f"--output {escape.terminal(where, one_line=True)}: perflab can't write the "
            "commands' output to a file; redirect inside the command (--shell "
            "'cmd > FILE') or show it with --output inherit"
        )
    if args.style in ("basic", "color", "none"):
        args.quiet = True
    if args.style in ("basic", "nocolor", "none"):
        os.environ["NO_COLOR"] = "1"
    cmd_table.configure(
        time_unit=TIME_UNITS[args.time_unit] if args.time_unit else None,
        sort_by_time=args.sort == "mean-time",
    )


def prints_table(args: argparse.Namespace) -> bool:
    """False for ``--style none``: nothing on stdout."""
    return args.style != "none"


def check_exports(args: argparse.Namespace, others: Sequence[Any]) -> dict[str, Any]:
    """The checked ``--export-asciidoc`` / ``--export-orgmode`` destinations by kind; none
    may share a place with ``others`` (the other output files).

    Raises:
        UsageError: as :meth:`perflab.files.Destination.check`, or two outputs on one place.
    """
    from perflab.files import Destination, distinct

    out = {
        kind: Destination.check(path, f"--export-{kind}", kind)
        for kind in EXPORTS
        if (path := getattr(args, f"export_{kind}", None)) is not None
    }
    distinct([*others, *out.values()])
    return out


def write_exports(later: Any, exports: dict[str, Any], tables: Callable[[], list[Table]]) -> None:
    """Write each checked export after the run (a failed write is kept in ``later``)."""
    from perflab.files import save

    for kind, destination in exports.items():
        render = asciidoc if kind == "asciidoc" else orgmode
        later.run(save, destination, lambda r=render: r(tables()).encode(), f"{kind} export")


def _plain(text: str) -> str:
    """A cell for a text table: one line, no terminal controls."""
    return escape.terminal(text, one_line=True)


def asciidoc(tables: Sequence[Table]) -> str:
    """The tables in AsciiDoc: a ``.title``, a ``|===`` table with a header row, and the
    footnotes as a list; ``|`` in cells escaped. Starts with ``// perflab cmd``."""
    out = [EXPORTS["asciidoc"], ""]
    for table in tables:
        align = table.align or ["l"] * len(table.columns)
        cols = ",".join(">" if a == "r" else "<" for a in align)
        out += [f".{_plain(table.title)}", f'[cols="{cols}",options="header"]', "|==="]
        for row in [table.columns, *table.rows]:
            out.append(" ".join("| " + _plain(c).replace("|", "\\|") for c in row))
        out += ["|===", ""]
        out += [f"* {_plain(line)}" for line in table.footnotes]
        out.append("")
    return "\n".join(out)


def orgmode(tables: Sequence[Table]) -> str:
    """The tables as Org mode tables (a ``#+CAPTION``, a header rule, ``|`` in cells
    replaced by ``¦``) with the footnotes as a list. Starts with ``# perflab cmd``."""
    out = [EXPORTS["orgmode"], ""]
    for table in tables:
        out.append(f"#+CAPTION: {_plain(table.title)}")
        rows = [[_plain(c).replace("|", "¦") for c in row] for row in [table.columns, *table.rows]]
        out.append("| " + " | ".join(rows[0]) + " |")
        out.append("|" + "+".join("-" * (len(c) + 2) for c in rows[0]) + "|")
        out += ["| " + " | ".join(row) + " |" for row in rows[1:]]
        out += [f"- {_plain(line)}" for line in table.footnotes]
        out.append("")
    return "\n".join(out)
