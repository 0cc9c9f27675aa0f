"""``perflab show FILE``: re-render a saved results file."""

from __future__ import annotations

import argparse
import json
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``perflab show``."""
    parser.add_argument("file", help="a results file (run, cmd, http) or a doctor document "
                        "written with --json")
    parser.add_argument("--format", choices=["table", "markdown", "csv"], default="table")
    parser.add_argument("--env", action="store_true", help="also print the environment "
                        "fingerprint and the settings")


def print_run(results: Any, grouped: dict[str, Any], fmt: str) -> None:
    """Print a run's tables on stdout as a rich table, Markdown or CSV."""
    from perflab.report import console
    from perflab.report.table import run_tables, summary_records

    console.emit(fmt, lambda: run_tables(results.benchmarks, grouped),
                 lambda: summary_records(grouped))


def print_environment(results: Any) -> None:
    """Print the command line, the environment fingerprint in words, and the settings,
    wrapped at the tables' width."""
    from perflab.environment import describe
    from perflab.report.console import make_console
    from perflab.report.escape import rich_text, terminal

    out = make_console()
    out.print(rich_text(terminal("command line: " + " ".join(results.command_line),
                                 one_line=True)))
    out.print(rich_text(terminal("created: " + results.created, one_line=True)))
    out.print("environment:")
    for label, text in describe(results.environment):
        out.print(rich_text(terminal(f"  {label + ':':<16} {text}", one_line=True)))
    out.print(rich_text("settings: " + json.dumps(results.settings, indent=2)))


def _doctor_document(path: str) -> dict[str, Any] | None:
    """The document of a ``perflab doctor --json`` file, checked against its schema; None
    for any other file (:func:`perflab.model.load` then says what is wrong with it).

    Raises:
        ResultsFileError: a doctor document that does not match its schema.
    """
    from perflab import files, model, schema
    from perflab.errors import ResultsFileError, UsageError

    try:
        document = model.parse_json(files.read_bytes(path, path, files.MAX_RESULTS_BYTES),
                                     path)
    except (UsageError, ResultsFileError):
        return None
    if not (isinstance(document, dict) and document.get("tool") == "perflab"
            and document.get("kind") == "doctor"):
        return None
    problem = schema.validate(document, "doctor")
    if problem:
        raise ResultsFileError(f"{path}: {problem}; the file was damaged or edited: use the "
                               "file perflab doctor wrote")
    return document


def main(args: argparse.Namespace) -> int:
    """Load, summarize and print. Exit 2 on a bad file."""
    from perflab import model
    from perflab.analyze.summary import summarize_benchmarks

    document = _doctor_document(args.file)
    if document is not None:
        from perflab.doctor_model import DoctorReport
        from perflab.report import console
        from perflab.report.doctor_table import check_records, doctor_tables

        report = DoctorReport.from_dict(document)
        console.emit(args.format, lambda: doctor_tables(report), lambda: check_records(report))
        return 0
    results = model.load(args.file)
    if args.env:
        print_environment(results)
    if results.kind == "cmd":
        from perflab.commands import cmd

        return cmd.render(results, args.format)
    if results.kind == "http":
        from perflab.commands import http

        return http.render(results, args.format)
    grouped = summarize_benchmarks(results.benchmarks,
                                   precision=results.settings.get("precision"))
    print_run(results, grouped, args.format)
    return 0
