"""The slowest samples explained, and the heavy-tail caveat, on synthetic samples:
GC, preemption (a switch counted, or CPU well under wall), migration, page faults, the
clock, and none of those."""

from __future__ import annotations

import math

import pytest

from perflab.analyze.run.summary import summarize
from perflab.analyze.slow_calls import slow_calls
from tests.conftest import make_bench

US = 1e-6


def _bench(n_processes: int = 10, per_process: int = 20):
    return make_bench("b", [[10 * US] * per_process for _ in range(n_processes)])


def _slow(bench, process: int, sample: int, factor: float, **fields) -> None:
    s = bench.processes[process].samples[sample]
    s.wall_ns = int(s.wall_ns * factor)
    s.cpu_ns = fields.pop("cpu_ns", s.wall_ns)
    for name, value in fields.items():
        setattr(s, name, value)


def test_each_cause_is_named_and_the_slowest_come_first() -> None:
    bench = _bench()
    _slow(bench, 1, 3, 30.0, gc_collections=2, gc_ns=20_000_000)  # 100 calls of 10 µs
    _slow(bench, 2, 4, 20.0, counters={"involuntary_switches": 1})
    _slow(bench, 3, 5, 15.0, cpu_ns=1000)
    _slow(bench, 4, 6, 12.0, counters={"cpu_migrations": 1})
    _slow(bench, 5, 7, 11.0, counters={"page_faults": 50})
    _slow(bench, 6, 8, 10.5, flagged="clock:REALTIME")
    _slow(bench, 7, 9, 10.2)
    calls = slow_calls(bench, slowest=7)
    assert [s.cause for s in calls.slowest] == [
        "GC",
        "preempted",
        "preempted",
        "migrated",
        "page faults",
        "clock",
        "unexplained",
    ]
    first = calls.slowest[0]
    assert (first.process_index, first.pid, first.sample_index) == (1, 1001, 3)
    assert first.vs_median == pytest.approx(30.0) and first.gc_collections == 2


def test_a_heavy_tail_gets_a_short_caveat_naming_its_cause() -> None:
    bench = _bench()  # 200 samples: the slowest 1% are two
    _slow(bench, 0, 0, 30.0, gc_collections=1, gc_ns=25_000_000)
    _slow(bench, 5, 1, 30.0, gc_collections=1, gc_ns=25_000_000)
    calls = slow_calls(bench)
    assert calls.heavy_tail and calls.tail_share == pytest.approx(60 / 258, rel=1e-3)
    assert calls.tail_cause == "GC"
    caveats = {c.kind: c for c in summarize(bench).warnings}
    assert caveats["heavy tail"].figure == "23% GC"
    assert "slowest 1% of 200 samples carry 23%" in caveats["heavy tail"].text


def test_no_tail_caveat_for_an_even_run_or_too_few_samples() -> None:
    even = _bench()
    assert not slow_calls(even).heavy_tail
    assert "heavy tail" not in {c.kind for c in summarize(even).warnings}
    few = _bench(n_processes=3, per_process=10)
    _slow(few, 0, 0, 100.0)
    assert math.isnan(slow_calls(few).tail_share) and not slow_calls(few).heavy_tail
