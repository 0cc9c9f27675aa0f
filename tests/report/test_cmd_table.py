"""The table and CSV records of command runs, from synthetic runs (no timing)."""

from __future__ import annotations

import pytest

from perflab.analyze.cmd import spawn_overhead, summarize_commands
from perflab.report import console
from perflab.report.cmd_table import cmd_table, summary_records
from tests.analyze.test_cmd import MS, bench, failed_bench


def test_a_command_without_successful_runs_shows_dashes_and_its_error() -> None:
    s_bad, s_ok = summarize_commands([failed_bench(), bench("ok", [5, 5, 5])])
    table = cmd_table([s_bad, s_ok])
    assert table.rows[0][1] == "0 +1 failed" and table.rows[0][2] == "–"
    assert "FAILED" in table.rows[0][-1]
    assert any("exited with status 1" in line for line in table.footnotes)


def test_table_cells_footnotes_and_rss_floor() -> None:
    small = bench("small", [10] * 10, rss=10_100_000)
    big = bench("big", [20] * 10, rss=300_000_000)
    summaries = summarize_commands([small, big], spawn_overhead_ns=[8 * MS] * 30, precision=0.01)
    table = cmd_table(
        summaries, spawn_overhead([8 * MS] * 30), {"interleave": True}, rss_floor_bytes=10_000_000
    )
    assert table.columns[:4] == ["command", "runs", "median ± CI", "user"]
    small_row, big_row = table.rows
    assert small_row[8] == "≤ 10.0 MB" and big_row[8] == "300 MB"
    assert big_row[9].startswith("2.00×") and "S" in small_row[-1].split()
    assert any(line.startswith("notes: ") and "S spawn-bound" in line for line in table.footnotes)
    assert any(
        line.startswith("spawn overhead") and "not subtracted" in line for line in table.footnotes
    )
    assert any("can't read below 10.0 MB" in line for line in table.footnotes)
    text = console.markdown([table])
    assert "| small | 10 |" in text and "interleaved" in text


def test_csv_records_are_in_base_units() -> None:
    (record,) = summary_records(summarize_commands([bench("A", [10, 10, 10])]))
    assert record["median_s"] == pytest.approx(0.01) and record["ratio"] == 1.0
    assert record["max_rss_bytes"] == 20_000_000 and record["error"] == ""


def test_an_interrupted_run_names_stop_signals_not_only_ctrl_c() -> None:
    # SIGTERM (a CI job cancelled) stops a run like Ctrl-C; the note said "Ctrl-C"
    from perflab.model import Results
    from perflab.report.cmd_table import cmd_tables

    ok = bench("ok", [5, 5, 5])
    results = Results(
        kind="cmd",
        command_line=[],
        created="",
        perflab_version="",
        environment={},
        benchmarks=[ok],
        interrupted=True,
    )
    notes = cmd_tables(results, summarize_commands([ok]), None)[0].footnotes
    assert any(
        n.startswith("interrupted (Ctrl-C or a stop signal: SIGTERM, SIGHUP)") for n in notes
    )


def test_warnings_are_grouped_by_kind_with_the_advice_once() -> None:
    """issue 14 (warnings a person reads): `cmd` printed the same sentence and advice for
    every command ("gzip: unstable: … close other programs …", "zstd: unstable: …")."""
    walls = [[10, 13, 8, 12, 9, 14, 7, 11], [20, 26, 16, 24, 18, 28, 14, 22]]
    summaries = summarize_commands(
        [
            bench("gzip", walls[0], stop_reason="budget"),
            bench("zstd", walls[1], stop_reason="budget"),
        ],
        precision=0.01,
    )
    notes = cmd_table(summaries).footnotes
    unstable = [line for line in notes if "unstable" in line and not line.startswith("notes: ")]
    assert len(unstable) == 1 and "gzip ±" in unstable[0] and "zstd ±" in unstable[0]
    assert unstable[0].count("close other programs") == 1
    assert sum("raise --budget or --max-runs" in line for line in notes) == 1
    assert "U" in cmd_table(summaries).rows[0][-1].split()  # its code, in the legend once
    assert sum(line.startswith("notes: ") and "U unstable" in line for line in notes) == 1
    verbose = cmd_table(summaries, verbose=True).footnotes
    assert sum(line.startswith(("gzip: unstable", "zstd: unstable")) for line in verbose) == 2


def test_a_lopsided_ci_prints_each_side_as_run_does() -> None:
    """Issue 28 §3: "283 ms ± 79.6%" hid a CI of 161–611 ms; run prints each side
    (issue 29 §1: as percentages of the value, "283 ms −43% +116%")."""
    (s,) = summarize_commands([bench("skewed", [160, 165, 170, 280, 283, 290, 600, 610, 620])])
    low, high = s.median.ci_low, s.median.ci_high
    assert abs((high - s.median_s) - (s.median_s - low)) > 0.25 * (high - low)
    cell = cmd_table([s]).rows[0][2]
    down, up = (s.median_s - low) / s.median_s, (high - s.median_s) / s.median_s
    assert "±" not in cell
    assert f"−{down * 100:.0f}%" in cell and f"+{up * 100:,.0f}%" in cell
