"""``perflab fit FILE…``: USL, complexity and break-even models fitted to measured data.

Reads points with :mod:`perflab.analyze.fit_inputs`, fits them with
:mod:`perflab.analyze.models`, prints tables (report.table.Table, rendered by
report.console) and optionally writes ``--json`` and ``--chart`` files
(:mod:`perflab.report.fit_chart`).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

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
    parser.add_argument("--json", metavar="FILE", help="write the fits as JSON here")
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

    sources = [read_source(path) for path in args.files]
    model = args.model or _default_model(args, sources)
    if args.between and model != "breakeven":
        raise UsageError(f"--between is for --model breakeven, not {model}")
    build = {"usl": _usl_report, "complexity": _complexity_report,
             "breakeven": _breakeven_report}[model]
    report = build(sources, args)
    _print(report, args.format)
    if args.json:
        _write_json(report, args)
    if args.chart:
        _write_charts(report, Path(args.chart))
    return 0


def _default_model(args: argparse.Namespace, sources: list[Any]) -> str:
    """breakeven with --between; usl for http, threads and N,X CSV input; else complexity."""
    from perflab.analyze.fit_inputs import CsvTable

    if args.between:
        return "breakeven"
    first = sources[0]
    if isinstance(first, CsvTable):
        if "x" not in first.columns and "cost" not in first.columns:
            first.require("n", "x")
        return "usl" if "x" in first.columns else "complexity"
    threads = any(b.threads is not None for b in first.benchmarks)
    return "usl" if first.kind == "http" or threads else "complexity"


def _fitted(series: Any, fit: Callable[[], Any]) -> Any:
    """Run a model fit; its ValueError becomes one UsageError line naming the series."""
    try:
        return fit()
    except ValueError as exc:
        raise UsageError(f"{series.name}: {exc}") from None


def _merged(lists: list[list[Any]]) -> list[Any]:
    """Series of several files pooled by name (points concatenated, sorted by x)."""
    import numpy as np

    out: dict[str, Any] = {}
    for s in (s for lst in lists for s in lst):
        if s.name in out:
            prev = out[s.name]
            se = (None if prev.y_se is None or s.y_se is None
                  else np.concatenate([prev.y_se, s.y_se]))
            s = replace(prev, x=np.concatenate([prev.x, s.x]), y=np.concatenate([prev.y, s.y]),
                        y_se=se, notes=prev.notes + s.notes)
        order = np.argsort(s.x, kind="stable")
        out[s.name] = replace(s, x=s.x[order], y=s.y[order],
                              y_se=None if s.y_se is None else s.y_se[order])
    return list(out.values())


def _selected(series: list[Any], names: list[str] | None) -> list[Any]:
    """Only the series named by --series (full or bare names), in that order."""
    from perflab.analyze.fit_inputs import pick

    return series if not names else [pick(series, name) for name in names]


# ---------------------------------------------------------------------------
# formatting


def _num(value: float | None) -> str:
    """Three significant digits; scientific notation for very small or large values."""
    from perflab.units import format_quantity

    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    if value and (abs(value) < 1e-3 or abs(value) >= 1e7):
        return f"{value:.3g}"
    return format_quantity(value)


def _y(value: float, unit: str) -> str:
    """A y value in its unit: rates as 1.2 k/s, times as 3.4 ms, else a number."""
    from perflab.units import format_rate, format_time

    if not math.isfinite(value):
        return _num(value)
    return format_rate(value) if unit == "/s" else format_time(value) if unit == "s" \
        else _num(value)


def _ci(est: Any, fmt: Callable[[float], str] = _num) -> str:
    """'low – high' of an Estimate; "–" when there is no interval (no degrees of freedom)."""
    if not (math.isfinite(est.ci_low) and math.isfinite(est.ci_high)):
        return "–"
    return f"{fmt(est.ci_low)} – {fmt(est.ci_high)}"


def _time_est(est: Any) -> str:
    """A time coefficient with its CI: '3.4 ns (3.2 ns – 3.6 ns)'; '–' for a term held at 0."""
    from perflab.units import format_time

    if est.value == 0 and est.std_error == 0:
        return "–"
    return f"{format_time(est.value)} ({_ci(est, format_time)})"


# ---------------------------------------------------------------------------
# USL


def _usl_report(sources: list[Any], args: argparse.Namespace) -> FitReport:
    """One coefficient table and one points table per series."""
    from perflab.analyze.fit_inputs import usl_series
    from perflab.analyze.models import fit_usl

    series = _selected(_merged([usl_series(s, args.little) for s in sources]), args.series)
    report = FitReport("usl")
    for s in series:
        fit = _fitted(s, lambda s=s: fit_usl(s.x, s.y))
        report.tables += [_usl_table(s, fit), _usl_points(s, fit)]
        report.fits.append({"series": s.name, "x_label": s.x_label, "y_label": s.y_label,
                            "points": {"N": s.x.tolist(), "X": s.y.tolist()},
                            "fitted": fit.predict(s.x).tolist(), **fit.to_dict(),
                            "notes": list(s.notes)})
        report.charts.append((s.name, lambda path, s=s, fit=fit: _usl_chart(s, fit, path)))
    return report


def _usl_table(s: Any, fit: Any) -> Any:
    """α, β, γ with SEs and CIs, N*, X(N*), γ/α and R²; reading and warnings below."""
    from perflab.report.table import Table

    y = lambda v: _y(v, s.y_unit)  # noqa: E731 - a formatter in the series' unit
    level = f"{fit.level:.0%} CI"
    table = Table(f"USL fit: {s.name}", ["quantity", "value", "std error", level, "meaning"],
                  align=["l", "r", "r", "r", "l"])
    table.rows = [
        ["α (contention)", _num(fit.alpha.value), _num(fit.alpha.std_error), _ci(fit.alpha),
         "share of the work that is serialized"],
        ["β (coherency)", _num(fit.beta.value), _num(fit.beta.std_error), _ci(fit.beta),
         "cost of keeping each pair of units in step"],
        ["γ (X at N = 1)", y(fit.gamma.value), y(fit.gamma.std_error), _ci(fit.gamma, y),
         "throughput of a single unit"],
        ["peak N*", _num(fit.peak_load), "", "", "load where X peaks, √((1−α)/β)"],
        ["X(N*)", y(fit.peak_throughput), "", "", "the highest throughput"],
        ["Amdahl limit γ/α", y(fit.amdahl_limit), "", "", "ceiling of X if β were 0"],
        ["R²", f"{fit.r_squared:.4f}", "", "", f"{fit.n_points} points, {s.x_label}"]]
    table.footnotes = [f"reading: {fit.reading()}"] + [f"warning: {w}" for w in fit.warnings]
    return table


def _usl_points(s: Any, fit: Any) -> Any:
    """Measured and fitted X at each N, with residuals."""
    from perflab.report.table import Table

    table = Table(f"points: {s.name}", ["N", "X measured", "X fitted", "residual", "residual %"],
                  align=["r"] * 5)
    for n, x, fitted, r in zip(s.x, s.y, fit.predict(s.x), fit.residuals):
        load = f"{n:,.0f}" if n == round(n) else _num(float(n))
        table.rows.append([load, _y(float(x), s.y_unit), _y(float(fitted), s.y_unit),
                           _num(float(r)), f"{100 * r / x:+.1f}%"])
    table.footnotes = [f"note: {n}" for n in s.notes]
    return table


def _usl_chart(s: Any, fit: Any, path: Path) -> Path:
    from perflab.report.fit_chart import usl_chart

    title = (f"{s.name}: USL α = {fit.alpha.value:.3g}, β = {fit.beta.value:.3g}, "
             f"γ = {fit.gamma.value:.3g}")
    return usl_chart(fit, s.x, s.y, path, x_label=s.x_label, y_label=s.y_label, title=title)


# ---------------------------------------------------------------------------
# complexity


def _complexity_report(sources: list[Any], args: argparse.Namespace) -> FitReport:
    """One table: best class and runner-up of every swept series, with CIs."""
    from perflab.analyze.fit_inputs import cost_series
    from perflab.analyze.models import fit_complexity
    from perflab.report.table import Table

    pooled = _merged([cost_series(s, args.param) for s in sources])
    series = [s for s in _selected(pooled, args.series) if s.param is not None]
    if not series:
        raise UsageError("no usable data for a complexity fit: none of the chosen benchmarks "
                         "sweeps the size parameter")
    models = [args.growth] if args.growth else None
    report = FitReport("complexity")
    table = Table(f"complexity: time per call = a + b·g({series[0].param})",
                  ["series", "rank", "growth g(n)", "a (95% CI)", "b (95% CI)", "Δ", "R²"],
                  align=["l", "l", "l", "r", "r", "r", "r"])
    for s in series:
        fit = _fitted(s, lambda s=s: fit_complexity(s.x, s.y, s.weights, models=models))
        table.rows += _complexity_rows(s, fit)
        table.footnotes += [f"{s.name}: {fit.reading()}"]
        table.footnotes += [f"{s.name}: warning: {w}" for w in fit.warnings]
        report.fits.append({"series": s.name, "param": s.param,
                            "points": {"n": s.x.tolist(), "cost": s.y.tolist()},
                            "fitted": fit.predict(s.x).tolist(),
                            "residuals": fit.residuals.tolist(), **fit.to_dict()})
        report.charts.append((s.name, lambda path, s=s, fit=fit: _complexity_chart(s, fit, path)))
    weighted = "; points weighted by 1/SE² of each cost (a CSV without an se column: " \
        "1/cost²)" if any(s.weights is not None for s in series) else ""
    table.footnotes.append("a: constant cost (s); b: cost per unit of g(n) (s); Δ: the "
                           "information criterion's distance to the best (< 2: hard to tell "
                           f"apart, > 10: clearly worse){weighted}")
    report.tables.append(table)
    return report


def _complexity_rows(s: Any, fit: Any) -> list[list[str]]:
    """The best and the runner-up class of one series."""
    rows = []
    for rank, cand in (("best", fit.best), ("runner-up", fit.runner_up)):
        if cand is None:
            continue
        delta = cand.score - fit.best.score
        rows.append([s.name if rank == "best" else "", rank, cand.model,
                     _time_est(cand.a), _time_est(cand.b),
                     f"{delta:.1f}", f"{fit.r_squared:.4f}" if rank == "best" else ""])
    return rows


def _complexity_chart(s: Any, fit: Any, path: Path) -> Path:
    from perflab.report.fit_chart import complexity_chart

    return complexity_chart(fit, s.x, s.y, path, x_label=f"{s.param} (size)",
                            y_label="time per call (s)", title=f"{s.name}: {fit.model}")


# ---------------------------------------------------------------------------
# break-even


def _breakeven_report(sources: list[Any], args: argparse.Namespace) -> FitReport:
    """Both sides' cost curves (cold + a + b·g(n)) and where they cross."""
    from perflab.analyze.fit_inputs import cost_series, pick
    from perflab.analyze.models import breakeven

    if not args.between:
        raise UsageError("--model breakeven needs the two benchmarks: --between A B")
    pooled = _merged([cost_series(s, args.param, required=False) for s in sources])
    a, b = (pick(pooled, name) for name in args.between)
    if (a.param is None) != (b.param is None):
        swept = a if a.param else b
        raise UsageError(f"{swept.name!r} sweeps {swept.param} but the other benchmark does "
                         "not; compare two sweeps, or two benchmarks without the parameter")
    fit_a, fit_b, search = _side_fits(a, b, args.growth)
    result = _fitted(a, lambda: breakeven(
        fit_a, fit_b, a.cold, b.cold, cold_a_se=a.cold_se, cold_b_se=b.cold_se,
        labels=(a.name, b.name), search_range=search))
    report = FitReport("breakeven", [_breakeven_table(a, b, result)])
    report.fits.append({"series": f"{a.name} vs {b.name}", "param": a.param or "calls",
                        **result.to_dict(), "cold_a_se": a.cold_se, "cold_b_se": b.cold_se,
                        "fit_a": fit_a.to_dict(), "fit_b": fit_b.to_dict()})
    report.charts.append((f"{a.name} vs {b.name}",
                          lambda path: _breakeven_chart(a, b, result, path)))
    return report


def _side_fits(a: Any, b: Any, growth: str | None) -> tuple[Any, Any, tuple[float, float] | None]:
    """Cost fits of both sides and the search range (None: the default range of breakeven)."""
    from perflab.analyze.models import fit_complexity

    if a.param is None:
        high = _calls_range(a, b)
        return _per_call_fit(a, high), _per_call_fit(b, high), (1.0, high)
    models = [growth] if growth else None
    return (_fitted(a, lambda: fit_complexity(a.x, a.y, a.weights, models=models)),
            _fitted(b, lambda: fit_complexity(b.x, b.y, b.weights, models=models)), None)


def _calls_range(a: Any, b: Any) -> float:
    """Calls to search and draw: 100× the straight-line crossing of cold + n·warm, ≥ 1,000."""
    slope = float(a.y[0] - b.y[0])
    guess = abs((b.cold - a.cold) / slope) if slope else 0.0
    return float(10 ** math.ceil(math.log10(max(1e3, 100 * guess))))


def _per_call_fit(s: Any, high: float) -> Any:
    """cost(n calls) = n·warm as an O(n) ComplexityFit with a = 0 (one point, not fitted).

    The one-off cost is added by breakeven as ``cold``; the SE of warm comes
    from the median's bootstrap CI, so the t quantile uses a large dof.
    """
    import numpy as np

    from perflab.analyze.fit_inputs import Z95
    from perflab.analyze.models import ComplexityCandidate, ComplexityFit, Estimate

    warm = float(s.y[0])
    se = float(s.y_se[0]) if s.y_se is not None and math.isfinite(s.y_se[0]) else 0.0
    zero = Estimate(0.0, 0.0, 0.0, 0.0)
    slope = Estimate(warm, se, warm - Z95 * se, warm + Z95 * se)
    cand = ComplexityCandidate("O(n)", zero, slope, np.diag([0.0, se**2]), 0.0, 0.0, 10**6)
    return ComplexityFit(cand, None, math.inf, "none", (cand,), np.zeros(1), math.nan, 1,
                         (1.0, high), 0.95, ())


def _breakeven_table(a: Any, b: Any, result: Any) -> Any:
    """One row per side: growth, one-off cost, a and b with CIs, total cost at n*."""
    from perflab.report.table import Table
    from perflab.units import format_time

    n = a.param or "calls n"
    table = Table(f"break-even: {a.name} vs {b.name} (total = cold + a + b·g({n}))",
                  ["benchmark", "growth g(n)", "cold (one-off)", "a (95% CI)", "b (95% CI)",
                   "total at n*"], align=["l", "l", "r", "r", "r", "r"])
    at = result.n_star
    for s, fit, cold, cost in ((a, result.fit_a, result.cold_a, result.cost_a),
                               (b, result.fit_b, result.cold_b, result.cost_b)):
        total = format_time(float(cost(at))) if at is not None else "–"
        table.rows.append([s.name, fit.model, f"{format_time(cold)} ± {format_time(s.cold_se)}",
                           _time_est(fit.a), _time_est(fit.b), total])
    table.footnotes = [result.sentence()] + [f"warning: {w}" for w in result.warnings]
    table.footnotes.append("cold: first call of a fresh process minus a warm call (median over "
                           "processes ± its standard error); a, b: warm cost fitted over n")
    if a.param is None:
        table.footnotes.append("n counts calls in one fresh process: total = cold + n × time "
                               "per call")
    return table


def _breakeven_chart(a: Any, b: Any, result: Any, path: Path) -> Path:
    from perflab.report.fit_chart import breakeven_chart

    points = {"points_a": (a.x, a.y), "points_b": (b.x, b.y)} if a.param else {}
    return breakeven_chart(result, path, x_label=a.param or "calls n",
                           y_label="total cost (s)", title=f"{a.name} vs {b.name}\n"
                           f"{result.sentence()}", **points)


# ---------------------------------------------------------------------------
# output


def _print(report: FitReport, fmt: str) -> None:
    """Tables on stdout as rich tables or Markdown; CSV prints one record per fit."""
    from perflab.report import console

    if fmt == "csv":
        flat = [{k: v for k, v in f.items() if not isinstance(v, (list, dict))}
                for f in report.fits]
        sys.stdout.write(console.csv_text(flat))
    elif fmt == "markdown":
        sys.stdout.write(console.markdown(report.tables))
    else:
        console.print_tables(report.tables)


def _write_json(report: FitReport, args: argparse.Namespace) -> None:
    """The fits, with the input and the command line; a single fit's keys also at top level."""
    from perflab import __version__
    from perflab.model import json_types

    doc: dict[str, Any] = {"kind": "fit", "fit": report.model, "sources": list(args.files),
                           "command_line": ["perflab", *sys.argv[1:]],
                           "created": dt.datetime.now(dt.timezone.utc).isoformat(
                               timespec="seconds"),
                           "perflab_version": __version__, "fits": report.fits}
    if len(report.fits) == 1:
        doc = {**report.fits[0], **doc}
    path = Path(args.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(json_types(doc), indent=1, allow_nan=False) + "\n")
    sys.stderr.write(f"fit saved to {path}\n")


def _write_charts(report: FitReport, path: Path) -> None:
    """One PNG per chart: ``path`` itself for one, ``stem-SERIES.png`` for several."""
    path.parent.mkdir(parents=True, exist_ok=True)
    for name, draw in report.charts:
        slug = re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-").lower() or "series"
        out = path if len(report.charts) == 1 else path.with_name(
            f"{path.stem}-{slug}{path.suffix or '.png'}")
        sys.stderr.write(f"chart saved to {draw(out)}\n")
