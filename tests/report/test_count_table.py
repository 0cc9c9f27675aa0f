"""The count tables: cells, the layout-sensitive flag, cache columns only with
--cache-sim, the command table, and CSV records."""

from __future__ import annotations

from perflab.analyze.counts import summarize_command_counts, summarize_counts
from perflab.model.counts import CommandCounts
from perflab.report.count_table import (
    band_cell,
    command_count_table,
    count_records,
    count_table,
    format_count,
)
from tests.analyze.test_counts import _bench


def test_cells() -> None:
    assert format_count(12_345_678.4) == "12,345,678"
    assert format_count(57.46) == "57.5"
    assert format_count(None) == "–"
    assert band_cell(0.0004, 3, False) == "±0.02% (3 layouts)"
    assert band_cell(0.062, 3, True) == "layout-sensitive ±3.10% (3 layouts)"
    assert band_cell(0.0, 1, False) == "1 layout"


def test_table_rows_and_flag() -> None:
    steady = summarize_counts(_bench(10_000, 10_001, 10_002))
    moving = summarize_counts(_bench(10_000, 10_600, 10_200))
    assert steady is not None and moving is not None
    table = count_table([("steady", steady), ("moving", moving)], ["Valgrind 3.19.0"])
    assert table.columns[1] == "instructions/op" and "est. cycles/op" not in table.columns
    assert table.rows[0][:2] == ["steady", "10,001"]
    assert "layout-sensitive" in table.rows[1][2] and "layout-sensitive" not in table.rows[0][2]
    assert table.footnotes[-1] == "Valgrind 3.19.0"
    records = count_records([("steady", steady)])
    assert records[0]["ir_per_op"] == 10_001 and records[0]["layouts"] == 3


def test_command_table() -> None:
    runs = [CommandCounts(["Ir"], [1_000_000 + i], 3, {"hash_seed": i}) for i in range(3)]
    summary = summarize_command_counts(runs)
    assert summary is not None and summary.command_processes == 3
    table = command_count_table([("python app.py", summary)])
    assert table.rows == [["python app.py", "1,000,001", "±0.00% (3 layouts)", "3"]]
    assert summarize_command_counts([]) is None
