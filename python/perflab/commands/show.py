"""``perflab show FILE``: re-render a saved results file."""

from __future__ import annotations

import argparse
import json
from typing import Any

from perflab import interop


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``perflab show``."""
    parser.add_argument("file", help="a results file (run, cmd, http) or a doctor document "
                        "written with --json")
    parser.add_argument("--format", choices=["table", "markdown", "csv"], default="table")
    parser.add_argument("--env", action="store_true", help="also print the environment "
                        "fingerprint and the settings")
    parser.add_argument("--verbose", action="store_true", help="every warning of every "
                        "benchmark in full (by default warnings are grouped by kind)")
    interop.add_from_argument(parser)
    parser.add_argument("--export", nargs=2, action="append", default=[],
                        metavar=("FORMAT", "OUT"), help="also write the results in a peer's "
                        "format: github-action-benchmark (customSmallerIsBetter JSON; run, cmd, "
                        "http), hyperfine (--export-json layout; cmd), hgrm (HdrHistogram "
                        "percentile distribution of each step's latency, ms; http), hlog "
                        "(HdrHistogram interval log of the steps' latency histograms; http); "
                        "repeatable")


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


def _stats_only_document(path: str) -> dict[str, Any] | None:
    """The document of a pytest-benchmark file without raw data (its statistics only),
    or None for any other file (:func:`perflab.model.load` reads those, or says what is
    wrong with them)."""
    from perflab import files, model, schema
    from perflab.errors import ResultsFileError, UsageError
    from perflab.interop import pytest_benchmark

    try:
        document = model.parse_json(files.read_bytes(path, path, files.MAX_RESULTS_BYTES),
                                    path)
    except (UsageError, ResultsFileError):
        return None
    if (interop.forced() or interop.detect(document)) != "pytest-benchmark" or \
            schema.validate(document, "pytest-benchmark") or \
            pytest_benchmark.has_raw_data(document):
        return None
    return document


def _export(results: Any, exports: list[list[str]]) -> None:
    """Write each ``--export FORMAT OUT`` (checked first, all of them, before any is
    written); the paths written go to stderr."""
    import sys

    from perflab.report import peer_formats

    for fmt, _out in exports:
        peer_formats.check(fmt, results.kind)
    for fmt, out in exports:
        for path in peer_formats.write(results, fmt, out):
            sys.stderr.write(f"perflab: {fmt} export written to {path}\n")


def main(args: argparse.Namespace) -> int:
    """Load, summarize and print. Exit 2 on a bad file."""
    from perflab import model
    from perflab.analyze.summary import summarize_benchmarks
    from perflab.report.imported import print_notes
    from perflab.report.run_output import print_run

    document = _doctor_document(args.file)
    if document is not None:
        from perflab.doctor_model import DoctorReport
        from perflab.report import console
        from perflab.report.doctor_table import check_records, doctor_tables

        report = DoctorReport.from_dict(document)
        console.emit(args.format, lambda: doctor_tables(report), lambda: check_records(report))
        return 0
    interop.force(args.source)
    stats_only = _stats_only_document(args.file)
    if stats_only is not None:
        from perflab.report import console
        from perflab.report.imported import stats_table

        console.emit(args.format, [stats_table(stats_only, args.file)])
        return 0
    results = model.load(args.file)
    _export(results, args.export)
    print_notes(results, args.format)
    if args.env:
        print_environment(results)
    if results.kind == "cmd":
        from perflab.analyze import cmd
        from perflab.report.cmd_table import print_cmd

        print_cmd(results, cmd.summarize_results(results), args.format)
        return 0
    if results.kind == "http":
        from perflab.analyze import http
        from perflab.report.http_table import print_http

        print_http(results, http.summarize_results(results), args.format)
        return 0
    if results.kind == "trace":
        from perflab.report.trace_table import print_trace

        print_trace(results, args.format)
        return 0
    grouped = summarize_benchmarks(results.benchmarks,
                                   precision=results.settings.get("precision"),
                                   min_processes=results.settings.get("min_processes"))
    print_run(results, grouped, args.format, args.verbose)
    return 0
