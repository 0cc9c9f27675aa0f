"""``perflab fit FILE…``: USL, complexity and break-even models fitted to measured data.

Reads points with :mod:`perflab.analyze.fit_inputs`, fits them with
:mod:`perflab.analyze.models`, prints the tables of
:mod:`perflab.report.fit_tables` (rendered by report.console) and optionally
writes ``--json`` and ``--chart`` files (:mod:`perflab.report.fit_chart`).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perflab import files
from perflab.errors import UsageError

MODELS = ("usl", "complexity", "breakeven")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``perflab fit``."""
    parser.add_argument("files", nargs="+", metavar="FILE",
                        help="results files (perflab run/http --json) or CSV files; points of "
                        "several files are pooled by series name")
    parser.add_argument("--model", choices=MODELS, help="usl (throughput vs concurrency), "
                        "complexity (cost vs size) or breakeven (where two costs cross); "
                        "default: breakeven with --between, usl for http and threads sweeps "
                        "and N,X CSVs, else complexity")
    parser.add_argument("--param", metavar="NAME", help="the size parameter n of complexity "
                        "and break-even fits (default: the only numeric parameter)")
    parser.add_argument("--between", nargs=2, metavar=("A", "B"),
                        help="break-even: the two benchmarks (names) to compare")
    parser.add_argument("--series", action="append", metavar="NAME",
                        help="fit only this series (benchmark name); repeatable")
    parser.add_argument("--growth", metavar="CLASS", help="complexity/break-even: consider only "
                        "this growth class, e.g. 'O(n)' for cold + n·warm curves")
    parser.add_argument("--little", choices=["latency", "service"], default="latency",
                        help="open-loop http steps: the mean time R in Little's law N = X·R "
                        "(default latency, from the intended send time)")
    parser.add_argument("--json", metavar="FILE", help="write the fits as JSON here ('-': "
                        "on stdout instead of the table)")
    parser.add_argument("--chart", metavar="PNG", help="draw the fit(s) into this PNG file "
                        "(several series: one file each, NAME-SERIES.png)")
    parser.add_argument("--format", choices=["table", "markdown", "csv"], default="table",
                        help="how to print the fits on stdout")


@dataclass
class FitReport:
    """What one ``perflab fit`` produced, ready to print and save.

    Attributes:
        model: "usl", "complexity" or "breakeven".
        tables: tables to print.
        fits: one JSON-ready record per fitted series.
        charts: (series name, function drawing the chart into a path).
    """

    model: str
    tables: list[Any] = field(default_factory=list)
    fits: list[dict[str, Any]] = field(default_factory=list)
    charts: list[tuple[str, Callable[[Path], Path]]] = field(default_factory=list)


def main(args: argparse.Namespace) -> int:
    """Read, fit, print, save. Exit 2 on bad input (one ``error:`` line)."""
    from perflab.analyze.fit_inputs import read_source

    destination = files.Destination.check(args.json, "--json") if args.json else None
    sources = [read_source(path) for path in args.files]
    model = args.model or _default_model(args, sources)
    if args.between and model != "breakeven":
        raise UsageError(f"--between is for --model breakeven, not {model}")
    build = {"usl": _usl_report, "complexity": _complexity_report,
             "breakeven": _breakeven_report}[model]
    report = build(sources, args)
    charts = _chart_destinations(report, args.chart) if args.chart else []
    later = files.Deferred()
    if destination is not None:
        later.run(_write_json, report, args, destination)
    if destination is None or not destination.stdout:
        _print(report, args.format)
    later.run(_write_charts, charts)
    later.raise_()
    return 0


def _default_model(args: argparse.Namespace, sources: list[Any]) -> str:
    """breakeven with --between; usl for http, threads and N,X CSV input; else complexity."""
    from perflab.analyze.fit_inputs import CSV_COLUMNS, CsvTable

    if args.between:
        return "breakeven"
    first = sources[0]
    if isinstance(first, CsvTable):
        if "x" not in first.columns and "cost" not in first.columns:
            found = ", ".join(first.columns) or "none"
            raise UsageError(f"{first.path}: CSV has no column n, x (columns: {found}) nor n, "
                             f"cost; {CSV_COLUMNS[('n', 'x')]}, {CSV_COLUMNS[('n', 'cost')]} "
                             "(header names in any case)")
        return "usl" if "x" in first.columns else "complexity"
    threads = any(b.threads is not None for b in first.benchmarks)
    return "usl" if first.kind == "http" or threads else "complexity"


def _fitted(series: Any, fit: Callable[[], Any]) -> Any:
    """Run a model fit; its ValueError becomes one UsageError line naming the series."""
    try:
        return fit()
    except ValueError as exc:
        raise UsageError(f"{series.name}: {exc}") from None


def _selected(series: list[Any], names: list[str] | None) -> list[Any]:
    """Only the series named by --series (full or bare names), in that order."""
    from perflab.analyze.fit_inputs import pick

    return series if not names else [pick(series, name) for name in names]


# ---------------------------------------------------------------------------
# USL


def _usl_report(sources: list[Any], args: argparse.Namespace) -> FitReport:
    """One coefficient table and one points table per series."""
    from perflab.analyze.fit_inputs import merge_series, usl_series
    from perflab.analyze.models import fit_usl
    from perflab.report.fit_tables import curve, size_grid, usl_points, usl_table

    series = _selected(merge_series([usl_series(s, args.little) for s in sources]), args.series)
    report = FitReport("usl")
    for s in series:
        fit = _fitted(s, lambda s=s: fit_usl(s.x, s.y, unit=s.y_unit))
        report.tables += [usl_table(s, fit), usl_points(s, fit)]
        report.fits.append({"series": s.name, "x_label": s.x_label, "y_label": s.y_label,
                            "points": {"N": s.x.tolist(), "X": s.y.tolist()},
                            "fitted": fit.predict(s.x).tolist(), **fit.to_dict(),
                            "notes": list(s.notes),
                            "curves": [curve("USL fit", fit, size_grid(
                                [1.0, float(max(s.x.max(), 1.0))]))]})
        report.charts.append((s.name, lambda path, s=s, fit=fit: _usl_chart(s, fit, path)))
    return report


def _usl_chart(s: Any, fit: Any, path: Path) -> Path:
    from perflab.report.fit_chart import usl_chart, usl_title

    return usl_chart(fit, s.x, s.y, path, x_label=s.x_label, y_label=s.y_label,
                     title=usl_title(s.name, fit))


# ---------------------------------------------------------------------------
# complexity


def _complexity_report(sources: list[Any], args: argparse.Namespace) -> FitReport:
    """One table: best class and runner-up of every swept series, with CIs."""
    from perflab.analyze.fit_inputs import cost_series, merge_series
    from perflab.report.fit_tables import complexity_table, curve, size_grid

    pooled = merge_series([cost_series(s, args.param) for s in sources])
    series = [s for s in _selected(pooled, args.series) if s.param is not None]
    if not series:
        raise UsageError("no usable data for a complexity fit: none of the chosen benchmarks "
                         "sweeps the size parameter")
    models = [args.growth] if args.growth else None
    report = FitReport("complexity")
    fitted = []
    for s in series:
        fit = _cost_fit(s, models)
        fitted.append((s, fit))
        report.fits.append({"series": s.name, "param": s.param,
                            "points": {"n": s.x.tolist(), "cost": s.y.tolist()},
                            "fitted": fit.predict(s.x).tolist(),
                            "residuals": fit.residuals.tolist(), **fit.to_dict(),
                            "curves": [curve(fit.model, fit, size_grid(s.x))]})
        report.charts.append((s.name, lambda path, s=s, fit=fit: _complexity_chart(s, fit, path)))
    report.tables.append(complexity_table(fitted))
    return report


def _complexity_chart(s: Any, fit: Any, path: Path) -> Path:
    from perflab.report.fit_chart import complexity_chart, complexity_title

    return complexity_chart(fit, s.x, s.y, path, x_label=f"{s.param} (size)",
                            y_label="time per call (s)", title=complexity_title(s.name, fit))


# ---------------------------------------------------------------------------
# break-even


def _breakeven_report(sources: list[Any], args: argparse.Namespace) -> FitReport:
    """Both sides' cost curves (cold + a + b·g(n)) and where they cross."""
    import numpy as np

    from perflab.analyze.fit_inputs import cost_series, merge_series, pick
    from perflab.analyze.models import breakeven
    from perflab.report.fit_tables import breakeven_points, breakeven_table, curve, size_grid

    if not args.between:
        raise UsageError("--model breakeven needs the two benchmarks: --between A B")
    pooled = merge_series([cost_series(s, args.param, required=False) for s in sources])
    a, b = (pick(pooled, name) for name in args.between)
    if (a.param is None) != (b.param is None):
        swept = a if a.param else b
        raise UsageError(f"{swept.name!r} sweeps {swept.param} but the other benchmark does "
                         "not; compare two sweeps, or two benchmarks without the parameter")
    fit_a, fit_b, search = _side_fits(a, b, args.growth)
    result = _fitted(a, lambda: breakeven(
        fit_a, fit_b, a.cold, b.cold, cold_a_se=a.cold_se, cold_b_se=b.cold_se,
        labels=(a.name, b.name), search_range=search))
    points = breakeven_points(result)
    grid = size_grid(np.concatenate([a.x, b.x, [v for v in (result.n_star, result.ci_low,
                                                              result.ci_high) if v]]), log=True)
    report = FitReport("breakeven", [breakeven_table(a, b, result)] + ([points] if points else []))
    report.fits.append({"series": f"{a.name} vs {b.name}", "param": a.param or "calls",
                        **result.to_dict(), "cold_a_se": a.cold_se, "cold_b_se": b.cold_se,
                        "fit_a": fit_a.to_dict(), "fit_b": fit_b.to_dict(),
                        "curves": [curve(f"{s.name}: {f.model} + cold cost", f, grid, cold)
                                   for s, f, cold in ((a, fit_a, a.cold), (b, fit_b, b.cold))]})
    report.charts.append((f"{a.name} vs {b.name}",
                          lambda path: _breakeven_chart(a, b, result, path)))
    return report


def _side_fits(a: Any, b: Any, growth: str | None) -> tuple[Any, Any, tuple[float, float] | None]:
    """Cost fits of both sides and the search range (None: the default range of breakeven)."""
    from perflab.analyze.models.breakeven import calls_search_range, per_call_fit

    if a.param is None:
        high = calls_search_range(float(a.y[0]), float(b.y[0]), a.cold, b.cold)
        return per_call_fit(*_warm(a), high), per_call_fit(*_warm(b), high), (1.0, high)
    models = [growth] if growth else None
    return _cost_fit(a, models), _cost_fit(b, models), None


def _cost_fit(s: Any, models: list[str] | None) -> Any:
    """fit_complexity of one cost series, with its SEs when every one is a positive number."""
    from perflab.analyze.models import fit_complexity

    se = None if s.weights is None else s.y_se
    return _fitted(s, lambda: fit_complexity(s.x, s.y, se, models=models, unit=s.y_unit))


def _warm(s: Any) -> tuple[float, float]:
    """(time per warm call, its SE) of a per-call series; SE 0 when unknown."""
    se = float(s.y_se[0]) if s.y_se is not None and math.isfinite(s.y_se[0]) else 0.0
    return float(s.y[0]), se


def _breakeven_chart(a: Any, b: Any, result: Any, path: Path) -> Path:
    from perflab.report.fit_chart import breakeven_chart, breakeven_title

    points = {"points_a": (a.x, a.y), "points_b": (b.x, b.y)} if a.param else {}
    return breakeven_chart(result, path, x_label=a.param or "calls n",
                           y_label="total cost (s)",
                           title=breakeven_title(f"{a.name} vs {b.name}", result), **points)


# ---------------------------------------------------------------------------
# output


def _print(report: FitReport, fmt: str) -> None:
    """Tables on stdout as rich tables or Markdown; CSV prints one record per fit."""
    from perflab.report import console

    console.emit(fmt, report.tables, lambda: [
        {k: v for k, v in f.items() if not isinstance(v, (list, dict))} for f in report.fits])


def _write_json(report: FitReport, args: argparse.Namespace, destination: Any) -> None:
    """The fits, with the input and the command line; a single fit's keys also at top level."""
    from perflab import __version__
    from perflab.model import json_types
    from perflab.report.fit_tables import tables_document

    doc: dict[str, Any] = {"kind": "fit", "fit": report.model, "sources": list(args.files),
                           "command_line": ["perflab", *sys.argv[1:]],
                           "created": dt.datetime.now(dt.timezone.utc).isoformat(
                               timespec="seconds"),
                           "perflab_version": __version__, "fits": report.fits,
                           "tables": tables_document(report.tables)}
    if len(report.fits) == 1:
        doc = {**report.fits[0], **doc}
    doc = {"tool": "perflab", **doc}
    files.save(destination, (json.dumps(json_types(doc), indent=1, allow_nan=False)
                             + "\n").encode(), "fit")
    if not destination.stdout:
        sys.stderr.write(f"fit saved to {destination}\n")


def _chart_destinations(report: FitReport, text: str) -> list[tuple[Any, Any]]:
    """(draw, checked destination) per chart: ``text`` itself for one chart,
    ``stem-SERIES.png`` beside it for several. Raises UsageError."""
    path = Path(text)
    out = []
    for name, draw in report.charts:
        slug = re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-").lower() or "series"
        target = path if len(report.charts) == 1 else path.with_name(
            f"{path.stem}-{slug}{path.suffix or '.png'}")
        out.append((draw, files.Destination.check(target, "--chart", "png")))
    return out


def _write_charts(charts: list[tuple[Any, Any]]) -> None:
    """Draw each chart into its checked destination (via a temp file and a rename)."""
    for draw, destination in charts:
        files.save_file(destination, draw, "chart")
        sys.stderr.write(f"chart saved to {destination}\n")
