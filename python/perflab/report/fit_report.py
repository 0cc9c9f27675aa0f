"""What ``perflab fit`` prints and saves, rendered from fitted models: tables, JSON records
of each fit, and chart makers (:class:`FitReport`).

Computes nothing: the fits come from :func:`perflab.analyze.fit.fits.fit_model`;
``perflab fit`` renders them once, ``perflab show`` again from a saved document's series.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perflab.analyze.fit.fits import series_record


@dataclass
class FitReport:
    """What one ``perflab fit`` produced, ready to print and save.

    Attributes:
        model: "usl", "complexity" or "breakeven".
        tables: tables to print.
        fits: one JSON-ready record per fitted series.
        charts: (series name, function drawing the chart into a path).
        inputs: the fitted series (:class:`perflab.analyze.fit.inputs.Series`), saved in
            the JSON as records so ``perflab show`` fits them again to the same tables.
    """

    model: str
    tables: list[Any] = field(default_factory=list)
    fits: list[dict[str, Any]] = field(default_factory=list)
    charts: list[tuple[str, Callable[[Path], Path]]] = field(default_factory=list)
    inputs: list[Any] = field(default_factory=list)

    def input_records(self) -> list[dict[str, Any]]:
        """The ``inputs`` as JSON records (:func:`perflab.analyze.fit.fits.series_record`)."""
        return [series_record(s) for s in self.inputs]


def fit_report(model: str, series: list[Any], fitted: list[Any]) -> FitReport:
    """The report of ``model``'s fits (:func:`perflab.analyze.fit.fits.fit_model`) of ``series``."""
    render = {"usl": _usl_report, "complexity": _complexity_report, "breakeven": _breakeven_report}[
        model
    ]
    report = render(fitted)
    report.inputs = list(series)
    return report


def print_report(report: FitReport, fmt: str) -> None:
    """Tables on stdout as rich tables or Markdown; CSV prints one record per fit."""
    from perflab.report import console

    console.emit(fmt, report.tables, lambda: fit_records(report))


def fit_records(report: FitReport) -> list[dict[str, Any]]:
    """The CSV records: one per fit, its scalar fields (points and nested parts left out)."""
    return [{k: v for k, v in f.items() if not isinstance(v, (list, dict))} for f in report.fits]


def _usl_report(fitted: list[tuple[Any, Any]]) -> FitReport:
    """One coefficient table and one points table per series."""
    from perflab.report.fit_table import curve, size_grid, usl_points, usl_table

    report = FitReport("usl")
    for s, fit in fitted:
        report.tables += [usl_table(s, fit), usl_points(s, fit)]
        report.fits.append(
            {
                "series": s.name,
                "x_label": s.x_label,
                "y_label": s.y_label,
                "points": {"N": s.x.tolist(), "X": s.y.tolist()},
                "fitted": fit.predict(s.x).tolist(),
                **fit.to_dict(),
                "notes": list(s.notes),
                "curves": [curve("USL fit", fit, size_grid([1.0, float(max(s.x.max(), 1.0))]))],
            }
        )
        report.charts.append((s.name, lambda path, s=s, fit=fit: _usl_chart(s, fit, path)))
    return report


def _usl_chart(s: Any, fit: Any, path: Path) -> Path:
    from perflab.report.fit_chart import usl_chart, usl_title

    return usl_chart(
        fit, s.x, s.y, path, x_label=s.x_label, y_label=s.y_label, title=usl_title(s.name, fit)
    )


def _complexity_report(fitted: list[tuple[Any, Any]]) -> FitReport:
    """One table: best class and runner-up of every swept series, with CIs."""
    from perflab.report.fit_table import complexity_table, curve, size_grid

    report = FitReport("complexity")
    for s, fit in fitted:
        report.fits.append(
            {
                "series": s.name,
                "param": s.param,
                "points": {"n": s.x.tolist(), "cost": s.y.tolist()},
                "fitted": fit.predict(s.x).tolist(),
                "residuals": fit.residuals.tolist(),
                **fit.to_dict(),
                "curves": [curve(fit.model, fit, size_grid(s.x))],
            }
        )
        report.charts.append((s.name, lambda path, s=s, fit=fit: _complexity_chart(s, fit, path)))
    report.tables.append(complexity_table(fitted))
    return report


def _complexity_chart(s: Any, fit: Any, path: Path) -> Path:
    from perflab.report.fit_chart import complexity_chart, complexity_title

    return complexity_chart(
        fit,
        s.x,
        s.y,
        path,
        x_label=f"{s.param} (size)",
        y_label="time per call (s)",
        title=complexity_title(s.name, fit),
    )


def _breakeven_report(fitted: list[tuple[Any, Any, Any, Any, Any]]) -> FitReport:
    """Both sides' cost curves (cold + a + b·g(n)) and where they cross."""
    import numpy as np

    from perflab.report.fit_table import breakeven_points, breakeven_table, curve, size_grid

    [(a, b, fit_a, fit_b, result)] = fitted
    points = breakeven_points(result)
    n = result.n_star
    crossing = [v for v in (n.value, n.ci_low, n.ci_high) if v] if n is not None else []
    grid = size_grid(np.concatenate([a.x, b.x, crossing]), log=True)
    report = FitReport("breakeven", [breakeven_table(a, b, result)] + ([points] if points else []))
    report.fits.append(
        {
            "series": f"{a.name} vs {b.name}",
            "param": a.param or "calls",
            **result.to_dict(),
            "cold_a_se": a.cold_se,
            "cold_b_se": b.cold_se,
            "fit_a": fit_a.to_dict(),
            "fit_b": fit_b.to_dict(),
            "curves": [
                curve(f"{s.name}: {f.model} + cold cost", f, grid, cold)
                for s, f, cold in ((a, fit_a, a.cold), (b, fit_b, b.cold))
            ],
        }
    )
    report.charts.append(
        (f"{a.name} vs {b.name}", lambda path: _breakeven_chart(a, b, result, path))
    )
    return report


def _breakeven_chart(a: Any, b: Any, result: Any, path: Path) -> Path:
    from perflab.report.fit_chart import breakeven_chart, breakeven_title

    points = {"points_a": (a.x, a.y), "points_b": (b.x, b.y)} if a.param else {}
    return breakeven_chart(
        result,
        path,
        x_label=a.param or "calls n",
        y_label="total cost (s)",
        title=breakeven_title(f"{a.name} vs {b.name}", result),
        **points,
    )
