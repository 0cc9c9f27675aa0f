"""Fitting the series of ``perflab fit``: each model over its series, and the series as JSON.

:mod:`perflab.analyze.fit.inputs` makes the series from files; this module fits them
with :mod:`perflab.analyze.fit.models` (every fit is deterministic: the break-even bootstrap
has a fixed seed) and turns them into and back from JSON records, so a saved fit
document can be fitted again to the same figures (``perflab show``).
:mod:`perflab.report.fit_report` renders what comes out.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from perflab.analyze.fit.inputs import Series
from perflab.errors import UsageError


def fitted(series: Series, fit: Callable[[], Any]) -> Any:
    """Run a model fit; its ValueError becomes one UsageError line naming the series."""
    try:
        return fit()
    except ValueError as exc:
        raise UsageError(f"{series.name}: {exc}") from None


def usl_fits(series: list[Series]) -> list[tuple[Series, Any]]:
    """(series, UslFit) per (N, X) series. Raises UsageError (a fit that can't be made)."""
    from perflab.analyze.fit.models import fit_usl

    return [(s, fitted(s, lambda s=s: fit_usl(s.x, s.y, unit=s.y_unit))) for s in series]


def cost_fit(s: Series, models: list[str] | None) -> Any:
    """fit_complexity of one cost series, with its SEs when every one is a positive number."""
    from perflab.analyze.fit.models import fit_complexity

    se = None if s.weights is None else s.y_se
    return fitted(s, lambda: fit_complexity(s.x, s.y, se, models=models, unit=s.y_unit))


def complexity_fits(series: list[Series], growth: str | None = None) -> list[tuple[Series, Any]]:
    """(series, ComplexityFit) per (n, cost) series; ``growth``: the only class considered."""
    models = [growth] if growth else None
    return [(s, cost_fit(s, models)) for s in series]


def breakeven_fit(a: Series, b: Series, growth: str | None = None) -> tuple[Any, Any, Any]:
    """(fit of A, fit of B, their BreakEven): both sides' cost curves cold + a + b·g(n)
    and where they cross; sides without the parameter are per-call curves (n = calls)."""
    from perflab.analyze.fit.models import breakeven

    fit_a, fit_b, search = _side_fits(a, b, growth)
    result = fitted(
        a,
        lambda: breakeven(
            fit_a,
            fit_b,
            a.cold,
            b.cold,
            cold_a_se=a.cold_se,
            cold_b_se=b.cold_se,
            labels=(a.name, b.name),
            search_range=search,
        ),
    )
    return fit_a, fit_b, result


def _side_fits(
    a: Series, b: Series, growth: str | None
) -> tuple[Any, Any, tuple[float, float] | None]:
    """Cost fits of both sides and the search range (None: the default range of breakeven)."""
    from perflab.analyze.fit.models.breakeven import calls_search_range, per_call_fit

    if a.param is None:
        high = calls_search_range(float(a.y[0]), float(b.y[0]), a.cold, b.cold)
        return per_call_fit(*_warm(a), high), per_call_fit(*_warm(b), high), (1.0, high)
    models = [growth] if growth else None
    return cost_fit(a, models), cost_fit(b, models), None


def _warm(s: Series) -> tuple[float, float]:
    """(time per warm call, its SE) of a per-call series; SE 0 when unknown."""
    se = float(s.y_se[0]) if s.y_se is not None and math.isfinite(s.y_se[0]) else 0.0
    return float(s.y[0]), se


def series_record(s: Series) -> dict[str, Any]:
    """A series as JSON types (arrays as lists; NaN becomes null when saved)."""
    return {
        "name": s.name,
        "short": s.short,
        "x": s.x.tolist(),
        "y": s.y.tolist(),
        "x_label": s.x_label,
        "y_label": s.y_label,
        "y_unit": s.y_unit,
        "y_se": None if s.y_se is None else s.y_se.tolist(),
        "cold": s.cold,
        "cold_se": s.cold_se,
        "param": s.param,
        "notes": list(s.notes),
    }


def series_from_record(d: dict[str, Any]) -> Series:
    """The inverse of :func:`series_record` (null → NaN).

    Raises:
        KeyError / TypeError / ValueError: a record without the fields of the fit
            schema's ``inputs`` (the caller validates the document first).
    """

    def number(value: Any) -> float:
        return math.nan if value is None else float(value)

    def array(values: list[Any]) -> np.ndarray:
        return np.array([number(v) for v in values], dtype=float)

    y_se = d.get("y_se")
    return Series(
        d["name"],
        d["short"],
        array(d["x"]),
        array(d["y"]),
        d["x_label"],
        d["y_label"],
        d.get("y_unit", ""),
        None if y_se is None else array(y_se),
        number(d.get("cold", 0.0)),
        number(d.get("cold_se", 0.0)),
        d.get("param"),
        tuple(d.get("notes", ())),
    )


def fit_model(model: str, series: list[Series], growth: str | None = None) -> list[Any]:
    """The fits of ``model`` over ``series``: [(series, fit), …] for "usl" and
    "complexity"; for "breakeven" (series = [A, B]) one (A, B, fit of A, fit of B,
    BreakEven).

    Raises:
        UsageError: a series that can't be fitted.
    """
    if model == "usl":
        return usl_fits(series)
    if model == "complexity":
        return complexity_fits(series, growth)
    a, b = series
    return [(a, b, *breakeven_fit(a, b, growth))]
