"""What a comparison holds: one row per compared metric and the suite around them, and
the ``perflab compare --json`` document they are saved as.

The data types of :mod:`perflab.analyze.compare.suite` (which computes them) and of
:mod:`perflab.report.compare_table` (which renders them), kept apart so both can import
them without importing each other. The document (schema ``compare``,
``perflab/schemas/compare.schema.json``, version :data:`FORMAT_VERSION`) is written by
:meth:`SuiteComparison.to_dict` and read back by :meth:`SuiteComparison.from_dict`.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from perflab import redact
from perflab.model.estimate import Estimate

FASTER, SLOWER, SAME, INCONCLUSIVE, FAILED = "faster", "slower", "same", "inconclusive", "failed"
#: Every verdict, in the order reports count them.
VERDICTS = (SLOWER, FASTER, INCONCLUSIVE, SAME, FAILED)
#: A memory row's verdicts: B uses more or less memory than A beyond the noise threshold.
MORE, LESS = "more", "less"
#: Every verdict of a memory row, in the order reports count them.
MEMORY_VERDICTS = (MORE, LESS, INCONCLUSIVE, SAME, FAILED)
#: The ``--fail-on`` word of memory rows: trips on every memory row whose verdict is "more".
MEMORY = "memory"
#: The metrics of memory rows (:mod:`perflab.analyze.compare.memory`), each with its unit.
MEMORY_METRICS = {
    "allocated/op": "B",
    "allocs/op": "blocks",
    "alloc peak/op": "B",
    "RSS peak": "B",
    "RSS growth/1k ops": "B",
    "heap growth/1k ops": "B",
    "max RSS": "B",
    "tree RSS peak": "B",
    "server RSS peak": "B",
}

#: The document's schema (``perflab/schemas/compare.schema.json``) and ``kind``.
SCHEMA = "compare"
#: Version of the ``--json`` document (its ``format_version``); bump when a field changes
#: meaning.
FORMAT_VERSION = 1
#: Default noise threshold t: a ratio CI wholly within 1 ± t is "same".
DEFAULT_THRESHOLD = 0.02
#: Latency percentiles compared by default.
DEFAULT_PERCENTILES = (50.0, 90.0, 99.0, 99.9)
#: The metric of the rows comparing CPU time ÷ machine-speed reference
#: (:mod:`perflab.analyze.compare.speed`): shown, never primary, never read by --fail-on.
SPEED_NORMALIZED = "cpu_vs_reference"


@dataclass
class Side:
    """One file's figures for one compared metric.

    Attributes:
        estimate: the location estimate with its CI: seconds (times, latencies) or 1/s
            (rates); the CI bounds are nan when there is none (an achieved rate).
        units: independent units behind it: processes, runs or requests.
        samples: timed samples (python), runs (command) or requests (http).
    """

    estimate: Estimate
    units: int = 0
    samples: int = 0

    @property
    def value(self) -> float:
        """The location estimate, s or 1/s (``estimate.value``)."""
        return self.estimate.value


@dataclass
class Row:
    """The comparison of one metric of one benchmark (or HTTP step) in A and B.

    Attributes:
        id: benchmark id, plus the step and metric for HTTP rows.
        kind: "python", "command" or "http".
        metric: "time", "rate" or a latency percentile such as "p99".
        unit: "s" or "1/s".
        higher_is_better: True for rates (a ratio above 1 is then "faster").
        a / b: each side's figures, None when that side has no data.
        ratio: B/A with its expanded bootstrap CI, None when not computable.
        p_value / q_value: Mann–Whitney U p and its Benjamini–Hochberg q.
        test_key: rows with one key share one test (one p in the correction).
        verdict: one of :data:`VERDICTS`.
        primary: True when the row enters the geometric mean.
        notes: plain-words caveats.
        drift: side ("A"/"B") → relative change within that side's run, where it
            exceeded the threshold beyond noise (see :func:`within_run_drift`).
        log_replicates: bootstrap replicates of log(B/A), shape (B,), or None.
        pairs: the pairs of samples ``ratio`` came from when A and B were measured
            together (a paired ratio, docs/compare.md); 0 for two separate runs.
        difference: B − A in ``unit`` with its CI (memory rows: what the verdict of a
            growth row is read from, and the absolute floor of the others), or None.
    """

    id: str
    kind: str
    metric: str
    unit: str
    higher_is_better: bool = False
    a: Side | None = None
    b: Side | None = None
    ratio: Estimate | None = None
    p_value: float = math.nan
    q_value: float = math.nan
    test_key: str = ""
    verdict: str = INCONCLUSIVE
    primary: bool = True
    notes: list[str] = field(default_factory=list)
    drift: dict[str, float] = field(default_factory=dict)
    log_replicates: np.ndarray | None = field(default=None, repr=False)
    pairs: int = 0
    difference: Estimate | None = None

    @property
    def is_memory(self) -> bool:
        """True for a memory row (a metric of :data:`MEMORY_METRICS`): its verdict is one
        of :data:`MEMORY_VERDICTS`, it never enters the geometric mean or the time counts,
        and ``--fail-on memory`` reads it."""
        return self.metric in MEMORY_METRICS

    def to_dict(self) -> dict[str, Any]:
        """The row as JSON types (values in s or 1/s as ``unit`` says; NaN kept for the
        caller's JSON step, which writes null)."""
        return {
            "id": self.id,
            "kind": self.kind,
            "metric": self.metric,
            "unit": self.unit,
            "higher_is_better": self.higher_is_better,
            "a": _side_dict(self.a),
            "b": _side_dict(self.b),
            "ratio": _optional_estimate(self.ratio),
            "p_value": self.p_value,
            "q_value": self.q_value,
            "verdict": self.verdict,
            "in_geomean": self.primary,
            "drift": dict(self.drift),
            "notes": list(self.notes),
            "pairs": self.pairs,
            "difference": _optional_estimate(self.difference),
        }


@dataclass
class SuiteComparison:
    """The whole comparison of B against A.

    Attributes:
        rows: one per compared metric, in A's order.
        only_in_a / only_in_b: ids present in one file only (never dropped silently).
        geomean: geometric mean of the primary rows' B/A with its CI, or None.
        geomean_verdict: the verdict of that CI against the threshold.
        geomean_over: how many rows the geometric mean is over.
        counts: verdict → number of rows (the time rows: memory rows are counted apart).
        memory_counts: memory verdict → number of memory rows (empty without any).
        environment: plain-words differences between the two fingerprints.
        warnings: other plain-words warnings about the comparison as a whole.
        threshold / confidence: the noise threshold t and the CI level.
        cost: "A"/"B" → {"benchmarks", "processes", "samples"} spent on the verdicts.
        machine_speed: B/A of the two runs' machine-speed references with its CI, when
            it lies beyond the noise threshold (None otherwise, or without references).
        machine_words: that change in words ("the machine ran 30% slower during B").
        held: id → the slower/faster verdict a row would have had, made inconclusive
            because the machine's speed moved between the runs.
        profiles: benchmarks profiled on both sides (``--profile``): each one's
            functions whose share changed most and its differential flame tree, as
            :func:`perflab.analyze.profile.profile_changes` writes them; empty otherwise.
    """

    rows: list[Row]
    only_in_a: list[str] = field(default_factory=list)
    only_in_b: list[str] = field(default_factory=list)
    geomean: Estimate | None = None
    geomean_verdict: str = INCONCLUSIVE
    geomean_over: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    environment: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    threshold: float = DEFAULT_THRESHOLD
    confidence: float = 0.95
    cost: dict[str, dict[str, int]] = field(default_factory=dict)
    machine_speed: Estimate | None = None
    machine_words: str = ""
    held: dict[str, str] = field(default_factory=dict)
    memory_counts: dict[str, int] = field(default_factory=dict)
    profiles: list[dict[str, Any]] = field(default_factory=list)

    def tripped(self, fail_on: Sequence[str]) -> list[str]:
        """Ids whose verdict is in ``fail_on`` ("missing" matches ids only in A); the
        speed-normalized rows are for reading, the gate reads the seconds. A held row's
        verdict is inconclusive: it trips "inconclusive" only. Memory rows trip on
        :data:`MEMORY` only, when B uses more (named "ID (METRIC)"), never on a time
        verdict word."""
        hits = [
            r.id
            for r in self.rows
            if not r.is_memory and r.verdict in fail_on and r.metric != SPEED_NORMALIZED
        ]
        if MEMORY in fail_on:
            hits += [f"{r.id} ({r.metric})" for r in self.rows if r.is_memory and r.verdict == MORE]
        return hits + (list(self.only_in_a) if "missing" in fail_on else [])

    def not_applied(self, fail_on: Sequence[str]) -> list[str]:
        """Held ids whose withheld verdict is in ``fail_on``: the gate would have tripped
        on them had the machine's speed not moved between the runs."""
        return [key for key, withheld in self.held.items() if withheld in fail_on]

    def held_reason(self, fail_on: Sequence[str]) -> str:
        """Why the gate was not applied to some benchmarks, in words for the ``gate:``
        line ("" when it was applied to all)."""
        ids = self.not_applied(fail_on)
        if not ids:
            return ""
        shown = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
        return (
            f"not applied to {len(ids)} benchmark(s) ({shown}): inconclusive, "
            f"{self.machine_words} than during A; measure paired with --compare-to REF"
        )

    def to_dict(
        self, name_a: str, name_b: str, fail_on: list[str], tripped: list[str]
    ) -> dict[str, Any]:
        """The ``--json`` document: every row, the suite summary, warnings and the gate.

        NaN/inf are written as null by the caller's JSON step
        (:func:`perflab.model.json_document`). ``command_line`` is this process's argv
        (the ``perflab compare`` or ``perflab run --compare-to`` that judged).
        """
        import datetime as dt

        return {
            "tool": "perflab",
            "kind": SCHEMA,
            "format_version": FORMAT_VERSION,
            "command_line": ["perflab", *redact.argv(sys.argv[1:])],
            "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "a": name_a,
            "b": name_b,
            "threshold": self.threshold,
            "confidence": self.confidence,
            "rows": [r.to_dict() for r in self.rows],
            "counts": self.counts,
            "geomean": _optional_estimate(self.geomean),
            "geomean_verdict": self.geomean_verdict,
            "geomean_over": self.geomean_over,
            "only_in_a": self.only_in_a,
            "only_in_b": self.only_in_b,
            "environment": self.environment,
            "warnings": self.warnings,
            "cost": self.cost,
            "machine_speed": _optional_estimate(self.machine_speed),
            "machine_words": self.machine_words,
            "held": dict(self.held),
            "memory_counts": dict(self.memory_counts),
            "gate": {"fail_on": fail_on, "tripped": tripped, "held": self.not_applied(fail_on)},
            **({"profiles": self.profiles} if self.profiles else {}),
        }

    @classmethod
    def from_dict(cls, document: dict[str, Any]) -> SuiteComparison:
        """The comparison a ``perflab compare --json`` document holds, rebuilt for its
        tables (``perflab show``); the inverse of :meth:`to_dict` (null → NaN).

        Raises:
            KeyError / TypeError / ValueError: a document that does not have the shape the
                compare schema describes (the caller validates it first).
        """

        def number(value: Any) -> float:
            return math.nan if value is None else float(value)

        def figures(d: dict[str, Any]) -> Estimate:
            return Estimate(
                number(d.get("value")),
                number(d.get("ci_low")),
                number(d.get("ci_high")),
                number(document.get("confidence", 0.95)),
            )

        def estimate(d: dict[str, Any] | None) -> Estimate | None:
            return None if d is None else figures(d)

        def side(d: dict[str, Any] | None) -> Side | None:
            return (
                None
                if d is None
                else Side(figures(d), int(d.get("units", 0)), int(d.get("samples", 0)))
            )

        rows = [
            Row(
                r["id"],
                r["kind"],
                r["metric"],
                r["unit"],
                bool(r.get("higher_is_better")),
                side(r.get("a")),
                side(r.get("b")),
                estimate(r.get("ratio")),
                number(r.get("p_value")),
                number(r.get("q_value")),
                verdict=r["verdict"],
                primary=bool(r.get("in_geomean", True)),
                notes=list(r.get("notes", [])),
                drift=dict(r.get("drift", {})),
                pairs=int(r.get("pairs", 0)),
                difference=estimate(r.get("difference")),
            )
            for r in document["rows"]
        ]
        over = document.get("geomean_over", sum(r.primary and r.ratio is not None for r in rows))
        return cls(
            rows,
            list(document.get("only_in_a", [])),
            list(document.get("only_in_b", [])),
            estimate(document.get("geomean")),
            document.get("geomean_verdict", "inconclusive"),
            int(over),
            dict(document["counts"]),
            list(document.get("environment", [])),
            list(document.get("warnings", [])),
            float(document["threshold"]),
            number(document.get("confidence", 0.95)),
            dict(document.get("cost", {})),
            estimate(document.get("machine_speed")),
            str(document.get("machine_words", "")),
            dict(document.get("held", {})),
            {k: int(v) for k, v in document.get("memory_counts", {}).items()},
            [p for p in document.get("profiles", []) if isinstance(p, dict)],
        )


def _side_dict(side: Side | None) -> dict[str, Any] | None:
    if side is None:
        return None
    return {**_estimate_dict(side.estimate), "units": side.units, "samples": side.samples}


def _estimate_dict(est: Estimate) -> dict[str, float]:
    return {"value": est.value, "ci_low": est.ci_low, "ci_high": est.ci_high}


def _optional_estimate(est: Estimate | None) -> dict[str, float] | None:
    return None if est is None else _estimate_dict(est)
