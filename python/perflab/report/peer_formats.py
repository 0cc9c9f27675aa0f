"""Peers' formats out, from any perflab results file (``perflab show FILE --export FORMAT OUT``).

Reading peers' formats is :mod:`perflab.interop`.

- ``github-action-benchmark``: the ``customSmallerIsBetter`` JSON of
  github-action-benchmark (a list of ``{"name", "unit", "value", "range", "extra"}``;
  ``range`` and ``extra`` are free text it shows in its charts' tooltips). One entry per
  benchmark: the median time per op (run), the median wall time (cmd), or the p50 and p99
  latency of each step (http).
- ``hyperfine``: hyperfine's ``--export-json`` layout for a ``cmd`` file, the document
  ``perflab cmd --export-json`` writes (:func:`perflab.report.cmd_table.hyperfine_document`),
  readable by hyperfine's own scripts and by ``perflab show``.
- ``hgrm``: HdrHistogram's percentile distribution text (Java's
  ``outputPercentileDistribution``, as wrk2 prints it), milliseconds, for the latency
  histogram of each step of an ``http`` file; several steps give one file each
  (``OUT-step1.hgrm`` …).
- ``hlog``: HdrHistogram's interval log (Java ``HistogramLogWriter``, format 1.3): one
  line per step, tagged ``step1``, ``step2`` …, holding the step's latency histogram in
  the V2 encoding (µs; highest trackable value = the run's timeout), for
  ``HistogramLogProcessor``, HdrHistogram plotters and any library's log reader.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from perflab.errors import UsageError
from perflab.units import significant

#: The formats ``--export`` writes, and the results kinds each takes.
EXPORTS = {
    "github-action-benchmark": ("run", "cmd", "http"),
    "hyperfine": ("cmd",),
    "hgrm": ("http",),
    "hlog": ("http",),
}
#: .hgrm values are printed in milliseconds (the histograms hold µs).
HGRM_SCALE = 1000.0


def check(fmt: str, kind: str) -> None:
    """Raise UsageError when ``fmt`` can't be written from a ``kind`` results file."""
    if fmt not in EXPORTS:
        raise UsageError(f"--export {fmt}: unknown format; choose one of {', '.join(EXPORTS)}")
    if kind not in EXPORTS[fmt]:
        raise UsageError(
            f"--export {fmt}: needs a {' or '.join(EXPORTS[fmt])} results file, not a {kind} file"
        )


# ----------------------------------------------------------------- github-action-benchmark


def github_action_benchmark(results: Any, figures: Any) -> list[dict[str, Any]]:
    """customSmallerIsBetter entries for ``results`` (a run, cmd or http Results) and its
    ``figures`` (:func:`perflab.analyze.results_figures.results_figures`).

    Returns:
        [{"name", "unit", "value", "range", "extra"}]: values in ns/op (run), ms (cmd)
        or ms (http latency); ``range`` the half-width of the 95% CI (or "" when none).
    """
    if results.kind == "run":
        return _gab_run(figures)
    if results.kind == "cmd":
        return _gab_cmd(figures)
    return _gab_http(results)


def _entry(name: str, unit: str, scale: float, s: Any, counted: str) -> dict[str, Any]:
    """One entry from a summary with ``median_s``, ``ci_low_s`` and ``ci_high_s`` (s),
    shown in ``unit`` (``scale`` of them per second); ``range`` is the CI's wider side."""
    value, low, high = s.median_s * scale, s.ci_low_s * scale, s.ci_high_s * scale
    ci = math.isfinite(low) and math.isfinite(high)
    half = max(high - value, value - low) if ci else math.nan
    extra = f"perflab: median of {counted}" + (
        f"; 95% CI {significant(low, 4)}–{significant(high, 4)} {unit}" if ci else "; no CI"
    )
    return {
        "name": name,
        "unit": unit,
        "value": float(f"{value:.6g}"),
        "range": f"± {significant(half)}" if ci else "",
        "extra": extra,
    }


def _gab_run(figures: Any) -> list[dict[str, Any]]:
    return [
        _entry(s.id, "ns/op", 1e9, s, f"{s.processes} process(es) × {s.samples} samples")
        for group in figures.grouped.values()
        for s in group
        if s.ok
    ]


def _gab_cmd(figures: Any) -> list[dict[str, Any]]:
    return [
        _entry(s.label, "ms", 1e3, s, f"{s.runs} runs")
        for s in figures.commands
        if math.isfinite(s.median_s)
    ]


def _gab_http(results: Any) -> list[dict[str, Any]]:
    bench = results.benchmarks[0]
    out = []
    for i, step in enumerate(bench.steps):
        load = (
            f"{step.offered_rate:g} req/s"
            if step.offered_rate is not None
            else f"{step.connections} connections"
        )
        for label, value in (("p50", step.latency.p50_us), ("p99", step.latency.p99_us)):
            if step.latency.count and math.isfinite(value):
                out.append(
                    {
                        "name": f"{bench.name} @ {load} latency {label}",
                        "unit": "ms",
                        "value": float(f"{value / 1e3:.6g}"),
                        "range": "",
                        "extra": f"perflab step {i + 1}: {step.latency.count} responses, "
                        f"{step.mode} loop, latency from the intended send time",
                    }
                )
    return out


# --------------------------------------------------------------------------- hgrm


def hgrm(dist: Any) -> str:
    """One histogram's percentile distribution
    (:class:`perflab.analyze.hdr.PercentileDistribution`, µs) as HdrHistogram's Java
    ``outputPercentileDistribution`` prints it, values in ms; the last comment line
    names the rank convention (ceil(p·N))."""
    value_fmt = f"{{:12.{dist.digits}f}}"
    lines = [f"{'Value':>12} {'Percentile':>14} {'TotalCount':>10} {'1/(1-Percentile)':>14}", ""]
    for value, level, count_to in dist.rows:
        tail = f" {1 / (1 - level):14.2f}" if level < 1 else ""
        lines.append(f"{value_fmt.format(value / HGRM_SCALE)} {level:2.12f} {count_to:10d}{tail}")
    lines += [
        f"#[Mean    = {value_fmt.format(dist.mean / HGRM_SCALE)}, StdDeviation   = "
        f"{value_fmt.format(dist.std / HGRM_SCALE)}]",
        f"#[Max     = {value_fmt.format(dist.max / HGRM_SCALE)}, Total count    = "
        f"{dist.total:12d}]",
        f"#[Buckets = {dist.buckets:12d}, SubBuckets     = {dist.sub_buckets:12d}]",
        "#[perflab: values in ms; the value at percentile p is that of rank ceil(p·N) "
        "(HdrHistogram Java/Rust; Python's hdrhistogram uses int(p·N + 0.5))]",
    ]
    return "\n".join(lines) + "\n"


def hlog(results: Any) -> str:
    """The interval log of an http Results: one ``Tag=stepN,start,length,max,payload`` line
    per step with a latency histogram. ``start`` is seconds from the run's start to the
    step's recorded window (the steps ran back to back: the earlier steps' wall times
    plus this step's warmup), ``length`` the recorded window (s), ``max`` the largest
    latency (ms), ``payload`` the step's V2-deflate base64 histogram (µs) as recorded."""
    import datetime as dt

    try:
        started = dt.datetime.fromisoformat(results.created)
    except (TypeError, ValueError):
        started = None
    lines = [
        "#[perflab http latency histograms, values in µs, one interval per step]",
        "#[Histogram log format version 1.3]",
    ]
    if started is not None:
        if started.tzinfo is None:
            started = started.replace(tzinfo=dt.UTC)
        lines.append(
            f"#[StartTime: {started.timestamp():.3f} (seconds since epoch), {started.isoformat()}]"
        )
    lines.append(
        '"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"'
    )
    offset = 0.0
    for i, step in enumerate(results.benchmarks[0].steps):
        wall = step.wall_s if math.isfinite(step.wall_s) else step.duration_s
        if step.latency.encoded:
            lines.append(
                f"Tag=step{i + 1},{offset + step.warmup_s:.3f},{step.elapsed_s:.3f},"
                f"{step.latency.max_us / HGRM_SCALE:.3f},{step.latency.encoded}"
            )
        offset += wall
    return "\n".join(lines) + "\n"


def hgrm_files(results: Any, out: str, distributions: list[Any]) -> list[tuple[str, str]]:
    """(path, text) of the ``.hgrm`` of each step of an http Results, from each step's
    :class:`perflab.analyze.hdr.PercentileDistribution`: ``out`` itself for one step,
    ``out`` with ``-stepN`` before its suffix for several."""
    path = Path(out)
    if len(results.benchmarks[0].steps) == 1:
        return [(out, hgrm(distributions[0]))]
    return [
        (str(path.with_name(f"{path.stem}-step{i + 1}{path.suffix or '.hgrm'}")), hgrm(dist))
        for i, dist in enumerate(distributions)
    ]


def _json_text(results: Any, figures: Any, fmt: str) -> str:
    """The github-action-benchmark or hyperfine JSON of ``results``, as text."""
    if fmt == "hyperfine":  # the same document as `perflab cmd --export-json`
        from perflab.report.cmd_table import hyperfine_json

        return hyperfine_json(results, figures.commands)
    return (
        json.dumps(
            github_action_benchmark(results, figures), indent=1, allow_nan=False, ensure_ascii=False
        )
        + "\n"
    )


def write(
    results: Any, figures: Any, fmt: str, out: str, distributions: list[Any] | None = None
) -> list[str]:
    """Write ``results`` as ``fmt`` to ``out`` (checked, atomic; perflab replaces only
    files it wrote), with its ``figures``
    (:func:`perflab.analyze.results_figures.results_figures`) and, for ``hgrm``, each
    step's percentile distribution (:func:`perflab.analyze.hdr.step_distributions`).
    Returns the paths written.

    Raises:
        UsageError: a format the results kind can't give, or an unusable destination.
        SaveError: the write failed (the rescue file is named).
    """
    from perflab import files

    check(fmt, results.kind)
    if fmt == "hgrm":
        outputs = hgrm_files(results, out, distributions or [])
    elif fmt == "hlog":
        outputs = [(out, hlog(results))]
    else:
        outputs = [(out, _json_text(results, figures, fmt))]
    written = []
    for path, text in outputs:
        destination = files.Destination.check(path, "--export", "export")
        files.save(destination, text.encode(), f"{fmt} export")
        written.append(str(destination))
    return written
