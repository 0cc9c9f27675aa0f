"""The responses of an HTTP sweep by status code and error kind, one column per step, as
oha prints its status code and error distributions: errors named as errors, beside the
verdicts that judge saturation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from perflab.report.table import KEY, Table


def status_table(steps: Sequence[Any]) -> list[Table]:
    """The table, or none when every completed request succeeded.

    Args:
        steps: the sweep's step summaries (:class:`perflab.analyze.http.StepSummary`:
            ``label``, ``completed``, ``error_fraction``, ``failed_statuses`` by status
            code, ``errors`` by kind).

    Returns:
        ``[]`` or one table: a row "ok" (successful responses), one per failing status
        code ("status 503") and one per error kind ("read timeout"), counts per step; the
        first column and the last step always show, the earlier steps fold first.
    """
    if not any(s.failed_statuses or s.errors for s in steps):
        return []
    codes = sorted({c for s in steps for c in s.failed_statuses})
    kinds = sorted({k for s in steps for k in s.errors})
    rows = [["ok"] + [f"{round(s.completed * (1 - s.error_fraction)):,}" for s in steps]]
    rows += [[f"status {c}"] + [f"{s.failed_statuses.get(c, 0):,}" for s in steps] for c in codes]
    rows += [[k.replace("_", " ")] + [f"{s.errors.get(k, 0):,}" for s in steps] for k in kinds]
    columns = ["responses"] + [s.label for s in steps]
    return [
        Table(
            "responses by status and error",
            columns,
            rows,
            ["l"] + ["r"] * len(steps),
            fold=[KEY] + list(range(len(steps) - 1, 0, -1)) + [KEY],
        )
    ]
