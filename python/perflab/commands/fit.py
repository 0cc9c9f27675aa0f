"""``perflab fit FILE…``: USL, complexity and break-even models fitted to measured data.

Reads points with :mod:`perflab.analyze.fit.inputs`, fits them with
:mod:`perflab.analyze.fit.fits`, prints what :mod:`perflab.report.fit_report` renders
and optionally writes ``--json`` (with the fitted series, which ``perflab show``
fits again) and ``--chart`` files (:mod:`perflab.report.fit_chart`).
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from perflab import files, redact
from perflab.commands.options import add_from_argument
from perflab.errors import UsageError
from perflab.report.notice import tell

MODELS = ("usl", "complexity", "breakeven")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``perflab fit``."""
    parser.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="results files (perflab run/http --json) or CSV files; points of "
        "several files are pooled by series name",
    )
    parser.add_argument(
        "--model",
        choices=MODELS,
        help="usl (throughput vs concurrency), "
        "complexity (cost vs size) or breakeven (where two costs cross); "
        "default: breakeven with --between, usl for http and threads sweeps "
        "and N,X CSVs, else complexity",
    )
    parser.add_argument(
        "--param",
        metavar="NAME",
        help="the size parameter n of complexity "
        "and break-even fits (default: the only numeric parameter)",
    )
    parser.add_argument(
        "--between",
        nargs=2,
        metavar=("A", "B"),
        help="break-even: the two benchmarks (names) to compare",
    )
    parser.add_argument(
        "--series",
        action="append",
        metavar="NAME",
        help="fit only this series (benchmark name); repeatable",
    )
    parser.add_argument(
        "--growth",
        metavar="CLASS",
        help="complexity/break-even: consider only "
        "this growth class, e.g. 'O(n)' for cold + n·warm curves",
    )
    parser.add_argument(
        "--little",
        choices=["latency", "service"],
        default="latency",
        help="open-loop http steps: the mean time R in Little's law N = X·R "
        "(default latency, from the intended send time)",
    )
    parser.add_argument(
        "--json",
        metavar="FILE",
        help="write the fits as JSON here ('-': on stdout instead of the table)",
    )
    parser.add_argument(
        "--chart",
        metavar="PNG",
        help="draw the fit(s) into this PNG file (several series: one file each, NAME-SERIES.png)",
    )
    parser.add_argument(
        "--format",
        choices=["table", "markdown", "csv"],
        default="table",
        help="how to print the fits on stdout",
    )
    add_from_argument(parser)
    from perflab.report import outputs

    outputs.add_arguments(parser, "one line per fit")


def main(args: argparse.Namespace) -> int:
    """Read, fit, print, save. Exit 2 on bad input (one ``error:`` line)."""
    from perflab.analyze.fit.fits import fit_model
    from perflab.analyze.fit.inputs import read_source
    from perflab.report import outputs
    from perflab.report.fit_report import fit_records, fit_report, print_report

    destination = files.Destination.check(args.json, "--json") if args.json is not None else None
    files_out = outputs.check(args, others=[destination])
    sources = [read_source(path, args.source) for path in args.files]
    model = args.model or _default_model(args, sources)
    if args.between and model != "breakeven":
        raise UsageError(f"--between is for --model breakeven, not {model}")
    series = _INPUTS[model](sources, args)
    report = fit_report(model, series, fit_model(model, series, args.growth))
    charts = _chart_destinations(report, args.chart) if args.chart is not None else []
    later = files.Deferred()
    if destination is not None:
        later.run(_write_json, report, args, destination)
    outputs.write(later, files_out, "fit", lambda: report.tables, lambda: fit_records(report))
    if destination is None or not destination.stdout:
        from perflab.report.imported import print_notes

        for source in sources:
            print_notes(source, args.format)
        print_report(report, args.format)
    later.run(_write_charts, charts)
    later.raise_()
    return 0


def _default_model(args: argparse.Namespace, sources: list[Any]) -> str:
    """breakeven with --between; usl for http, threads and N,X CSV input; else complexity."""
    from perflab.analyze.fit.inputs import CSV_COLUMNS, CsvTable

    if args.between:
        return "breakeven"
    first = sources[0]
    if isinstance(first, CsvTable):
        if "x" not in first.columns and "cost" not in first.columns:
            found = ", ".join(first.columns) or "none"
            raise UsageError(
                f"{first.path}: CSV has no column n, x (columns: {found}) nor n, "
                f"cost; {CSV_COLUMNS[('n', 'x')]}, {CSV_COLUMNS[('n', 'cost')]} "
                "(header names in any case)"
            )
        return "usl" if "x" in first.columns else "complexity"
    threads = any(b.threads is not None for b in first.benchmarks)
    return "usl" if first.kind == "http" or threads else "complexity"


def _selected(series: list[Any], names: list[str] | None) -> list[Any]:
    """Only the series named by --series (full or bare names), in that order."""
    from perflab.analyze.fit.inputs import pick

    return series if not names else [pick(series, name) for name in names]


# ---------------------------------------------------------------------------
# USL


def _usl_inputs(sources: list[Any], args: argparse.Namespace) -> list[Any]:
    """The (N, X) series of the sources (--little, --series)."""
    from perflab.analyze.fit.inputs import merge_series, usl_series

    return _selected(merge_series([usl_series(s, args.little) for s in sources]), args.series)


# ---------------------------------------------------------------------------
# complexity


def _complexity_inputs(sources: list[Any], args: argparse.Namespace) -> list[Any]:
    """The swept (n, cost) series of the sources (--param, --series). Raises UsageError."""
    from perflab.analyze.fit.inputs import cost_series, merge_series

    pooled = merge_series([cost_series(s, args.param) for s in sources])
    series = [s for s in _selected(pooled, args.series) if s.param is not None]
    if not series:
        raise UsageError(
            "no usable data for a complexity fit: none of the chosen benchmarks "
            "sweeps the size parameter"
        )
    return series


# ---------------------------------------------------------------------------
# break-even


def _breakeven_inputs(sources: list[Any], args: argparse.Namespace) -> list[Any]:
    """The two series of --between (A, B). Raises UsageError."""
    from perflab.analyze.fit.inputs import cost_series, merge_series, pick

    if not args.between:
        raise UsageError("--model breakeven needs the two benchmarks: --between A B")
    pooled = merge_series([cost_series(s, args.param, required=False) for s in sources])
    a, b = (pick(pooled, name) for name in args.between)
    if (a.param is None) != (b.param is None):
        swept = a if a.param else b
        raise UsageError(
            f"{swept.name!r} sweeps {swept.param} but the other benchmark does "
            "not; compare two sweeps, or two benchmarks without the parameter"
        )
    return [a, b]


#: model → its series from the sources and the options.
_INPUTS: dict[str, Callable[[list[Any], argparse.Namespace], list[Any]]] = {
    "usl": _usl_inputs,
    "complexity": _complexity_inputs,
    "breakeven": _breakeven_inputs,
}


# ---------------------------------------------------------------------------
# output


def _write_json(report: Any, args: argparse.Namespace, destination: Any) -> None:
    """The fits, with the input and the command line (:class:`perflab.model.fit.FitDocument`)."""
    from perflab import __version__
    from perflab.model import json_document
    from perflab.model.fit import FitDocument
    from perflab.report.fit_table import tables_document

    doc = FitDocument(
        report.model,
        list(args.files),
        report.fits,
        tables_document(report.tables),
        args.growth,
        report.input_records(),
        ["perflab", *redact.argv(sys.argv[1:])],
        dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        __version__,
    )
    files.save(destination, json_document(doc.to_dict()), "fit")
    if not destination.stdout:
        tell(f"fit saved to {destination}")


def _chart_destinations(report: Any, text: str) -> list[tuple[Any, Any]]:
    """(draw, checked destination) per chart: ``text`` itself for one chart,
    ``stem-SERIES.png`` beside it for several. Raises UsageError."""
    if not text.strip():  # Path("").with_name() would raise ValueError
        raise UsageError("--chart '': an empty path; give a PNG file path")
    path = Path(text)
    out = []
    for name, draw in report.charts:
        slug = re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-").lower() or "series"
        target = (
            path
            if len(report.charts) == 1
            else path.with_name(f"{path.stem}-{slug}{path.suffix or '.png'}")
        )
        out.append((draw, files.Destination.check(target, "--chart", "png")))
    return out


def _write_charts(charts: list[tuple[Any, Any]]) -> None:
    """Draw each chart into its checked destination (via a temp file and a rename)."""
    for draw, destination in charts:
        files.save_file(destination, draw, "chart")
        tell(f"chart saved to {destination}")
