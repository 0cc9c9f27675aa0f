"""The JSON document of ``perflab history --json``: the run list or the trends, and back.

``perflab history --json FILE`` writes what the command printed as one document
(``"tool": "perflab"``, ``"kind": "history"``, checked by ``schemas/history.schema.json``);
``perflab show FILE`` reads it back into the same objects (:class:`RunInfo`,
:class:`Trend`) and prints the same tables. JSON has no NaN: a missing figure is
``null`` in the file and NaN again once read.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from typing import Any

from perflab.history.changepoints import ChangePoint
from perflab.history.outliers import NewestRun
from perflab.history.rows import SummaryRow
from perflab.history.store import RunInfo, TrendPoint
from perflab.history.trend import Change, LeftOut, Trend
from perflab.model import json_types

#: Version of the history document's layout.
HISTORY_SCHEMA_VERSION = 1


def _head(database: Any) -> dict[str, Any]:
    from perflab import __version__

    return {
        "tool": "perflab",
        "kind": "history",
        "history_schema_version": HISTORY_SCHEMA_VERSION,
        "perflab_version": __version__,
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "database": str(database),
    }


def runs_document(runs: Sequence[RunInfo], total: int, database: Any) -> dict[str, Any]:
    """The run list as a document: ``runs`` (each :class:`RunInfo`'s fields) and
    ``total_runs`` (how many the database holds, the filters aside)."""
    return {**_head(database), "total_runs": total, "runs": json_types(list(runs))}


def trends_document(trends: Sequence[Trend], limit: int | None, database: Any) -> dict[str, Any]:
    """The trends as a document: ``trends``, each with ``bench``, ``metric``, ``unit``,
    ``points`` (``run``: a :class:`RunInfo`, ``row``: its :class:`SummaryRow`), ``changes``
    (``point``: the :class:`ChangePoint`, ``index``, and the points on each side),
    ``fingerprint_changes``, ``left_out`` (``index``, ``reason``: runs left out of the
    change-point search), ``newest`` (``index``, ``ratio``, ``runs_needed``, or null) and
    ``note`` (why no change point can be found, or ""); ``limit``: the rows the tables
    show per trend (None: all)."""
    return {**_head(database), "limit": limit, "trends": json_types(list(trends))}


def _float(value: Any) -> float:
    return math.nan if value is None else float(value)


def _run(data: dict[str, Any]) -> RunInfo:
    return RunInfo(
        **{**data, "tags": tuple(data["tags"]), "command_line": list(data["command_line"])}
    )


def _point(data: dict[str, Any]) -> TrendPoint:
    row = data["row"]
    return TrendPoint(
        _run(data["run"]),
        SummaryRow(**{**row, **{k: _float(row[k]) for k in ("value", "ci_low", "ci_high")}}),
    )


def runs_from_document(document: dict[str, Any]) -> tuple[list[RunInfo], int, str]:
    """(runs, total_runs, database) of a run-list document."""
    return ([_run(r) for r in document["runs"]], document["total_runs"], document["database"])


def trends_from_document(document: dict[str, Any]) -> list[Trend]:
    """The trends of a trends document, as :func:`perflab.history.trend.build` made them."""
    out = []
    for t in document["trends"]:
        changes = [
            Change(
                ChangePoint(
                    **{
                        **c["point"],
                        **{
                            k: _float(c["point"][k])
                            for k in ("before", "after", "ratio", "p_value")
                        },
                    }
                ),
                c["index"],
                _point(c["last_before"]),
                _point(c["first_after"]),
            )
            for c in t["changes"]
        ]
        out.append(
            Trend(
                t["bench"],
                t["metric"],
                t["unit"],
                [_point(p) for p in t["points"]],
                changes,
                list(t["fingerprint_changes"]),
                [LeftOut(x["index"], x["reason"]) for x in t.get("left_out", [])],
                NewestRun(**t["newest"]) if t.get("newest") else None,
                t.get("note", ""),
            )
        )
    return out
