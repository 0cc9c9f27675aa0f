"""Render tables on the terminal with rich, and as Markdown or CSV text."""

from __future__ import annotations

import csv
import io
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from perflab.report.table import Table


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
        rich_table = RichTable(title=table.title, box=box.SIMPLE_HEAVY, title_justify="left",
                               title_style="bold")
        for name, align in zip(table.columns, table.align or ["l"] * len(table.columns)):
            rich_table.add_column(name, justify="right" if align == "r" else "left",
                                  no_wrap=align == "r")
        for row in table.rows:
            rich_table.add_row(*row)
        console.print(rich_table)
        for line in table.footnotes:
            console.print(f"  • {line}", markup=False)
        console.print()


def markdown(tables: Sequence[Table]) -> str:
    """GitHub-flavoured Markdown: a heading, a pipe table and a bullet list per table."""
    out = []
    for table in tables:
        out.append(f"### {table.title}\n")
        out.append("| " + " | ".join(table.columns) + " |")
        out.append("|" + "|".join("---:" if a == "r" else "---" for a in table.align) + "|")
        out += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |"
                for row in table.rows]
        out.append("")
        out += [f"- {line}" for line in table.footnotes]
        out.append("")
    return "\n".join(out)


def csv_text(rows: Sequence[dict[str, Any]]) -> str:
    """CSV of flat records (numbers in base units), header from the union of keys."""
    columns = list(dict.fromkeys(k for row in rows for k in row))
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()
