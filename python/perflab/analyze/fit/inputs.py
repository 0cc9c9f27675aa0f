"""Points for model fits, taken from results files and CSVs (``perflab fit``).

Raw data → points; :mod:`perflab.analyze.fit.models` does the fitting. Each input
becomes named :class:`Series` of (x, y) points:

* USL, (N, X): an http sweep (kind "http": X = the achieved rate of each step,
  successful responses completed inside its recorded window ÷ the window, as the
  sweep table counts it, never the responses that came while the step drained;
  N = the connection count of closed-loop steps, or Little's law N = X·R for
  open-loop steps, R the mean response time measured from the intended send
  time; open-loop steps that ended behind get a note), a threads sweep from
  ``perflab run``
  (N = Benchmark.threads, X = total ops/s = 1 / median time per op), or a CSV
  with columns N, X (and optionally name).
* cost, (n, seconds per call): parameter sweeps from ``perflab run`` (one
  numeric parameter n; the cost is the median time per call, its standard
  error from the bootstrap CI, and the one-off cold cost from the first call
  of each fresh process), or a CSV with columns n, cost (optionally name and
  cold). A benchmark without the parameter gives a per-call series, for
  "cold + n·warm" with n the number of calls.

Every failure is a :class:`~perflab.errors.UsageError` naming the file and
what to do.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np

from perflab.errors import UsageError
from perflab.model import Benchmark, HttpStep, Results

#: Standard normal quantile of a two-sided 95% interval: SE = CI half-width / 1.96.
Z95 = 1.959964
#: Open-loop steps whose mean send lag exceeds this share of the mean response
#: time describe the load generator more than the server.
SEND_LAG_SHARE = 0.10

LittleTime = Literal["latency", "service"]
#: What each model needs of a CSV, said when a column is missing.
CSV_COLUMNS = {
    ("n", "x"): "a USL fit needs the columns N,X (optional: name)",
    ("n", "cost"): "a complexity or break-even fit needs the columns n,cost (optional: name, "
    "se, cold)",
}


@dataclass(frozen=True)
class Series:
    """Points of one fit.

    Attributes:
        name: the series' full name (e.g. ``group/name k=v``, a URL, a CSV name).
        short: the benchmark's bare name, accepted by ``--between`` when unique.
        x: N (concurrency) or n (size), shape (k,).
        y: X (throughput) or cost (s per call), shape (k,).
        x_label / y_label: axis labels with units, for tables and charts.
        y_unit: "/s" for rates, "s" for times, "" when unknown (CSV).
        y_se: standard error of each y, shape (k,), or None when unknown; the
            fits weigh points by 1/SE² (by 1/y², relative errors, without).
        cold: one-off cost of a fresh process (first call minus a warm call), s.
        cold_se: its standard error, s.
        param: the swept parameter's name; None for a per-call series (n = calls).
        notes: plain-words remarks about how the points were made.
    """

    name: str
    short: str
    x: np.ndarray
    y: np.ndarray
    x_label: str
    y_label: str
    y_unit: str = ""
    y_se: np.ndarray | None = None
    cold: float = 0.0
    cold_se: float = 0.0
    param: str | None = None
    notes: tuple[str, ...] = ()

    @property
    def weights(self) -> np.ndarray | None:
        """1/SE² of each point when every SE is a positive number, else None."""
        if self.y_se is None or not np.all(np.isfinite(self.y_se) & (self.y_se > 0)):
            return None
        return 1.0 / self.y_se**2


# ---------------------------------------------------------------------------
# reading files


@dataclass(frozen=True)
class CsvTable:
    """A CSV file's columns by lower-case header name.

    Attributes:
        path: the file.
        columns: header (stripped, lower case) → cell strings, one per data row.
        lines: the file line number of each data row (for error messages).
    """

    path: Path
    columns: dict[str, list[str]]
    lines: list[int]

    def numbers(self, name: str) -> np.ndarray:
        """Column ``name`` as floats, shape (rows,).

        Raises:
            UsageError: a cell that is not a number (the message names the line).
        """
        out = []
        for line, cell in zip(self.lines, self.columns[name]):
            try:
                out.append(float(cell))
            except ValueError:
                raise UsageError(
                    f"{self.path}:{line}: {name} {cell!r} is not a number; fix or delete that row"
                ) from None
        return np.asarray(out)

    def require(self, *names: str) -> None:
        """Raise UsageError naming the missing columns and the ones present."""
        missing = [n for n in names if n not in self.columns]
        if missing:
            found = ", ".join(self.columns) or "none"
            needs = CSV_COLUMNS.get(names, "the header needs " + ", ".join(names))
            raise UsageError(
                f"{self.path}: CSV has no column {', '.join(missing)} (columns: "
                f"{found}); {needs} (header names in any case)"
            )


def read_source(path: str | Path, format: str | None = None) -> Results | CsvTable:
    """A perflab results file (JSON: starts with ``{``) or a CSV table; ``format`` (a
    peer's, from ``--from``) reads the JSON as that format (:func:`perflab.model.load`).

    Raises:
        UsageError / ResultsFileError: missing, unreadable or empty files.
    """
    from perflab import files, model

    path = Path(path)
    data = files.read_bytes(path, str(path), files.MAX_RESULTS_BYTES)
    if data.lstrip().startswith(b"{"):
        return model.load(path, format)
    if len(data) > files.MAX_INPUT_BYTES:
        raise UsageError(
            f"{path}: a CSV of {len(data) / 2**20:,.0f} MiB is more than the "
            f"{files.MAX_INPUT_BYTES / 2**20:,.0f} MiB perflab reads"
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"{path}: is neither a results file nor UTF-8 CSV text (byte "
            f"{exc.start} is 0x{data[exc.start]:02x}: a binary file?)"
        ) from None
    return _parse_csv(path, text)


def _parse_csv(path: Path, text: str) -> CsvTable:
    """Rows of a CSV, skipping blank lines and ``#`` comments."""
    rows = [
        (i, row)
        for i, row in enumerate(csv.reader(text.splitlines()), start=1)
        if row and any(c.strip() for c in row) and not row[0].lstrip().startswith("#")
    ]
    if len(rows) < 2:
        raise UsageError(
            f"{path}: no usable data: expected a results file written with --json "
            "or a CSV with a header row and at least one data row"
        )
    header = [h.strip().lower() for h in rows[0][1]]
    columns: dict[str, list[str]] = {h: [] for h in header if h}
    for line, row in rows[1:]:
        if any(cell.strip() for cell in row[len(header) :]):
            raise UsageError(
                f"{path}:{line}: {len(row)} cells but the header names "
                f"{len(header)} columns ({', '.join(header)}); delete the extra "
                "cells or name their column in the header"
            )
        for h, cell in zip(header, row + [""] * (len(header) - len(row))):
            if h:
                columns[h].append(cell.strip())
    return CsvTable(path, columns, [i for i, _ in rows[1:]])


def _csv_groups(table: CsvTable) -> dict[str, np.ndarray]:
    """Row indices by the optional ``name`` column (one unnamed group without it)."""
    names = table.columns.get("name") or [""] * len(table.lines)
    groups: dict[str, list[int]] = {}
    for i, name in enumerate(names):
        groups.setdefault(name, []).append(i)
    return {k: np.asarray(v) for k, v in groups.items()}


# ---------------------------------------------------------------------------
# USL points


def usl_series(source: Results | CsvTable, little: LittleTime = "latency") -> list[Series]:
    """(N, X) series for a USL fit from an http sweep, a threads sweep or a CSV.

    Args:
        source: from :func:`read_source`.
        little: for open-loop http steps, which mean time R goes into Little's
            law N = X·R: "latency" (from the intended send time: requests
            queued anywhere, the load generator included) or "service" (from
            the actual write: requests on the wire and in the server).

    Returns:
        One series per URL, per threads-mode benchmark, or per CSV name.

    Raises:
        UsageError: no usable points, or a CSV without the N and X columns.
    """
    if isinstance(source, CsvTable):
        source.require("n", "x")
        n, x = source.numbers("n"), source.numbers("x")
        return [
            Series(name or source.path.stem, name or source.path.stem, n[idx], x[idx], "N", "X")
            for name, idx in _csv_groups(source).items()
        ]
    if source.kind == "http":
        series = [s for b in source.benchmarks if (s := _http_series(b, little))]
    elif source.kind == "run":
        series = _threads_series(source.benchmarks)
    else:
        series = []
    if not series:
        raise UsageError(
            "no usable data for a USL fit: expected an http sweep (perflab http "
            "--json), a threads sweep (perflab run with @perflab.bench(threads="
            "[1, 2, 4, 8])) or a CSV with columns N,X"
        )
    return series


def _http_series(bench: Benchmark, little: LittleTime) -> Series | None:
    """One URL's steps as (N, X); steps without a successful response are left out."""
    n, x, notes = [], [], []
    for step in bench.steps:
        point = _http_point(step, little, notes)
        if point:
            n.append(point[0])
            x.append(point[1])
    if not n:
        return None
    modes = {s.mode == "closed" for s in bench.steps}
    x_label = (
        "connections N (closed loop)"
        if modes == {True}
        else f"concurrency N = X·R (Little's law, R = mean {little} time)"
    )
    return Series(
        bench.name,
        bench.name,
        np.asarray(n),
        np.asarray(x),
        x_label,
        "throughput X (responses/s)",
        "/s",
        notes=tuple(notes),
    )


def _step_label(step: HttpStep) -> str:
    if step.mode == "closed" or step.offered_rate is None:
        return f"{step.connections} connections"
    return f"{step.offered_rate:g}/s"


def _http_point(step: HttpStep, little: LittleTime, notes: list[str]) -> tuple[float, float] | None:
    """(N, X) of one step, or None (with a note) when the step has no usable rate.
    X is the achieved rate of :func:`perflab.analyze.http.summarize_step`."""
    from perflab.analyze.fit.models import littles_law_concurrency
    from perflab.analyze.http import backlog_reasons, summarize_step

    if step.elapsed_s <= 0 or step.ok_responses <= 0:
        notes.append(f"step {_step_label(step)} left out: no successful responses")
        return None
    summary = summarize_step(step)
    rate = summary.achieved_rate
    if step.drained is None:
        notes.append(
            f"step {_step_label(step)}: its file predates the separate count of "
            "responses that came after a step ended, so X may include them"
        )
    if step.mode == "closed":
        return float(step.connections), rate
    if behind := backlog_reasons(summary):
        notes.append(
            f"step {_step_label(step)} ended behind ({', '.join(behind)}): not a "
            "steady state, so its R, and N = X·R, grow with the step's length"
        )
    mean_us = (step.latency if little == "latency" else step.service_time).mean_us
    if not math.isfinite(mean_us):
        notes.append(f"step {_step_label(step)} left out: no {little} time recorded")
        return None
    # dispatch lag is perflab's own lateness; send lag also holds waits for a busy
    # connection (the server's doing) and the engine's intended timer batching
    lag = step.dispatch_lag if step.dispatch_lag.count else step.send_lag
    if lag.mean_us > SEND_LAG_SHARE * step.latency.mean_us:
        notes.append(
            f"step {_step_label(step)}: the load generator fell behind (mean "
            f"dispatch lag {lag.mean_us:.0f} µs), so N counts requests waiting in "
            "perflab"
        )
    return float(littles_law_concurrency(rate, mean_us * 1e-6)), rate


def _threads_series(benches: list[Benchmark]) -> list[Series]:
    """Threads-mode benchmarks as (threads, total ops/s), one series per base label."""
    points: dict[str, list[tuple[int, float]]] = {}
    short: dict[str, str] = {}
    for bench in benches:
        if bench.threads is None:
            continue
        summary = _summary(bench)
        key = _key(replace(bench, threads=None))
        short[key] = bench.name
        if summary.ok and summary.median_s > 0:
            points.setdefault(key, []).append((bench.threads, 1.0 / summary.median_s))
    return [
        Series(
            k,
            short[k],
            np.asarray([p[0] for p in v], float),
            np.asarray([p[1] for p in v]),
            "threads N",
            "throughput X (ops/s)",
            "/s",
        )
        for k, v in points.items()
    ]


def _summary(bench: Benchmark) -> Any:
    """The benchmark's Summary with a fixed bootstrap seed (re-running prints the same)."""
    from perflab.analyze.run.summary import summarize

    return summarize(bench, rng=np.random.default_rng(0))


def _key(bench: Benchmark, drop: str | None = None) -> str:
    """``group/name[stage] k=v …`` without parameter ``drop``: the name of a series."""
    text = f"{bench.group}/{bench.name}" if bench.group else bench.name
    text += f"[{bench.stage}]" if bench.stage else ""
    extra = " ".join(f"{k}={v}" for k, v in bench.params.items() if k != drop)
    text = f"{text} {extra}".strip()
    return f"{text} ×{bench.threads}t" if bench.threads is not None else text


# ---------------------------------------------------------------------------
# cost points


def numeric_params(benches: list[Benchmark]) -> list[str]:
    """Names of parameters with a number (not a bool) as value, in first-seen order."""
    names: dict[str, None] = {}
    for bench in benches:
        for k, v in bench.params.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                names[k] = None
    return list(names)


def choose_param(benches: list[Benchmark], param: str | None, required: bool = True) -> str | None:
    """``param`` if the benchmarks have it, else the only numeric parameter.

    Raises:
        UsageError: an unknown ``param``, several numeric ones without
            ``param``, or none at all when ``required``.
    """
    found = numeric_params(benches)
    if param is not None:
        if param not in found:
            raise UsageError(
                f"--param {param}: no benchmark has a numeric parameter {param!r} "
                f"(numeric parameters: {', '.join(found) or 'none'})"
            )
        return param
    if len(found) > 1:
        raise UsageError(
            f"several numeric parameters ({', '.join(found)}); choose the size with --param NAME"
        )
    if not found and required:
        raise UsageError(
            "no usable data for a complexity fit: no benchmark has a numeric "
            "parameter; sweep one with @perflab.bench(params={'n': [10, 100, "
            "1000]}) or pass a CSV with columns n,cost"
        )
    return found[0] if found else None


def cost_series(
    source: Results | CsvTable, param: str | None = None, required: bool = True
) -> list[Series]:
    """(n, seconds per call) series from a ``perflab run`` file or a CSV.

    Args:
        source: from :func:`read_source`.
        param: the size parameter; default the only numeric one.
        required: when False, a run file without a numeric parameter gives
            per-call series (``param`` None) instead of an error.

    Returns:
        One series per benchmark with the other parameters fixed (run file),
        or per CSV name.

    Raises:
        UsageError: no usable data, missing CSV columns, bad parameter choice.
    """
    if isinstance(source, CsvTable):
        return _csv_cost_series(source)
    benches = [b for b in source.benchmarks if b.processes] if source.kind == "run" else []
    if not benches:
        raise UsageError(
            "no usable data for a cost fit: expected a perflab run results file "
            "(with measured benchmarks) or a CSV with columns n,cost"
        )
    chosen = choose_param(benches, param, required)
    groups: dict[str, list[Benchmark]] = {}
    for bench in benches:
        groups.setdefault(_key(bench, chosen if chosen in bench.params else None), []).append(bench)
    series = [s for members in groups.values() if (s := _run_cost_series(members, chosen))]
    if not series:
        raise UsageError(
            "no usable data for a cost fit: every benchmark failed or has no samples; re-run it"
        )
    return series


def _csv_cost_series(table: CsvTable) -> list[Series]:
    """CSV columns n, cost (s), optional name, se (standard error of cost, s) and cold.

    Without ``se`` the SEs are unknown (``y_se`` None): the fit then takes
    each cost's error as proportional to the cost (a constant relative error,
    typical of timings that span decades) instead of letting the largest n
    dominate.
    """
    table.require("n", "cost")
    n, cost = table.numbers("n"), table.numbers("cost")
    se = table.numbers("se") if "se" in table.columns else None
    cold = table.numbers("cold") if "cold" in table.columns else np.zeros_like(n)
    out = []
    for name, idx in _csv_groups(table).items():
        label = name or table.path.stem
        out.append(
            Series(
                label,
                label,
                n[idx],
                cost[idx],
                "n",
                "cost",
                "s",
                None if se is None else se[idx],
                cold=float(np.median(cold[idx])),
                param="n",
            )
        )
    return out


def _run_cost_series(members: list[Benchmark], param: str | None) -> Series | None:
    """One series from benchmarks that differ only in ``param`` (None: one per-call point)."""
    rows = []
    for bench in members:
        s = _summary(bench)
        if s.ok:
            size = bench.params.get(param, 1) if param else 1
            if isinstance(size, bool) or not isinstance(size, (int, float)):
                raise UsageError(
                    f"{bench.id}: parameter {param} is {size!r}, not a number; "
                    "a complexity fit needs numeric sizes (--param NAME)"
                )
            rows.append((float(size), s.median_s, s.median.se, bench))
    if not rows:
        return None
    rows.sort(key=lambda r: r[0])
    bench = rows[0][3]
    swept = param is not None and param in bench.params
    cold, cold_se = one_off_cost([(r[3], r[1]) for r in rows])
    return Series(
        _key(bench, param if swept else None),
        bench.name,
        np.asarray([r[0] for r in rows]),
        np.asarray([r[1] for r in rows]),
        param if swept else "calls n",
        "time per call (s)",
        "s",
        np.asarray([r[2] for r in rows]),
        cold,
        cold_se,
        param if swept else None,
    )


def one_off_cost(points: list[tuple[Benchmark, float]]) -> tuple[float, float]:
    """The one-off cost of a fresh process: median of (first call − warm call). O(P).

    Each process's cold time (Process.cold_ns) minus the warm median of its
    own case is one observation; the estimate is their median, clipped at 0,
    with standard error 1.2533·MAD/√m (the median's SE under normality).

    Args:
        points: (benchmark, its warm median time per call in s) per case.

    Returns:
        (one-off cost, its standard error), seconds; (0, 0) with no cold times.
    """
    from perflab.analyze.stats import mad

    diffs = [
        p.cold_ns * 1e-9 - warm
        for bench, warm in points
        for p in bench.processes
        if p.cold_ns is not None
    ]
    if not diffs:
        return 0.0, 0.0
    se = 1.2533 * mad(diffs) / math.sqrt(len(diffs)) if len(diffs) > 1 else 0.0
    return max(0.0, float(np.median(diffs))), se


def merge_series(lists: list[list[Series]]) -> list[Series]:
    """Series of several files pooled by name: points concatenated, then sorted by x
    (stable); notes kept, in order; ``y_se`` kept only when every part has one.

    Args:
        lists: the series of each source (:func:`usl_series`, :func:`cost_series`).

    Returns:
        One series per name, in order of first appearance.
    """
    out: dict[str, Series] = {}
    for s in (s for lst in lists for s in lst):
        if s.name in out:
            prev = out[s.name]
            se = (
                None if prev.y_se is None or s.y_se is None else np.concatenate([prev.y_se, s.y_se])
            )
            s = replace(
                prev,
                x=np.concatenate([prev.x, s.x]),
                y=np.concatenate([prev.y, s.y]),
                y_se=se,
                notes=prev.notes + s.notes,
            )
        order = np.argsort(s.x, kind="stable")
        out[s.name] = replace(
            s, x=s.x[order], y=s.y[order], y_se=None if s.y_se is None else s.y_se[order]
        )
    return list(out.values())


def pick(series: list[Series], name: str) -> Series:
    """The series called ``name``: its full name, or its bare benchmark name when unique.

    Raises:
        UsageError: no such benchmark, or a bare name shared by several series.
    """
    exact = [s for s in series if s.name == name]
    matches = exact or [s for s in series if s.short == name]
    if len(matches) == 1:
        return matches[0]
    listed = ", ".join(repr(s.name) for s in (matches or series))
    if matches:
        raise UsageError(f"{name!r} matches several benchmarks ({listed}); give the full name")
    raise UsageError(f"unknown benchmark {name!r}; the file has {listed}")
