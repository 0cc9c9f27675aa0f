"""``--n-plus-one N`` (issue 31 §5): the N+1 check's limit, recorded in the results
file's settings and applied by http's Server-Timing notes and run's N+1 caveat on every
re-render; bad values are one ``error:`` line. Synthetic figures: nothing measured."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from perflab.analyze.results_figures import run_figures
from perflab.analyze.server_timing import REPEAT_LIMIT, timing_notes
from perflab.analyze.slow_calls import repeated_spans
from perflab.commands.options import n_plus_one
from perflab.errors import UsageError
from perflab.model import Histogram, Results, ServerTiming
from tests.conftest import lognormal_groups, make_bench


def _timing(queries: int) -> ServerTiming:
    counted = Histogram(count=50, p50_us=queries, max_us=queries)
    return ServerTiming(responses=50, counts={"db": counted})


@pytest.mark.parametrize(
    ("queries", "limit", "flagged"),
    [(41, REPEAT_LIMIT, True), (41, 50, False), (41, 41, False), (41, 40, True), (3, 2, True)],
)
def test_http_notes_flag_more_than_the_limit(queries: int, limit: int, flagged: bool) -> None:
    notes = [n for n in timing_notes(_timing(queries), 50, limit) if n.startswith("N+1")]
    assert bool(notes) is flagged
    if flagged:
        assert notes == [
            f"N+1: db ran {queries} times in one request (median {queries} per request, "
            f"over {limit}): likely one call per row or item; one batched call would do"
        ]


def test_the_default_limit_is_ten() -> None:
    assert REPEAT_LIMIT == 10
    assert repeated_spans({"db spans": 11.0, "cache spans": 10.0}) == [("db", 11.0)]
    assert repeated_spans({"db spans": 11.0}, 11) == []
    assert repeated_spans({"db spans": 3.0}, 2) == [("db", 3.0)]


def _run_results(limit: int | None) -> Results:
    bench = make_bench("page", lognormal_groups(1e-6, 3, 20, 0.01, 0.005, 1))
    for p in bench.processes:
        p.metrics = {"db spans": 41.0}
    settings = {} if limit is None else {"n_plus_one": limit}
    return Results("run", ["perflab"], "2026-01-01T00:00:00+00:00", "0.1.0", {}, settings, [bench])


@pytest.mark.parametrize(
    ("limit", "flagged"), [(None, True), (40, True), (41, False), (100, False)]
)
def test_run_reads_the_limit_its_file_recorded(limit: int | None, flagged: bool) -> None:
    figures = run_figures(_run_results(limit))
    [summary] = [s for group in figures.grouped.values() for s in group]
    assert any(c.kind == "N+1" for c in summary.warnings) is flagged


@pytest.mark.parametrize("text", ["abc", "0", "-3", "1.5", ""])
def test_bad_limits_are_usage_errors(text: str) -> None:
    with pytest.raises(UsageError, match="--n-plus-one .* is not a whole number ≥ 1"):
        n_plus_one(argparse.Namespace(n_plus_one=text))
    assert n_plus_one(argparse.Namespace(n_plus_one=None)) is None
    assert n_plus_one(argparse.Namespace(n_plus_one="25")) == 25


def test_bad_limit_on_the_command_line(tmp_path: Path, perflab_cli) -> None:  # type: ignore[no-untyped-def]
    bench = tmp_path / "b.py"
    bench.write_text("import perflab\n\n@perflab.bench\ndef f():\n    return 1\n")
    for argv in (
        ["run", str(bench), "--n-plus-one", "abc"],
        ["http", "http://127.0.0.1:9/", "--rate", "10", "--n-plus-one", "0"],
    ):
        done = perflab_cli(*argv)
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith("error: --n-plus-one ") and done.stderr.count("\n") == 1
