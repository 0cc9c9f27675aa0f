"""Render tables on the terminal with rich, and as Markdown or CSV text.

Every cell, title and footnote may hold untrusted text (benchmark names,
groups, commands, URLs): it is escaped here for each output by
:mod:`perflab.report.escape`, so no table builder has to.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from perflab.report import escape
from perflab.report.table import KEY, NOTE, Table

#: The formats every command prints on stdout.
FORMATS = ("table", "markdown", "csv")


#: Width of output that is not a terminal (a pipe, a file, a CI log) when ``COLUMNS`` is
#: not set: readable in a CI log viewer without horizontal scrolling.
PIPE_WIDTH = 120
#: The narrowest an identifying (KEY) text column is wrapped to before lower-priority
#: columns fold away; a NOTE column's narrowest, and a folding text column's.
KEY_MIN_WIDTH = 30
NOTE_MIN_WIDTH = 12
DETAIL_MIN_WIDTH = 16
#: The narrowest an identifying text column wraps to when nothing else is left to fold:
#: a name wrapped over more lines beats a figure or ratio cut short.
NAME_LAST_WIDTH = 6
#: Print every column whatever the width (``--wide``); set by :func:`configure`.
_WIDE = False
#: Longest name (a table's first cell) the terminal shows whole, characters: a longer one
#: is shown as its start and end around "…", in its row, the title and the footnotes
#: (a 10,000-character name filled hundreds of lines); Markdown and CSV keep it whole.
MAX_NAME_CHARS = 120


def configure(wide: bool = False) -> None:
    """Set the width policy of this process's tables: ``wide`` prints every column, with
    lines as long as they need (``--wide``), instead of folding columns away."""
    global _WIDE
    _WIDE = wide


def terminal_width(stream: Any) -> int | None:
    """The width tables are laid out for: None on a terminal (rich asks it), else
    ``COLUMNS`` when it is a number ≥ 20, else :data:`PIPE_WIDTH`."""
    if stream.isatty():
        return None
    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() and int(columns) >= 20 else PIPE_WIDTH


def make_console(stderr: bool = False) -> Any:
    """A rich Console on stdout (or stderr) of :func:`terminal_width`.

    Emoji codes are off: what perflab prints from outside (names, URLs) goes through
    :func:`perflab.report.escape.rich_text`, which rich never reads codes in, so this
    changes no output; with them on, rich looks every plain string it prints up in its
    table of ≈ 4,000 emoji names, whose import alone is start-up CPU every run paid."""
    stream = sys.stderr if stderr else sys.stdout
    return _console(stream, terminal_width(stream))


def _console(stream: Any, width: int | None) -> Any:
    """A rich Console on ``stream`` of ``width`` columns (None: rich's own guess), with
    perflab's settings: no highlighting, no soft wrap, no emoji codes
    (:func:`make_console` says why)."""
    from rich.console import Console

    return Console(file=stream, width=width, highlight=False, soft_wrap=False, emoji=False)


def _ranks(table: Table) -> list[int]:
    return table.fold if len(table.fold) == len(table.columns) else [KEY] * len(table.columns)


def _cells(table: Table, i: int) -> list[str]:
    return [
        escape.terminal(c, one_line=True)
        for c in [table.columns[i], *(row[i] for row in table.rows)]
    ]


def natural_widths(table: Table) -> list[int]:
    """Each column's width in terminal cells with nothing wrapped (header or widest cell)."""
    from rich.cells import cell_len

    return [max(cell_len(c) for c in _cells(table, i)) for i in range(len(table.columns))]


def min_widths(table: Table, key_floor: int = KEY_MIN_WIDTH) -> list[int]:
    """The narrowest each column is laid out.

    Numbers (right-aligned) never wrap: their whole width. Text wraps, down to a floor
    by rank (``key_floor``, :data:`NOTE_MIN_WIDTH`, :data:`DETAIL_MIN_WIDTH`) but not
    narrower than its longest word (in the first column, the name, up to ``key_floor``), so
    words are not broken;
    never wider than the column's natural width.
    """
    from rich.cells import cell_len

    ranks = _ranks(table)
    align = table.align or ["l"] * len(table.columns)
    out = []
    for i, natural in enumerate(natural_widths(table)):
        if align[i] == "r":
            out.append(natural)
            continue
        floor = {KEY: key_floor, NOTE: NOTE_MIN_WIDTH}.get(ranks[i], DETAIL_MIN_WIDTH)
        word = max((cell_len(w) for c in _cells(table, i) for w in c.split()), default=1)
        # a name (the first column) may break a long word; a verdict or a note word not
        out.append(min(natural, max(floor, min(word, key_floor) if i == 0 else word)))
    return out


def empty_notes(table: Table) -> set[int]:
    """The NOTE columns with no text in any row: not printed (an empty column only
    takes room from the figures)."""
    return {
        i
        for i, rank in enumerate(_ranks(table))
        if rank == NOTE and table.rows and not any(row[i].strip() for row in table.rows)
    }


def fit_columns(table: Table, width: int) -> tuple[list[int], list[int]]:
    """The columns shown at ``width`` terminal columns, and each column's narrowest width.

    Every column shows when the table fits with each column at its narrowest
    (:func:`min_widths`; a NOTE column with no text is left out, :func:`empty_notes`;
    the SIMPLE_HEAVY box adds two spaces of padding per column, one
    between columns and one at each edge); otherwise columns fold away by rank, rank 1
    first (the rightmost first among equal ranks), until it fits or only KEY and NOTE
    columns are left. If those still don't fit, identifying text wraps narrower (down to
    :data:`NAME_LAST_WIDTH`) before rich has to squeeze anything.

    Returns:
        (indexes of the shown columns, the narrowest width of every column in cells).
    """
    ranks = _ranks(table)
    narrowest = min_widths(table)
    shown = [i for i in range(len(table.columns)) if i not in empty_notes(table)]
    folding = sorted((i for i in shown if ranks[i] > 0), key=lambda i: (ranks[i], -i))

    def need() -> int:
        return 1 + sum(narrowest[i] + 3 for i in shown)

    while need() > width and folding:
        shown.remove(folding.pop(0))
    floor = KEY_MIN_WIDTH
    while need() > width and floor > NAME_LAST_WIDTH:
        floor -= 2
        narrowest = min_widths(table, floor)
    return shown, narrowest


def text_widths(
    table: Table, shown: Sequence[int], narrowest: Sequence[int], width: int
) -> dict[int, int]:
    """The widths of the shown columns that wrap (narrowest < natural), sharing the room
    left at ``width`` equally (water-filling: no column beyond its natural width).

    Set as rich column widths, so that rich never narrows one below its narrowest (its
    own collapse shrinks the widest wrapping columns first, names included).
    """
    natural = natural_widths(table)
    wrapping = sorted((i for i in shown if narrowest[i] < natural[i]), key=lambda i: natural[i])
    room = width - 1 - sum(narrowest[i] + 3 for i in shown)
    out = {i: narrowest[i] for i in wrapping}
    for n, i in enumerate(wrapping):
        extra = min(max(room, 0) // (len(wrapping) - n), natural[i] - narrowest[i])
        out[i] += extra
        room -= extra
    return out


def folded_line(table: Table, shown: Sequence[int], width: int) -> str | None:
    """The footer naming the columns folded away, and how to see them; None if none."""
    hidden = [
        c for i, c in enumerate(table.columns) if i not in shown and i not in empty_notes(table)
    ]
    if not hidden:
        return None
    return (
        f"folded away to fit {width} columns: {', '.join(hidden)} (every column: --wide or "
        "--format markdown)"
    )


def short_name(text: str, limit: int = MAX_NAME_CHARS) -> str:
    """``text`` when it has at most ``limit`` characters, else its start and its end
    around "…" (``limit`` characters in all: names often differ only at the end)."""
    if len(text) <= limit:
        return text
    head = (limit - 1) // 2
    return text[:head] + "…" + text[len(text) - (limit - 1 - head) :]


def _short_names(table: Table) -> Table:
    """``table`` with every first cell longer than :data:`MAX_NAME_CHARS` shortened by
    :func:`short_name`, in its row and wherever the title and footnotes name it."""
    from dataclasses import replace

    long = {
        row[0]: short_name(row[0])
        for row in table.rows
        if row and isinstance(row[0], str) and len(row[0]) > MAX_NAME_CHARS
    }
    if not long:
        return table

    def shorten(text: str) -> str:
        for name in sorted(long, key=len, reverse=True):
            text = text.replace(name, long[name])
        return text

    return replace(
        table,
        title=shorten(table.title),
        rows=[[long.get(row[0], row[0]), *row[1:]] if row else row for row in table.rows],
        footnotes=[shorten(line) for line in table.footnotes],
    )


def print_tables(tables: Iterable[Table], console: Any | None = None) -> None:
    """Print tables with rich: title, header, rows, then the footnotes in plain words.

    One width policy for every table: identifying columns and headline figures (KEY) keep
    their whole text and never lose a unit; notes (NOTE) wrap within their row; other
    columns fold away in their table's stated order (:attr:`Table.fold`) and the first
    footnote names them. With :func:`configure` (``wide=True``) every column shows.
    """
    from rich import box
    from rich.table import Table as RichTable

    console = console or make_console()
    for table in map(_short_names, tables):
        align = table.align or ["l"] * len(table.columns)
        shown, narrowest = fit_columns(table, console.width)
        if _WIDE:
            shown = list(range(len(table.columns)))
        rich_table = RichTable(
            title=escape.rich_text(table.title, one_line=True),
            box=box.SIMPLE_HEAVY,
            title_justify="left",
            title_style="bold",
        )
        fixed = {} if _WIDE else text_widths(table, shown, narrowest, console.width)
        for i in shown:
            rich_table.add_column(
                escape.rich_text(table.columns[i], one_line=True),
                justify="right" if align[i] == "r" else "left",
                no_wrap=i not in fixed,
                overflow="fold",
                width=fixed.get(i),
            )
        for row in table.rows:  # a name's newline would look like a second row: escaped
            rich_table.add_row(*(escape.rich_text(row[i], one_line=True) for i in shown))
        if _WIDE:  # rich caps print(width=) at the console's width: a console as wide
            whole = 1 + sum(w + 3 for w in natural_widths(table))
            _console(console.file, max(console.width, whole)).print(rich_table)
        else:
            console.print(rich_table)
        folded = None if _WIDE else folded_line(table, shown, console.width)
        _print_footnotes(console, [*([folded] if folded else []), *table.footnotes])
        console.print()


def _print_footnotes(console: Any, lines: Sequence[str]) -> None:
    """Footnotes as bullets, each wrapped with a hanging indent (its continuation lines
    start under its first word, not at the margin), long words folded."""
    from rich.table import Table as RichTable

    if not lines:
        return
    grid = RichTable.grid()
    grid.add_column(width=4, no_wrap=True)
    grid.add_column(overflow="fold")
    for line in lines:
        grid.add_row("  • ", escape.rich_text(line, one_line=True))
    console.print(grid)


def markdown(tables: Sequence[Table]) -> str:
    """GitHub-flavoured Markdown: a heading, a pipe table and a bullet list per table."""
    out = []
    for table in tables:
        out.append(f"### {escape.markdown_text(table.title)}\n")
        out.append("| " + " | ".join(escape.markdown_cell(c) for c in table.columns) + " |")
        align = table.align or ["l"] * len(table.columns)
        out.append("|" + "|".join("---:" if a == "r" else "---" for a in align) + "|")
        out += [
            "| " + " | ".join(escape.markdown_cell(c) for c in row) + " |" for row in table.rows
        ]
        out.append("")
        out += [f"- {escape.markdown_text(line)}" for line in table.footnotes]
        out.append("")
    return "\n".join(out)


def csv_text(rows: Sequence[dict[str, Any]]) -> str:
    """CSV of flat records (numbers in base units, shortest exact form), header from the
    union of keys; text cells guarded against spreadsheet formulas."""
    import csv  # here: only --format csv needs it, not every table's start-up

    columns = list(dict.fromkeys(k for row in rows for k in row))
    buffer = io.StringIO()
    writer = csv.DictWriter(
        buffer, fieldnames=[escape.csv_cell(c) for c in columns], lineterminator="\n"
    )
    writer.writeheader()
    writer.writerows(
        {escape.csv_cell(k): escape.csv_cell(v) for k, v in row.items()} for row in rows
    )
    return buffer.getvalue()


def emit(
    fmt: str,
    tables: Sequence[Table] | Callable[[], Sequence[Table]],
    records: Sequence[dict[str, Any]] | Callable[[], Sequence[dict[str, Any]]] | None = None,
) -> None:
    """Print on stdout in ``fmt``: rich tables ("table"), Markdown, or CSV of ``records``.

    The one output switch of every command (run, cmd, http, doctor, compare, fit, show).
    Tables (not CSV) also go to the GitHub Actions step summary (:func:`step_summary`).

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
    step_summary(built)


def step_summary(tables: Sequence[Table]) -> None:
    """Append ``tables`` as Markdown to the GitHub Actions step summary when the
    ``GITHUB_STEP_SUMMARY`` file is set (a job's summary page then shows the tables and
    verdicts). A file that can't be written gets one ``note:`` line on stderr."""
    if tables:
        append_step_summary(markdown(tables) + "\n")


def append_step_summary(text: str) -> None:
    """Append Markdown ``text`` to the GitHub Actions step summary when
    ``GITHUB_STEP_SUMMARY`` is set (tables, and a tripped gate's line); a file that
    can't be written gets one ``note:`` line on stderr."""
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not path:
        return
    try:
        with open(path, "a", encoding="utf-8") as out:
            out.write(text)
    except OSError as exc:
        sys.stderr.write(
            f"note: GITHUB_STEP_SUMMARY {escape.terminal(path, one_line=True)}: "
            f"{exc.strerror or exc}; the step summary was not written\n"
        )
