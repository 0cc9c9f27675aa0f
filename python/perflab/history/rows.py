"""One summary row per benchmark (and per HTTP step) of a run, for fast history queries.

The rows are derived from the summaries the measuring command computed (the
same ones written into the results file), or recomputed from the raw data for
``perflab history --import``. Times are seconds; an HTTP step gives one row per
latency percentile (p50, p99, seconds, no CI: the HdrHistogram's percentile
itself) and one for the achieved rate (1/s).
"""

from __future__ import annotations

import math
from typing import Any

from perflab.model import Results
from perflab.model.summary_row import SummaryRow

#: HTTP latency percentiles kept in history.
HTTP_PERCENTILES = ("p50", "p99")


def _number(value: Any) -> float:
    return (
        float(value)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        else math.nan
    )


def recompute(results: Results) -> dict[str, dict[str, Any]]:
    """The summaries a measuring command writes, recomputed from raw data (for import).

    Returns:
        Benchmark id → summary dict (``Summary.to_dict()`` for run,
        ``CommandSummary.to_dict()`` for cmd, ``{"steps": [StepSummary.to_dict()]}``
        for http).
    """
    if results.kind == "run":
        from perflab.analyze.run.ratios import summarize_benchmarks

        grouped = summarize_benchmarks(
            results.benchmarks, precision=results.settings.get("precision")
        )
        return {s.id: s.to_dict() for group in grouped.values() for s in group}
    if results.kind == "cmd":
        from perflab.analyze.cmd import summarize_results

        return {s.id: s.to_dict() for s in summarize_results(results)}
    from perflab.analyze.http import summarize_results as sweep

    return {results.benchmarks[0].id: {"steps": [s.to_dict() for s in sweep(results).steps]}}


#: the keys of a timed summary's figure and its CI
_TIME_KEYS = ("median_s", "ci_low_s", "ci_high_s")


def summary_rows(results: Results, summaries: dict[str, dict[str, Any]]) -> list[SummaryRow]:
    """The rows of one run.

    Args:
        results: the run's raw data (for ids and failures).
        summaries: benchmark id → summary dict, as written into the results file
            (see :func:`recompute`).

    Returns:
        One row per benchmark (python, command) or per HTTP step and metric, in file order;
        a benchmark without a summary gives a failed row with NaN values.
    """
    rows: list[SummaryRow] = []
    for bench in results.benchmarks:
        summary = summaries.get(bench.id) or {}
        if bench.kind == "http":
            for step in summary.get("steps") or []:
                name = f"{bench.id} {step.get('label', '')}".strip()
                latency = step.get("latency_s") or {}
                count = int(
                    _number(step.get("completed"))
                    if math.isfinite(_number(step.get("completed")))
                    else 0
                )
                rows += [
                    SummaryRow(
                        name, p, "s", _number(latency.get(p)), units=count, failed=bench.failed
                    )
                    for p in HTTP_PERCENTILES
                ]
                rows.append(
                    SummaryRow(
                        name,
                        "rate",
                        "1/s",
                        _number(step.get("achieved_rate")),
                        units=count,
                        failed=bench.failed,
                    )
                )
            continue
        counted = "ir_per_op" in summary  # --count instructions: the count is the figure
        keys = ("ir_per_op", "band_low", "band_high") if counted else _TIME_KEYS
        units = (
            len(summary.get("process_ir_per_op") or [])
            if counted
            else summary.get("processes", summary.get("runs", 0))
        )
        rows.append(
            SummaryRow(
                bench.id,
                "instructions" if counted else "time",
                "Ir" if counted else "s",
                *(_number(summary.get(k)) for k in keys),
                int(units) if isinstance(units, int) else 0,
                bench.failed or bool(summary.get("error")),
            )
        )
    return rows
