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

import base64
import json
import math
import struct
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from perflab.errors import UsageError

#: The formats ``--export`` writes, and the results kinds each takes.
EXPORTS = {"github-action-benchmark": ("run", "cmd", "http"), "hyperfine": ("cmd",),
           "hgrm": ("http",), "hlog": ("http",)}
#: Percentile ticks per half distance to 100% (HdrHistogram's default, wrk2's too).
TICKS_PER_HALF_DISTANCE = 5
#: .hgrm values are printed in milliseconds (the histograms hold µs).
HGRM_SCALE = 1000.0


def check(fmt: str, kind: str) -> None:
    """Raise UsageError when ``fmt`` can't be written from a ``kind`` results file."""
    if fmt not in EXPORTS:
        raise UsageError(f"--export {fmt}: unknown format; choose one of {', '.join(EXPORTS)}")
    if kind not in EXPORTS[fmt]:
        raise UsageError(f"--export {fmt}: needs a {' or '.join(EXPORTS[fmt])} results file, "
                         f"not a {kind} file")


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
    extra = f"perflab: median of {counted}" + (f"; 95% CI {low:.4g}–{high:.4g} {unit}"
                                              if ci else "; no CI")
    return {"name": name, "unit": unit, "value": float(f"{value:.6g}"),
            "range": f"± {half:.3g}" if ci else "", "extra": extra}


def _gab_run(figures: Any) -> list[dict[str, Any]]:
    return [_entry(s.id, "ns/op", 1e9, s, f"{s.processes} process(es) × {s.samples} samples")
            for group in figures.grouped.values() for s in group if s.ok]


def _gab_cmd(figures: Any) -> list[dict[str, Any]]:
    return [_entry(s.label, "ms", 1e3, s, f"{s.runs} runs")
            for s in figures.commands if math.isfinite(s.median_s)]


def _gab_http(results: Any) -> list[dict[str, Any]]:
    bench = results.benchmarks[0]
    out = []
    for i, step in enumerate(bench.steps):
        load = f"{step.offered_rate:g} req/s" if step.offered_rate is not None else \
            f"{step.connections} connections"
        for label, value in (("p50", step.latency.p50_us), ("p99", step.latency.p99_us)):
            if step.latency.count and math.isfinite(value):
                out.append({"name": f"{bench.name} @ {load} latency {label}", "unit": "ms",
                            "value": float(f"{value / 1e3:.6g}"), "range": "",
                            "extra": f"perflab step {i + 1}: {step.latency.count} responses, "
                                     f"{step.mode} loop, latency from the intended send time"})
    return out


# --------------------------------------------------------------------------- hgrm


def _geometry(encoded: str) -> tuple[int, int, int]:
    """(significant digits, bucket count, sub-bucket count) of a V2-deflate histogram,
    from its header (lowest discernible value 1, as perflab records)."""
    raw = base64.b64decode(encoded)
    inner = zlib.decompressobj().decompress(raw[8:], 32) if len(raw) > 8 else b""  # header
    digits, _low, high = struct.unpack(">iqq", inner[12:32]) if len(inner) >= 32 \
        else (3, 1, 2)
    magnitude = math.ceil(math.log2(2 * 10 ** digits))
    sub_buckets = 2 ** (max(magnitude, 1))
    buckets, untrackable = 1, sub_buckets
    while untrackable <= high:
        untrackable <<= 1
        buckets += 1
    return digits, buckets, sub_buckets


def hgrm(encoded: str) -> str:
    """The percentile distribution of one V2 histogram (µs) as HdrHistogram's Java
    ``outputPercentileDistribution`` prints it with 5 ticks per half distance, values in
    ms. Percentile levels are those HdrHistogram iterates; the value at each is that of
    rank ceil(level·N) (perflab's and the Java/Rust libraries' convention; see the last
    comment line).

    Raises:
        ValueError: an encoding the native decoder refuses.
    """
    from perflab.analyze.hdr import decode_histogram, decode_summary

    hist = decode_histogram(encoded)
    digits, buckets, sub_buckets = _geometry(encoded) if encoded else (3, 1, 2048)
    lines = [f"{'Value':>12} {'Percentile':>14} {'TotalCount':>10} {'1/(1-Percentile)':>14}",
             ""]
    total = hist.total
    cumulative = np.cumsum(hist.counts)
    level, value_fmt = 0.0, f"{{:12.{digits}f}}"
    for value, count_to in zip(hist.values, cumulative):
        while level < 100 and 100.0 * count_to / total >= level:
            lines.append(f"{value_fmt.format(value / HGRM_SCALE)} {level / 100:2.12f} "
                         f"{count_to:10d} {1 / (1 - level / 100):14.2f}")
            ticks = TICKS_PER_HALF_DISTANCE * 2 ** (int(math.log2(100 / (100 - level))) + 1)
            level += 100 / ticks
            if count_to == total:  # the last value: only the 100% line follows
                break
    if total:
        lines.append(f"{value_fmt.format(hist.values[-1] / HGRM_SCALE)} {1.0:2.12f} "
                     f"{total:10d}")
    summary = decode_summary(encoded) if encoded else {"mean_us": 0.0, "max_us": 0}
    mean = summary["mean_us"] if total else 0.0
    std = float(np.sqrt(np.sum(hist.counts * (hist.values - mean) ** 2) / total)) \
        if total else 0.0
    lines += [f"#[Mean    = {value_fmt.format(mean / HGRM_SCALE)}, StdDeviation   = "
              f"{value_fmt.format(std / HGRM_SCALE)}]",
              f"#[Max     = {value_fmt.format(summary['max_us'] / HGRM_SCALE)}, Total count    = "
              f"{total:12d}]",
              f"#[Buckets = {buckets:12d}, SubBuckets     = {sub_buckets:12d}]",
              "#[perflab: values in ms; the value at percentile p is that of rank ceil(p·N) "
              "(HdrHistogram Java/Rust; Python's hdrhistogram uses int(p·N + 0.5))]"]
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
    lines = ["#[perflab http latency histograms, values in µs, one interval per step]",
             "#[Histogram log format version 1.3]"]
    if started is not None:
        if started.tzinfo is None:
            started = started.replace(tzinfo=dt.timezone.utc)
        lines.append(f"#[StartTime: {started.timestamp():.3f} (seconds since epoch), "
                     f"{started.isoformat()}]")
    lines.append('"StartTimestamp","Interval_Length","Interval_Max",'
                 '"Interval_Compressed_Histogram"')
    offset = 0.0
    for i, step in enumerate(results.benchmarks[0].steps):
        wall = step.wall_s if math.isfinite(step.wall_s) else step.duration_s
        if step.latency.encoded:
            lines.append(f"Tag=step{i + 1},{offset + step.warmup_s:.3f},{step.elapsed_s:.3f},"
                         f"{step.latency.max_us / HGRM_SCALE:.3f},{step.latency.encoded}")
        offset += wall
    return "\n".join(lines) + "\n"


def hgrm_files(results: Any, out: str) -> list[tuple[str, str]]:
    """(path, text) of the ``.hgrm`` of each step's latency histogram of an http Results:
    ``out`` itself for one step, ``out`` with ``-stepN`` before its suffix for several."""
    steps = results.benchmarks[0].steps
    path = Path(out)
    if len(steps) == 1:
        return [(out, hgrm(steps[0].latency.encoded))]
    return [(str(path.with_name(f"{path.stem}-step{i + 1}{path.suffix or '.hgrm'}")),
             hgrm(step.latency.encoded)) for i, step in enumerate(steps)]


def _json_text(results: Any, figures: Any, fmt: str) -> str:
    """The github-action-benchmark or hyperfine JSON of ``results``, as text."""
    if fmt == "hyperfine":  # the same document as `perflab cmd --export-json`
        from perflab.report.cmd_table import hyperfine_json

        return hyperfine_json(results, figures.commands)
    return json.dumps(github_action_benchmark(results, figures), indent=1, allow_nan=False,
                      ensure_ascii=False) + "\n"


def write(results: Any, figures: Any, fmt: str, out: str) -> list[str]:
    """Write ``results`` as ``fmt`` to ``out`` (checked, atomic; perflab replaces only
    files it wrote), with its ``figures``
    (:func:`perflab.analyze.results_figures.results_figures`). Returns the paths written.

    Raises:
        UsageError: a format the results kind can't give, or an unusable destination.
        SaveError: the write failed (the rescue file is named).
    """
    from perflab import files

    check(fmt, results.kind)
    if fmt == "hgrm":
        outputs = hgrm_files(results, out)
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
