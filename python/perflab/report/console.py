"""Render tables on the terminal with rich, and as Markdown or CSV text.

Every cell, title and footnote may hold untrusted text (benchmark names,
groups, commands, URLs): it is escaped here for each output by
:mod:`perflab.report.escape`, so no table builder has to.
"""

from __future__ import annotations

import csv
import io
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from perflab.report import escape
from perflab.report.table import Table

#: The formats every command prints on stdout.
FORMATS = ("table", "markdown", "csv")


def make_console(stderr: bool = False) -> Any:
    """A rich Console; wide (160 columns) when not writing to a terminal, so files and
    CI logs get whole tables instead of wrapped ones."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() else 200
    return Console(file=stream, width=width, highlight=False, soft_wrap=False)


def print_tables(tables: Iterable[Table], console: Any | None = None) -> None:
    """Print tables with rich: title, header, rows, then the footnotes in plain words."""
    from rich import box
    from rich.table import Table as RichTable

    console = console or make_console()
    for table in tables:
        rich_table = RichTable(title=escape.rich_text(table.title), box=box.SIMPLE_HEAVY,
                               title_justify="left", title_style="bold")
        for name, align in zip(table.columns, table.align or ["l"] * len(table.columns)):
            rich_table.add_column(escape.rich_text(name), justify="right" if align == "r"
                                  else "left", no_wrap=align == "r")
        for row in table.rows:
            rich_table.add_row(*(escape.rich_text(cell) for cell in row))
        console.print(rich_table)
        for line in table.footnotes:
            console.print(escape.rich_text(f"  • {line}"))
        console.print()


def markdown(tables: Sequence[Table]) -> str:
    """GitHub-flavoured Markdown: a heading, a pipe table and a bullet list per table."""
    out = []
    for table in tables:
        out.append(f"### {escape.markdown_text(table.title)}\n")
        out.append("| " + " | ".join(escape.markdown_cell(c) for c in table.columns) + " |")
        align = table.align or ["l"] * len(table.columns)
        out.append("|" + "|".join("---:" if a == "r" else "---" for a in align) + "|")
        out += ["| " + " | ".join(escape.markdown_cell(c) for c in row) + " |"
                for row in table.rows]
        out.append("")
        out += [f"- {escape.markdown_text(line)}" for line in table.footnotes]
        out.append("")
    return "\n".join(out)


def csv_text(rows: Sequence[dict[str, Any]]) -> str:
    """CSV of flat records (numbers in base units, shortest exact form), header from the
    union of keys; text cells guarded against spreadsheet formulas."""
    columns = list(dict.fromkeys(k for row in rows for k in row))
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=[escape.csv_cell(c) for c in columns],
                            lineterminator="\n")
    writer.writeheader()
    writer.writerows({escape.csv_cell(k): escape.csv_cell(v) for k, v in row.items()}
                     for row in rows)
    return buffer.getvalue()


def emit(fmt: str, tables: Sequence[Table] | Callable[[], Sequence[Table]],
         records: Sequence[dict[str, Any]] | Callable[[], Sequence[dict[str, Any]]] | None = None
         ) -> None:
    """Print on stdout in ``fmt``: rich tables ("table"), Markdown, or CSV of ``records``.

    The one output switch of every command (run, cmd, http, doctor, compare, fit, show).

    Args:
        fmt: one of :data:`FORMATS`.
        tables: the tables, or a function building them (called only when needed).
        records: flat records for CSV (or a function making them); None: CSV of the
            tables' rows, one record per row keyed by the column names.
    """
    if fmt == "csv":
        made = records() if callable(records) else records
        if made is None:
            built = tables() if callable(tables) else tables
            made = [dict(zip(t.columns, row)) for t in built for row in t.rows]
        sys.stdout.write(csv_text(made))
        return
    built = tables() if callable(tables) else tables
    if fmt == "markdown":
        sys.stdout.write(markdown(built))
    else:
        print_tables(built)
