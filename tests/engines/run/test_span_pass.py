"""The worker's span pass: spans per call of each perflab.trace name in `run`'s metrics,
and the N+1 note when a name repeats more than 10 times (``--n-plus-one``) in one call."""

from __future__ import annotations

import textwrap
from pathlib import Path

from perflab import model

BENCH = """
import perflab
import perflab.trace

ROWS = list(range(40))


@perflab.trace("db")
def query(row=None):
    return row


@perflab.bench
def page_n_plus_one():
    return [query(r) for r in query() or ROWS]


@perflab.bench
def page_batched():
    return query(ROWS)


@perflab.bench
def untraced():
    return sum(ROWS)
"""


def test_spans_per_call_are_metrics_and_n_plus_one_is_noted(tmp_path: Path, perflab_cli) -> None:
    bench = tmp_path / "spans.py"
    bench.write_text(textwrap.dedent(BENCH))
    out = tmp_path / "r.json"
    done = perflab_cli(
        "run", str(bench), "--json", str(out), "--budget", "1.5s", "--min-processes", "2",
        "--max-processes", "2", "--process-time", "20ms", "--quiet", "--no-alloc",
        "--no-history", "--format", "markdown", timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    by_name = {b.name: b for b in model.load(str(out)).benchmarks}
    for p in by_name["page_n_plus_one"].processes:
        assert p.metrics["db spans"] == 41
    for p in by_name["page_batched"].processes:
        assert p.metrics["db spans"] == 1
    assert all("db spans" not in p.metrics for p in by_name["untraced"].processes)
    text = " ".join(done.stdout.split())
    [row] = [line for line in done.stdout.splitlines() if line.startswith("| page_n_plus_one")]
    assert row.rstrip(" |").endswith("N+1") and "| 41.0 |" in row  # the db spans column
    assert "N+1 (a perflab.trace span name ran over --n-plus-one (10) times a call" in text
    [batched] = [line for line in done.stdout.splitlines() if line.startswith("| page_batched")]
    assert "N+1" not in batched
