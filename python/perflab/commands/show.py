"""``perflab show FILE``: re-render a saved results file."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from perflab import interop
from perflab.commands.options import add_from_argument
from perflab.report.notice import tell


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``perflab show``."""
    parser.add_argument(
        "file",
        help="a results file (run, cmd, http, trace) or a doctor, "
        "compare, fit or history document written with --json",
    )
    parser.add_argument("--format", choices=["table", "markdown", "csv"], default="table")
    parser.add_argument(
        "--env", action="store_true", help="also print the environment fingerprint and the settings"
    )
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="every warning of every benchmark in full (by default warnings are grouped by kind)",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="also print each profiled benchmark's top functions by self and total share "
        "(a file written with --profile); with --format csv, only those",
    )
    add_from_argument(parser)
    parser.add_argument(
        "--export",
        nargs=2,
        action="append",
        default=[],
        metavar=("FORMAT", "OUT"),
        help="also write the results in a peer's "
        "format: github-action-benchmark (customSmallerIsBetter JSON; run, cmd, "
        "http), hyperfine (--export-json layout; cmd), hgrm (HdrHistogram "
        "percentile distribution of each step's latency, ms; http), hlog "
        "(HdrHistogram interval log of the steps' latency histograms; http); "
        "repeatable",
    )


def print_environment(results: Any) -> None:
    """Print the command line, the environment fingerprint in words, and the settings,
    wrapped at the tables' width."""
    from perflab.environment import describe
    from perflab.report.console import make_console
    from perflab.report.escape import rich_text, terminal

    out = make_console()
    out.print(rich_text(terminal("command line: " + " ".join(results.command_line), one_line=True)))
    out.print(rich_text(terminal("created: " + results.created, one_line=True)))
    out.print("environment:")
    for label, text in describe(results.environment):
        out.print(rich_text(terminal(f"  {label + ':':<16} {text}", one_line=True)))
    out.print(rich_text("settings: " + json.dumps(results.settings, indent=2)))


def _document(path: str) -> dict[str, Any] | None:
    """The document of a ``perflab doctor``, ``compare``, ``fit`` or ``history --json``
    file, checked against its schema; None for any other file (:func:`perflab.model.load` then says
    what is wrong with it).

    Raises:
        ResultsFileError: such a document that does not match its schema.
    """
    from perflab import files, model, schema
    from perflab.errors import ResultsFileError, UsageError

    try:
        document = model.parse_json(files.read_bytes(path, path, files.MAX_RESULTS_BYTES), path)
    except (UsageError, ResultsFileError):
        return None
    if not (
        isinstance(document, dict)
        and document.get("tool") == "perflab"
        and document.get("kind") in DOCUMENT_KINDS
    ):
        return None
    problem = schema.validate(document, document["kind"])
    if problem:
        raise ResultsFileError(
            f"{path}: {problem}; the file was damaged or edited: use the "
            f"file perflab {document['kind']} wrote"
        )
    return document


def _stats_only_document(path: str, format: str | None) -> dict[str, Any] | None:
    """The document of a pytest-benchmark file without raw data (its statistics only),
    or None for any other file (:func:`perflab.model.load` reads those, or says what is
    wrong with them); ``format``: the ``--from`` format (None: detected)."""
    from perflab import files, model, schema
    from perflab.errors import ResultsFileError, UsageError
    from perflab.interop import pytest_benchmark

    try:
        document = model.parse_json(files.read_bytes(path, path, files.MAX_RESULTS_BYTES), path)
    except (UsageError, ResultsFileError):
        return None
    if (
        (format or interop.detect(document)) != "pytest-benchmark"
        or schema.validate(document, "pytest-benchmark")
        or pytest_benchmark.has_raw_data(document)
    ):
        return None
    return document


def _export(results: Any, figures: Any, exports: list[list[str]]) -> None:
    """Write each ``--export FORMAT OUT`` of ``results`` and its ``figures`` (checked
    first, all of them, before any is written); the paths written go to stderr."""

    from perflab.report import peer_formats

    for fmt, _out in exports:
        peer_formats.check(fmt, results.kind)
    for fmt, out in exports:
        from perflab.analyze.hdr import step_distributions

        distributions = step_distributions(results) if fmt == "hgrm" else None
        for path in peer_formats.write(results, figures, fmt, out, distributions):
            tell(f"perflab: {fmt} export written to {path}")


def main(args: argparse.Namespace) -> int:
    """Load, summarize and print. Exit 2 on a bad file."""
    from perflab import model
    from perflab.analyze.results_figures import results_figures
    from perflab.report.imported import print_notes

    document = _document(args.file)
    if document is not None:
        _show_document(document, args.format)
        return 0
    stats_only = _stats_only_document(args.file, args.source)
    if stats_only is not None:
        from perflab.report import console
        from perflab.report.imported import stats_table

        console.emit(args.format, [stats_table(stats_only, args.file)])
        return 0
    results = model.load(args.file, args.source)
    figures = results_figures(results)
    _export(results, figures, args.export)
    print_notes(results, args.format)
    if args.env:
        print_environment(results)
    if not (args.profile and args.format == "csv"):
        RESULTS_RENDERERS[results.kind](results, figures, args)
    if args.profile:
        _show_profiles(figures, args.format)
    return 0


def _show_profiles(figures: Any, fmt: str) -> None:
    """``show --profile``: the profiles' top functions, or a note that there are none."""
    import sys

    from perflab.report.profile_table import print_profiles

    if not figures.profiles:
        sys.stderr.write("note: no benchmark in this file was profiled (run it with --profile)\n")
        return
    print_profiles(figures.profiles, fmt)


def _show_run(results: Any, figures: Any, args: argparse.Namespace) -> None:
    """A ``run`` results file's tables (its counts table when it counted instructions)."""
    from perflab.report.count_table import print_counts
    from perflab.report.run_output import in_process_ids, print_run

    if figures.counts or results.settings.get("count"):
        print_counts(figures.counts, results.benchmarks, args.format)
        return
    print_run(
        figures.groups,
        args.format,
        args.verbose,
        figures.threshold,
        in_process_ids(results.settings),
        figures.memory,
        quick=bool(results.settings.get("quick")),
    )
    if args.verbose and args.format != "csv":
        from perflab.report.slow_table import print_slow

        print_slow(figures.slow, args.format)


def _show_cmd(results: Any, figures: Any, args: argparse.Namespace) -> None:
    """A ``cmd`` results file's tables, and its counts table when it counted instructions."""
    from perflab.report.cmd_table import print_cmd
    from perflab.report.count_table import print_counts

    print_cmd(results, figures.commands, figures.spawn_overhead, args.format, args.verbose)
    print_counts(figures.counts, results.benchmarks, args.format)


def _show_http(results: Any, figures: Any, args: argparse.Namespace) -> None:
    """An ``http`` results file's tables."""
    from perflab.report.http_table import print_http

    print_http(results, figures.sweep, args.format)


def _show_trace(results: Any, figures: Any, args: argparse.Namespace) -> None:
    """A ``trace`` results file's tables."""
    from perflab.report.trace_table import print_trace

    print_trace(results, args.format)


#: The renderer of each results kind (``Results.kind``): (results, their figures, the
#: options) → printed tables.
RESULTS_RENDERERS: dict[str, Callable[[Any, Any, argparse.Namespace], None]] = {
    "run": _show_run,
    "cmd": _show_cmd,
    "http": _show_http,
    "trace": _show_trace,
}


def _show_document(document: dict[str, Any], fmt: str) -> None:
    """Print a doctor, compare, fit or history document's tables, rebuilt from its JSON, as the
    command that wrote it printed them (a compare document's gate is not applied again):
    the renderer of its kind in :data:`DOCUMENT_RENDERERS`."""
    DOCUMENT_RENDERERS[document["kind"]](document, fmt)


def _show_doctor(document: dict[str, Any], fmt: str) -> None:
    """A ``perflab doctor --json`` document's tables."""
    from perflab.model.doctor import DoctorReport
    from perflab.report import console
    from perflab.report.doctor_table import check_records, doctor_tables

    report = DoctorReport.from_dict(document)
    console.emit(fmt, lambda: doctor_tables(report), lambda: check_records(report))


def _show_compare(document: dict[str, Any], fmt: str) -> None:
    """A ``perflab compare --json`` document's tables (its gate is not applied again)."""
    from perflab.model.comparison import SuiteComparison
    from perflab.report import console
    from perflab.report.compare_table import comparison_tables, csv_records

    suite = SuiteComparison.from_dict(document)
    console.emit(
        fmt,
        lambda: comparison_tables(suite, document["a"], document["b"]),
        lambda: csv_records(suite),
    )
    if suite.profiles and fmt != "csv":
        from perflab.report.profile_table import print_changes

        print_changes(suite.profiles, fmt)


def _show_history(document: dict[str, Any], fmt: str) -> None:
    """A ``perflab history --json`` document's tables: the run list or the trends."""
    from perflab.model.history import runs_from_document, trends_from_document
    from perflab.report import console
    from perflab.report.history_table import run_records, runs_table, trend_records, trend_table

    if "runs" in document:
        runs, total, database = runs_from_document(document)
        console.emit(fmt, lambda: [runs_table(runs, total, database)], lambda: run_records(runs))
        return
    trends = trends_from_document(document)
    console.emit(
        fmt,
        lambda: [trend_table(t, document.get("limit")) for t in trends],
        lambda: trend_records(trends),
    )


def print_fit_document(document: dict[str, Any], fmt: str) -> None:
    """A fit document's tables: its saved series fitted again as ``perflab fit`` fitted
    them (the fits are deterministic, so the tables are the ones it printed).

    Raises:
        UsageError: a document saved before the series were kept, or one whose series
            can no longer be fitted.
    """
    from perflab.analyze.fit.fits import fit_model, series_from_record
    from perflab.errors import UsageError
    from perflab.model.fit import FitDocument
    from perflab.report.fit_report import fit_report, print_report

    saved = FitDocument.from_dict(document)
    if saved.inputs is None:
        raise UsageError(
            "this fit document keeps no input points (written by an older "
            "perflab): run perflab fit again on its sources: "
            f"{' '.join(saved.sources) or 'the files it names'}"
        )
    series = [series_from_record(d) for d in saved.inputs]
    model = saved.fit
    if len(series) != 2 if model == "breakeven" else not series:
        raise UsageError(
            f"this {model} fit document holds {len(series)} input series, not "
            f"{'2' if model == 'breakeven' else 'one or more'}: it was damaged "
            "or edited; run perflab fit again on its sources"
        )
    print_report(fit_report(model, series, fit_model(model, series, saved.growth)), fmt)


#: The renderer of each document kind (not results files) that ``show`` reads, each
#: checked against the schema of its name first: (document, format) → printed tables.
DOCUMENT_RENDERERS: dict[str, Callable[[dict[str, Any], str], None]] = {
    "doctor": _show_doctor,
    "compare": _show_compare,
    "fit": print_fit_document,
    "history": _show_history,
}
#: Kinds of the documents (not results files) that ``show`` renders, each with its schema.
DOCUMENT_KINDS = tuple(DOCUMENT_RENDERERS)
