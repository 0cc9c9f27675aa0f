"""Comparison reports: tables (console, Markdown), CSV records and the JSON document.

Cells are built once from a :class:`perflab.analyze.compare.SuiteComparison`
into neutral :class:`perflab.report.table.Table` objects, so the terminal and
the pull-request Markdown say the same thing.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

from perflab.analyze.compare import Row, Side, SuiteComparison
from perflab.analyze.decisions import VERDICTS
from perflab.analyze.stats import Estimate
from perflab.report.table import KEY, NOTE, Table
from perflab.units import format_rate, format_ratio, format_time

#: Version of the ``--json`` document; bump when a field changes meaning.
JSON_FORMAT_VERSION = 1


def format_p(p: float) -> str:
    """A p- or q-value in 2 significant digits, "<0.001" below, "–" when not computed."""
    if p is None or not math.isfinite(p):
        return "–"
    return "<0.001" if p < 0.001 else f"{p:.2g}"


def _value(side: Side | None, unit: str) -> str:
    if side is None or not math.isfinite(side.value):
        return "–"
    text = format_rate(side.value) if unit == "1/s" else format_time(side.value)
    if math.isfinite(side.low) and math.isfinite(side.high) and side.value:
        text += f" ± {(side.high - side.low) / 2 / abs(side.value):.1%}"
    return text


def _ratio(estimate: Estimate | None) -> str:
    if estimate is None:
        return "–"
    high = estimate.high if math.isfinite(estimate.high) else None
    return format_ratio(estimate.value, estimate.low if high else None, high)


def _units(row: Row) -> str:
    if row.a is None or row.b is None:
        return "–"
    noun = {"python": "proc", "command": "runs", "http": "req"}.get(row.kind, "")
    return f"{row.a.units:,}/{row.b.units:,} {noun}".strip()


def _row_cells(row: Row) -> list[str]:
    return [row.id, _value(row.a, row.unit), _value(row.b, row.unit), _ratio(row.ratio),
            format_p(row.p_value), format_p(row.q_value), row.verdict, _units(row),
            "; ".join(row.notes)]


def summary_table(suite: SuiteComparison, name_a: str, name_b: str) -> Table:
    """The suite's summary: verdict counts, geometric mean, missing benchmarks, cost.

    Footnotes hold the environment and suite-wide warnings in plain words.
    """
    counts = ", ".join(f"{suite.counts.get(v, 0)} {v}" for v in VERDICTS)
    rows = [["verdicts", counts],
            ["geometric mean B/A", _geomean_cell(suite)],
            ["significant after Benjamini–Hochberg (q < 0.05)",
             str(sum(r.q_value < 0.05 for r in suite.rows if math.isfinite(r.q_value)))],
            [f"only in A ({name_a})", ", ".join(suite.only_in_a) or "none"],
            [f"only in B ({name_b})", ", ".join(suite.only_in_b) or "none"]]
    rows += [[f"cost of {side}", _cost_cell(cost)] for side, cost in suite.cost.items()]
    title = (f"compare: B = {name_b} against A = {name_a} "
             f"(noise threshold ±{suite.threshold:.1%}, {suite.confidence:.0%} CI)")
    return Table(title, ["what", "result"], rows, ["l", "l"],
                 footnotes=[*suite.environment, *suite.warnings], fold=[KEY, NOTE])


def geomean_count(suite: SuiteComparison) -> int:
    """How many rows the geometric mean B/A pools (primary rows with bootstrap replicates;
    for a suite read back from a document, the count the document recorded)."""
    live = sum(r.primary and r.log_replicates is not None for r in suite.rows)
    return live or suite.geomean_count


def _geomean_cell(suite: SuiteComparison) -> str:
    if suite.geomean is None:
        return "–"
    return f"{_ratio(suite.geomean)} over {geomean_count(suite)}: {suite.geomean_verdict}"


def _cost_cell(cost: dict[str, int]) -> str:
    parts = [f"{cost['benchmarks']:,} benchmarks"]
    parts += [f"{cost[k]:,} {k}" for k in ("processes", "samples", "requests") if cost.get(k)]
    return ", ".join(parts)


def rows_table(suite: SuiteComparison) -> Table:
    """One row per compared metric: A, B (value ± CI), B/A (CI), p, q, verdict, units, notes.

    On a narrow terminal the columns fold away in this order: units A/B, p, q, B, A;
    benchmark, B/A, verdict and notes always show.
    """
    columns = ["benchmark", "A ± CI", "B ± CI", "B/A (95% CI)", "p", "q (BH)", "verdict",
               "units A/B", "notes"]
    table = Table("benchmarks", columns, align=["l", "r", "r", "r", "r", "r", "l", "r", "l"],
                  fold=[KEY, 5, 4, KEY, 2, 3, KEY, 1, NOTE])
    table.rows = [_row_cells(r) for r in suite.rows]
    return table


def comparison_tables(suite: SuiteComparison, name_a: str = "A", name_b: str = "B"
                      ) -> list[Table]:
    """The summary table then the per-benchmark table."""
    return [summary_table(suite, name_a, name_b), rows_table(suite)]


def _side_dict(side: Side | None) -> dict[str, Any] | None:
    if side is None:
        return None
    return {"value": side.value, "ci_low": side.low, "ci_high": side.high,
            "units": side.units, "samples": side.samples}


def _estimate_dict(est: Estimate | None) -> dict[str, float] | None:
    return None if est is None else {"value": est.value, "ci_low": est.low, "ci_high": est.high}


def row_record(row: Row) -> dict[str, Any]:
    """One row as JSON types (values in s or 1/s as ``unit`` says; NaN kept for the caller)."""
    return {"id": row.id, "kind": row.kind, "metric": row.metric, "unit": row.unit,
            "higher_is_better": row.higher_is_better, "a": _side_dict(row.a),
            "b": _side_dict(row.b), "ratio": _estimate_dict(row.ratio), "p_value": row.p_value,
            "q_value": row.q_value, "verdict": row.verdict, "in_geomean": row.primary,
            "drift": dict(row.drift), "notes": list(row.notes)}


def comparison_document(suite: SuiteComparison, name_a: str, name_b: str,
                        fail_on: list[str], tripped: list[str]) -> dict[str, Any]:
    """The ``--json`` document: every row, the suite summary, warnings and the gate.

    NaN/inf are written as null by the caller's JSON step. ``command_line`` is this
    process's argv (the ``perflab compare`` or ``perflab run --compare-to`` that judged).
    """
    import datetime as dt

    return {"tool": "perflab", "kind": "compare", "format_version": JSON_FORMAT_VERSION,
            "command_line": ["perflab", *sys.argv[1:]],
            "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "a": name_a, "b": name_b, "threshold": suite.threshold,
            "confidence": suite.confidence, "rows": [row_record(r) for r in suite.rows],
            "counts": suite.counts, "geomean": _estimate_dict(suite.geomean),
            "geomean_count": geomean_count(suite), "geomean_verdict": suite.geomean_verdict,
            "only_in_a": suite.only_in_a, "only_in_b": suite.only_in_b, "environment": suite.environment,
            "warnings": suite.warnings, "cost": suite.cost,
            "gate": {"fail_on": fail_on, "tripped": tripped}}


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        else math.nan


def _side_from(d: Any) -> Side | None:
    if not isinstance(d, dict):
        return None
    return Side(_number(d.get("value")), _number(d.get("ci_low")), _number(d.get("ci_high")),
                int(_number(d.get("units")) if math.isfinite(_number(d.get("units"))) else 0),
                int(_number(d.get("samples")) if math.isfinite(_number(d.get("samples"))) else 0))


def _estimate_from(d: Any) -> Estimate | None:
    if not isinstance(d, dict):
        return None
    return Estimate(_number(d.get("value")), _number(d.get("ci_low")), _number(d.get("ci_high")))


def _texts(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def suite_from_document(document: dict[str, Any]) -> tuple[SuiteComparison, str, str]:
    """A comparison read back from its ``--json`` document (the inverse of
    :func:`comparison_document`), so that it renders the tables the terminal showed.

    Args:
        document: the parsed JSON of ``perflab compare --json`` (checked against
            compare.schema.json by the caller); null numbers become NaN.

    Returns:
        (suite, name of A, name of B); rows carry no bootstrap replicates.
    """
    rows = []
    for r in document.get("rows") or []:
        if not isinstance(r, dict):
            continue
        drift = r.get("drift") if isinstance(r.get("drift"), dict) else {}
        rows.append(Row(str(r.get("id", "")), str(r.get("kind", "")), str(r.get("metric", "")),
                        str(r.get("unit", "s")), bool(r.get("higher_is_better")),
                        _side_from(r.get("a")), _side_from(r.get("b")),
                        _estimate_from(r.get("ratio")), _number(r.get("p_value")),
                        _number(r.get("q_value")), verdict=str(r.get("verdict", "")),
                        primary=bool(r.get("in_geomean", True)), notes=_texts(r.get("notes")),
                        drift={str(k): _number(v) for k, v in drift.items()}))
    counts = document.get("counts") if isinstance(document.get("counts"), dict) else {}
    cost = document.get("cost") if isinstance(document.get("cost"), dict) else {}
    suite = SuiteComparison(
        rows, _texts(document.get("only_in_a")), _texts(document.get("only_in_b")),
        _estimate_from(document.get("geomean")), str(document.get("geomean_verdict", "")),
        {str(k): int(_number(v)) for k, v in counts.items() if math.isfinite(_number(v))},
        _texts(document.get("environment")), _texts(document.get("warnings")),
        _number(document.get("threshold")), _number(document.get("confidence")),
        {str(side): {str(k): int(_number(v)) for k, v in c.items() if math.isfinite(_number(v))}
         for side, c in cost.items() if isinstance(c, dict)})
    count = _number(document.get("geomean_count"))
    suite.geomean_count = int(count) if math.isfinite(count) else sum(
        r.primary and r.ratio is not None for r in rows)
    return suite, str(document.get("a", "A")), str(document.get("b", "B"))


def csv_records(suite: SuiteComparison) -> list[dict[str, Any]]:
    """Flat records for CSV, one per row, numbers in base units (s or 1/s)."""
    out = []
    for row in suite.rows:
        record: dict[str, Any] = {"id": row.id, "kind": row.kind, "metric": row.metric,
                                  "unit": row.unit}
        for name, side in (("a", row.a), ("b", row.b)):
            record[f"{name}_value"] = side.value if side else ""
            record[f"{name}_ci_low"] = side.low if side else ""
            record[f"{name}_ci_high"] = side.high if side else ""
        ratio = row.ratio
        record.update({"ratio": ratio.value if ratio else "",
                       "ratio_ci_low": ratio.low if ratio else "",
                       "ratio_ci_high": ratio.high if ratio else "",
                       "p_value": row.p_value, "q_value": row.q_value,
                       "verdict": row.verdict, "notes": "; ".join(row.notes)})
        out.append(record)
    out += [{"id": key, "verdict": "only in A"} for key in suite.only_in_a]
    out += [{"id": key, "verdict": "only in B"} for key in suite.only_in_b]
    return out


def print_comparison(suite: SuiteComparison, name_a: str, name_b: str, fmt: str, json_to: Any,
                     fail_on: list[str]) -> list[str]:
    """Print the comparison (and write its JSON to the checked destination ``json_to``,
    a :class:`perflab.files.Destination` or None); return the ids that tripped the gate.

    Raises:
        SaveError: the JSON could not be written (after the table is printed).
    """
    from perflab.files import Deferred, save
    from perflab.model import json_types
    from perflab.report import console

    tripped = suite.tripped(fail_on)
    later = Deferred()
    if json_to is not None:
        document = comparison_document(suite, name_a, name_b, fail_on, tripped)
        later.run(save, json_to, (json.dumps(json_types(document), indent=1, allow_nan=False)
                                  + "\n").encode(), "comparison")
    if json_to is None or not json_to.stdout:
        console.emit(fmt, lambda: comparison_tables(suite, name_a, name_b),
                     lambda: csv_records(suite))
    later.raise_()
    return tripped


def gate(tripped: list[str], fail_on: list[str], noun: str = "benchmark(s)") -> int:
    """Exit code of the CI gate: 1 (with one stderr line naming ``tripped``, what
    ``noun`` counts) when something tripped, else 0."""
    if not tripped:
        return 0
    from perflab.report.escape import terminal

    shown = ", ".join(terminal(t, one_line=True) for t in tripped[:5]) + (
        f" and {len(tripped) - 5} more" if len(tripped) > 5 else "")
    sys.stderr.write(f"gate: --fail-on {','.join(fail_on)} tripped by {len(tripped)} "
                     f"{noun}: {shown}\n")
    return 1
