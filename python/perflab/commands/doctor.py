"""``perflab doctor``: can this machine's clocks and CPU be trusted?

Parse the options, run :func:`perflab.engines.doctor.run`, print the tables
(:mod:`perflab.report.doctor_table`) or the JSON document, and exit 1 when a
check failed.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from perflab import redact
from perflab.errors import UsageError
from perflab.report.notice import tell
from perflab.units import parse_positive_duration

#: Longest clock probe accepted, s (a day: anything longer is a typo).
MAX_DURATION_S = 86400.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``perflab doctor``."""
    parser.add_argument(
        "--duration",
        default="3s",
        help="length of the clock probe, e.g. 3s "
        "or 500ms (3s); the sleep probes add a third of it, the speed states two thirds "
        "(at most 2 s), the per-clock "
        "figures about half a second",
    )
    parser.add_argument(
        "--json",
        nargs="?",
        const="-",
        metavar="FILE",
        help="write the report as JSON to FILE, or to stdout (instead of "
        "the tables) when FILE is omitted or '-'",
    )
    parser.add_argument(
        "--format",
        choices=["table", "markdown", "csv"],
        default="table",
        help="how to print the report on stdout (csv: the checks only)",
    )
    from perflab.commands.options import add_history_arguments
    from perflab.report import outputs

    outputs.add_arguments(parser, "one line per check")

    add_history_arguments(parser)


def document(report: Any, argv: list[str]) -> dict[str, Any]:
    """The JSON document: a header, the report's sections at top level, the fingerprint."""
    from perflab import __version__, environment

    return report.document(
        ["perflab", *argv],
        __version__,
        environment.finish(environment.fingerprint(__version__)),
    )


def print_report(report: Any, fmt: str) -> None:
    """Print the report's tables on stdout as a rich table, Markdown, or CSV (checks)."""
    from perflab.report import console
    from perflab.report.doctor_table import check_records, doctor_tables

    console.emit(fmt, lambda: doctor_tables(report), lambda: check_records(report))


def main(args: argparse.Namespace) -> int:
    """Probe, print, save. Exit 1 when a check failed, 2 on bad input."""
    from perflab.engines import doctor
    from perflab.files import Deferred, Destination, save
    from perflab.model import json_document
    from perflab.report import outputs
    from perflab.report.doctor_table import check_records, doctor_tables

    duration = parse_positive_duration(args.duration, "--duration")
    if duration > MAX_DURATION_S:
        raise UsageError(
            f"--duration {args.duration} is longer than the {MAX_DURATION_S / 3600:g}"
            " h a clock probe may take; give e.g. 3s or 1m"
        )
    destination = Destination.check(args.json, "--json") if args.json is not None else None
    files_out = outputs.check(args, others=[destination])
    sys.stderr.write(
        f"perflab doctor: probing this machine for about {doctor.expected_s(duration):.0f} s\n"
    )
    report = doctor.run(duration, progress=lambda phase: tell(f"perflab doctor: {phase}…"))
    later = Deferred()
    doc = document(report, redact.argv(sys.argv[1:]))
    if destination is not None:
        later.run(save, destination, json_document(doc), "doctor report")
    outputs.write(
        later, files_out, "doctor", lambda: doctor_tables(report), lambda: check_records(report)
    )
    if destination is None or not destination.stdout:
        print_report(report, args.format)
    from perflab.commands.options import history_database
    from perflab.history.record import record_document

    record_document(history_database(args), args.tag, "doctor", doc, destination)
    later.raise_()
    if destination is not None and not destination.stdout:
        tell(f"report saved to {destination}")
    return 1 if report.failed else 0
