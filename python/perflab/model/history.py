"""The JSON document of ``perflab history --json``: the run list or the trends, and back;
and the data types it holds (a run as listed, a benchmark's summary row, its trend with
change points), which :mod:`perflab.history` computes and :mod:`perflab.report` renders.

``perflab history --json FILE`` writes what the command printed as one document
(``"tool": "perflab"``, ``"kind": "history"``, checked by ``schemas/history.schema.json``);
``perflab show FILE`` reads it back into the same objects (:class:`RunInfo`,
:class:`Trend`) and prints the same tables. JSON has no NaN: a missing figure is
``null`` in the file and NaN again once read. Schema ``history``
(``perflab/schemas/history.schema.json``), version :data:`SCHEMA_VERSION` (the
document's ``history_schema_version``).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from perflab.model.json_form import json_types
from perflab.model.summary_row import SummaryRow as SummaryRow  # re-exported

#: The document's schema (``perflab/schemas/history.schema.json``) and ``kind``.
SCHEMA = "history"
#: Version of the history document's layout.
SCHEMA_VERSION = 1


@dataclass(frozen=True)
class RunInfo:
    """A recorded run as listed by ``perflab history`` (no document, no rows).

    Attributes: as :class:`perflab.history.store.RunRecord`, plus ``id`` (the run id), ``benchmarks`` (count
    of distinct benchmarks), ``size_bytes`` (the results file's size) and ``tags``.
    """

    id: int
    kind: str
    created: str
    git_commit: str | None
    git_branch: str | None
    git_dirty: bool | None
    git_time: str | None
    fingerprint: str
    hostname: str | None
    command_line: list[str]
    results_path: str | None
    sha256: str
    size_bytes: int
    benchmarks: int
    tags: tuple[str, ...]


@dataclass(frozen=True)
class TrendPoint:
    """One run's figure for one benchmark: a point of its trend.

    Attributes:
        run: the run (see :class:`RunInfo`).
        row: the benchmark's summary row in that run.
    """

    run: RunInfo
    row: SummaryRow


@dataclass(frozen=True)
class ChangePoint:
    """A step in a benchmark's history.

    Attributes:
        index: position of the first point after the step (0-based, in the history's order).
        before / after: the medians of the segments on each side (the values' unit).
        ratio: after / before (a ratio of geometric means of the segments).
        p_value: Welch's two-sided p for the two segments' log values (uncorrected).
    """

    index: int
    before: float
    after: float
    ratio: float
    p_value: float


@dataclass(frozen=True)
class NewestRun:
    """The newest run, when it is far from the trend before it.

    Attributes:
        index: Its position in the values given.
        ratio: Its value ÷ the level of the runs before it (median of the last WINDOW).
        runs_needed: Further runs after it before a step there can be detected.
    """

    index: int
    ratio: float
    runs_needed: int

    def words(self, higher_is: str = "slower") -> str:
        """'the last run is 3.1× the trend (slower): a regression or an outlier; …'."""
        size = f"{self.ratio:.3g}×" if self.ratio >= 1 else f"{self.ratio:.2g}×"
        way = higher_is if self.ratio > 1 else ("faster" if higher_is == "slower" else "slower")
        return (
            f"the last run is {size} the trend before it ({way}): a regression or an "
            f"outlier; {self.runs_needed} more run{'s' if self.runs_needed != 1 else ''} "
            "at this commit or later will tell (left out of the change-point search)"
        )


@dataclass(frozen=True)
class LeftOut:
    """A run kept in the trend but left out of the change-point search.

    Attributes:
        index: its position in :attr:`Trend.points`.
        reason: plain words: "dirty working tree", "tagged busy", "outlier: 2.4× the runs
            around it", "newest run, far from the trend".
    """

    index: int
    reason: str


@dataclass(frozen=True)
class Change:
    """A change point with the runs around it.

    Attributes:
        point: the detected step (sizes; its index counts usable points only).
        index: the position in :attr:`Trend.points` of the first point after the step.
        last_before / first_after: the trend points on each side of the step; their
            commits bound the commit range that holds the cause.
    """

    point: ChangePoint
    index: int
    last_before: TrendPoint
    first_after: TrendPoint

    @property
    def commit_range(self) -> str:
        """ "a1b2c3d4..e5f6a7b8" (or run ids when there is no git)."""

        def name(p: TrendPoint) -> str:
            return p.run.git_commit[:8] if p.run.git_commit else f"#{p.run.id}"

        return f"{name(self.last_before)}..{name(self.first_after)}"


@dataclass
class Trend:
    """One benchmark's history.

    Attributes:
        bench / metric / unit: what is tracked ("time" in s, "p50" in s, "rate" in 1/s).
        points: every recorded figure, oldest first in commit order.
        changes: change points over the points that measured something.
        fingerprint_changes: indexes of points whose fingerprint differs from the
            previous point's (a change of machine, Python or perflab version).
        left_out: runs left out of the change-point search, with why.
        newest: the newest run when it is far from the trend before it (its ``index``
            a position in ``points``), else None.
        note: why no change point can be found ("" when the search could run).
    """

    bench: str
    metric: str
    unit: str
    points: list[TrendPoint]
    changes: list[Change] = field(default_factory=list)
    fingerprint_changes: list[int] = field(default_factory=list)
    left_out: list[LeftOut] = field(default_factory=list)
    newest: NewestRun | None = None
    note: str = ""


def _head(database: Any, perflab_version: str) -> dict[str, Any]:
    return {
        "tool": "perflab",
        "kind": SCHEMA,
        "history_schema_version": SCHEMA_VERSION,
        "perflab_version": perflab_version,
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "database": str(database),
    }


def runs_document(
    runs: Sequence[RunInfo], total: int, database: Any, perflab_version: str
) -> dict[str, Any]:
    """The run list as a document: ``runs`` (each :class:`RunInfo`'s fields) and
    ``total_runs`` (how many the database holds, the filters aside), below a header
    naming the ``database`` and the ``perflab_version`` that wrote it."""
    return {
        **_head(database, perflab_version),
        "total_runs": total,
        "runs": json_types(list(runs)),
    }


def trends_document(
    trends: Sequence[Trend], limit: int | None, database: Any, perflab_version: str
) -> dict[str, Any]:
    """The trends as a document: ``trends``, each with ``bench``, ``metric``, ``unit``,
    ``points`` (``run``: a :class:`RunInfo`, ``row``: its :class:`SummaryRow`), ``changes``
    (``point``: the :class:`ChangePoint`, ``index``, and the points on each side),
    ``fingerprint_changes``, ``left_out`` (``index``, ``reason``: runs left out of the
    change-point search), ``newest`` (``index``, ``ratio``, ``runs_needed``, or null) and
    ``note`` (why no change point can be found, or ""); ``limit``: the rows the tables
    show per trend (None: all); the header as :func:`runs_document`'s."""
    return {
        **_head(database, perflab_version),
        "limit": limit,
        "trends": json_types(list(trends)),
    }


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
