"""Output files written beside the printed table: ``--markdown FILE`` and ``--csv FILE``.

``perflab run`` and ``perflab http`` take them (with ``--json``, several at once, while the
table is printed, as hyperfine's ``--export-*``); ``perflab cmd`` writes the same files
under hyperfine's names ``--export-markdown`` / ``--export-csv``. One place checks every
such file before anything is measured (:func:`check`: perflab replaces only a file it
wrote itself, see :class:`perflab.files.Destination`) and writes it whole after the run
(:func:`write`), so the three commands treat them alike.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable, Sequence
from typing import Any

from perflab.files import Deferred, Destination, distinct, save

#: The file kinds, as options and as :class:`perflab.files.Destination` kinds.
KINDS = ("markdown", "csv")


def add_arguments(parser: Any, csv_what: str) -> None:
    """``--markdown FILE`` and ``--csv FILE`` on ``parser`` (a parser or argument group).

    Args:
        csv_what: what one CSV line holds, for the help, e.g. "one line per benchmark".
    """
    parser.add_argument(
        "--markdown",
        metavar="FILE",
        help="also write the tables as Markdown to FILE (any of --json, --markdown, --csv at once)",
    )
    parser.add_argument(
        "--csv",
        metavar="FILE",
        help=f"also write CSV to FILE: {csv_what} (numbers in base units: s, B, requests/s)",
    )


def check(
    args: argparse.Namespace,
    option: str = "--{kind}",
    attribute: str = "{kind}",
    others: Sequence[Destination | None] = (),
) -> dict[str, Destination]:
    """The checked destinations of the output-file options that were given, by kind.

    Args:
        args: the parsed options.
        option: the option's name for messages, ``{kind}`` filled in, when the user's
            spelling is not known (:func:`perflab.errors.option_name`).
        attribute: the attribute of ``args`` holding its path, ``{kind}`` filled in.
        others: the command's other outputs (its ``--json``…): none may share a place
            with another (:func:`perflab.files.distinct`).

    Raises:
        UsageError: a destination that can't be used or is not perflab's own file
            (:meth:`perflab.files.Destination.check`), or two outputs on one place.
    """
    from perflab.errors import option_name

    out = {
        kind: Destination.check(
            path, option_name(args, attribute.format(kind=kind), option.format(kind=kind)), kind
        )
        for kind in KINDS
        if (path := getattr(args, attribute.format(kind=kind), None)) is not None
    }
    distinct([*others, *out.values()])
    return out


def text(
    kind: str,
    command: str,
    tables: Callable[[], Sequence[Any]],
    records: Callable[[], Sequence[dict[str, Any]]],
) -> str:
    """The text of a ``kind`` file: Markdown tables headed by a ``<!-- perflab COMMAND -->``
    line (what marks the file as perflab's own), or the CSV records."""
    from perflab.report import console

    if kind == "markdown":
        return f"<!-- perflab {command} -->\n" + console.markdown(tables())
    return console.csv_text(records())


def write(
    later: Deferred,
    outputs: dict[str, Destination],
    command: str,
    tables: Callable[[], Sequence[Any]],
    records: Callable[[], Sequence[dict[str, Any]]],
) -> None:
    """Write each checked output file; a failed write is kept in ``later`` (raised after
    the table is printed) and its data goes to a rescue file.

    Args:
        later: collects the first :class:`perflab.files.SaveError`.
        outputs: from :func:`check`.
        command: "run", "cmd" or "http", for the Markdown file's first line.
        tables: makes the tables (called at most once).
        records: makes the CSV records (called at most once).
    """
    tables, records = functools.cache(tables), functools.cache(records)
    for kind, destination in outputs.items():
        later.run(
            save,
            destination,
            lambda k=kind: text(k, command, tables, records).encode(),
            f"{kind} file",
        )
