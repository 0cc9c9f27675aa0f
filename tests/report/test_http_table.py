"""The sweep table (snapshot), its CSV records and the sweep chart, from synthetic steps."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

from perflab.analyze.http import Sweep, capacity, summarize_steps
from perflab.report import console
from perflab.report.http_chart import sweep_chart
from perflab.report.http_table import COLUMNS, step_line, step_records, sweep_table
from tests.analyze.test_http import step

SNAPSHOT = """\
### GET http://127.0.0.1:8080/

| offered | achieved | drained | error % | conn err % | p50 | p90 | p99 | p99.9 | max | send lag p99 | conns | verdict |
|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|
| 1,000/s | 1,000/s | 3 | 0 | 0 | 500 µs | 1.00 ms | 2.00 ms | 3.00 ms | 4.00 ms | 100 µs | 0 of 64 | ok |
| 2,000/s | 2,000/s | 1,800 | 2.24% | 0 | 500 µs | 1.00 ms | 2.00 ms | 3.00 ms | 4.00 ms | 100 µs | 0 of 64 | saturated: drained for 1.20 s after the step, 2.2% failed (status 503, read timeout) |
| 3,000/s | 3,000/s | – | 0 | 0 | 500 µs | 1.00 ms | 2.00 ms | 3.00 ms | 4.00 ms | 100 µs | 0 of 64 | generator-limited: engine thread 97% busy |

- capacity estimate: 1,000 requests/s offered (achieved 1,000/s, p99 2.00 ms), the heaviest ok step
- SLO p99 ≤ 100 ms: 1,000/s ✓ 2.00 ms, 2,000/s ✓ 2.00 ms, 3,000/s ✓ 2.00 ms
- a note
- 2,000/s: failed requests: 200 read timeout, 300× status 503
- 3,000/s: 42 requests were due but never sent: every connection was busy until the step ended
- generator-limited (3,000/s): perflab itself could not keep up, so these rows describe perflab, not the server
- 3,000/s: an engine thread was busy all the time; give perflab more --threads (and cores), or offer less; to send more than one machine can, run load agents on several: perflab http URL --agents N --cluster ADDRESS (docs/distributed.md)
"""


def swept(name: str, summaries: list, slo_s: float | None = None) -> Sweep:
    return Sweep(name, summaries, capacity(summaries), slo_s)


def sweep() -> list:
    steps = [
        step(1000.0, status_counts={"200": 10003}, drained=3, drain_s=0.002),
        step(
            2000.0,
            failures=500,
            status_counts={"200": 21800, "503": 300},
            errors={"read_timeout": 200},
            drained=1800,
            drain_s=1.2,
        ),
        step(3000.0, cpu=0.97, unsent=42, drained=None, ok_from_warmup=None),
    ]
    return summarize_steps(steps, 0.1)


def test_markdown_snapshot() -> None:
    table = sweep_table(swept("GET http://127.0.0.1:8080/", sweep(), 0.1), ["a note"])
    text = console.markdown([table])
    assert text.startswith(SNAPSHOT)
    assert "p99 > the 100 ms SLO" in text and "coordinated omission" in text


def test_rich_table_has_every_column_and_a_row_per_step(capsys) -> None:  # type: ignore[no-untyped-def]
    console.print_tables([sweep_table(swept("t", sweep()))])
    out = capsys.readouterr().out
    assert all(c in out for c in COLUMNS)
    assert out.count("/s ") >= 6 and "capacity estimate" in out


def test_closed_loop_rows_show_connection_counts() -> None:
    summaries = summarize_steps([step(None, mode="closed", connections=n) for n in (2, 4)])
    table = sweep_table(swept("t", summaries))
    assert [r[0] for r in table.rows] == ["2 conn", "4 conn"]
    assert table.rows[0][COLUMNS.index("send lag p99")] == "–"  # no send lag in closed loop
    assert "write to its last byte" in " ".join(table.footnotes)


def test_csv_records_use_base_units() -> None:
    rows = list(csv.DictReader(io.StringIO(console.csv_text(step_records(sweep())))))
    assert [r["verdict"] for r in rows] == ["ok", "saturated", "generator-limited"]
    assert float(rows[0]["latency_p99_s"]) == 0.002
    assert float(rows[1]["achieved_rate"]) == 2000.0


def test_step_line() -> None:
    assert step_line(sweep()[0]) == (
        "1,000/s: achieved 1,000/s, drained 3, errors 0, p99 2.00 ms, ok"
    )


def test_chart_is_written(tmp_path: Path) -> None:
    import matplotlib.image

    path = sweep_chart(swept("GET http://127.0.0.1:8080/", sweep(), 0.1), tmp_path / "sweep.png")
    image = matplotlib.image.imread(path)
    assert image.shape[1] > image.shape[0] > 400  # two panels side by side
    closed = summarize_steps([step(None, mode="closed", connections=n) for n in (1, 2)])
    assert sweep_chart(swept("t", closed), tmp_path / "closed.png").stat().st_size > 10_000
    assert not math.isnan(closed[0].achieved_rate)


def test_a_small_machine_still_gets_a_floor_of_the_capacity() -> None:
    # every step generator-limited (an engine thread ≥ 90% busy), the server clean
    steps = summarize_steps([step(1000.0, cpu=0.97), step(2000.0, cpu=0.97)])
    table = sweep_table(swept("t", steps))
    line = table.footnotes[0]
    assert line.startswith(
        "capacity estimate: none — no step was ok; but the server kept up "
        "with at least 2,000/s (achieved at 2,000/s"
    )
    assert "--threads" in line and "other machines" in line
    # issue 14 §6: point to the distributed mode, which exists now
    assert "--agents N" in line and "docs/distributed.md" in line
    # a step with server trouble is no floor: errors (the server's answers, whatever
    # perflab's pace) ...
    troubled = summarize_steps(
        [step(1000.0, cpu=0.97, failures=500, status_counts={"200": 9500, "503": 500})]
    )
    assert sweep_table(swept("t", troubled)).footnotes[0] == (
        "capacity estimate: none — no step was ok: 1,000/s failed > 1% of requests (errors)"
    )
    # ... or a backlog the server left while perflab was late
    behind = summarize_steps([step(1000.0, cpu=0.97, unfinished=5)])
    assert behind[0].verdict == "generator-limited"
    assert (
        sweep_table(swept("t", behind)).footnotes[0] == "capacity estimate: none — no step was ok"
    )


def test_a_generator_limited_lightest_step_is_not_called_saturated() -> None:
    """Issue 28 §3: "already saturated at the lightest load" was printed when the lightest
    step kept up and was only generator-limited; the heavier one saturated."""
    steps = summarize_steps(
        [
            step(1000.0, cpu=0.97),
            step(2000.0, achieved=1800.0),
        ]
    )
    assert [s.verdict for s in steps] == ["generator-limited", "saturated"]
    line = sweep_table(swept("t", steps)).footnotes[0]
    assert "lightest load" not in line
    assert line.startswith(
        "capacity estimate: none — no step was ok: the steps below 2,000/s were "
        "generator-limited (perflab's load generator was the limit); the server kept up "
        "with 1,000/s there (achieved at 1,000/s"
    )
    assert "from 2,000/s on the server was saturated" in line
