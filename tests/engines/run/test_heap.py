"""The heap pass of run --memory (engines/run/heap.py): the Python heap over calls, in-process.

tracemalloc counts bytes, so these are exact where they can be: a call keeping a
1,000-byte ``bytes`` object grows the heap by that object's size on every call, and a
call keeping nothing grows it by nothing (up to :data:`STRAY_BYTES` here).
"""

from __future__ import annotations

import itertools
import sys
import tracemalloc

import pytest

from perflab.analyze.memory import heap_growth_per_call
from perflab.engines.run.heap import MIN_CALLS, heap_timeline

#: tracemalloc traces every thread: in the test process (not in a worker) a thread left
#: by another test may allocate during a pass; workers read exactly 0 for a call that
#: keeps nothing (tests/engines/run/test_leak_detection.py)
STRAY_BYTES = 512


def test_a_call_keeping_1000_bytes_grows_the_heap_by_their_size_per_call() -> None:
    slots: list[bytes | None] = [None] * 1_000_000  # no list resize during the pass
    index = itertools.count()
    heap = heap_timeline(lambda: slots.__setitem__(next(index), bytes(1000)), 0.02)
    per_call = heap_growth_per_call(heap)
    size = sys.getsizeof(bytes(1000))
    calls = heap["calls"][-1]
    assert per_call is not None and size <= per_call <= size + STRAY_BYTES / calls
    assert heap["calls"][0] == 0 and heap["traced_bytes"][0] == 0
    assert calls < next(index)  # the warmup's calls are before the baseline
    assert all(p >= t for p, t in zip(heap["peak_bytes"][1:], heap["traced_bytes"][1:]))
    assert not tracemalloc.is_tracing()


def test_a_list_made_before_tracing_counts_whole_when_resized_during_the_pass() -> None:
    """tracemalloc counts a resized block as new: a leak's rate reads high, never low."""
    kept: list[bytes] = [b""] * 100_000
    kept.append(b"")  # room for 12,500 more: the next resize comes during the pass
    heap = heap_timeline(lambda: kept.append(bytes(1000)), 10.0, max_calls=20_000, warmup_share=0)
    per_call = heap_growth_per_call(heap)
    assert per_call is not None and per_call >= sys.getsizeof(bytes(1000)) + 800_000 / 20_000


def test_a_call_keeping_nothing_reads_no_growth_even_while_allocating() -> None:
    heap = heap_timeline(lambda: [str(i) for i in range(200)], 0.02)
    assert heap["traced_bytes"][-1] <= STRAY_BYTES
    assert max(heap["peak_bytes"]) > 200 * 40  # the list and its strings, while alive


def test_a_long_pass_keeps_between_points_and_twice_points_readings_over_all_calls() -> None:
    kept: list[int] = []
    heap = heap_timeline(lambda: kept.append(1), 10.0, max_calls=10_000, points=8, warmup_share=0)
    calls = heap["calls"]
    assert calls[-1] == 10_000 and 8 <= len(calls) <= 17
    steps = {b - a for a, b in zip(calls[:-2], calls[1:-1])}
    assert len(steps) == 1  # evenly spread after every thinning
    assert len({len(v) for v in heap.values()}) == 1
    assert heap["t_s"] == sorted(heap["t_s"])
    # each kept reading's peak covers the calls since the one before: never below it
    assert all(p >= t for p, t in zip(heap["peak_bytes"], heap["traced_bytes"]))


def test_a_short_budget_still_makes_the_minimum_calls() -> None:
    heap = heap_timeline(lambda: None, 0.0)
    assert heap["calls"][-1] == MIN_CALLS


def test_an_exception_stops_tracing_and_propagates() -> None:
    calls = []

    def fails() -> None:
        calls.append(1)
        if len(calls) > 3:
            raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        heap_timeline(fails, 1.0)
    assert not tracemalloc.is_tracing()


def test_growth_needs_two_readings() -> None:
    assert heap_growth_per_call(None) is None
    assert heap_growth_per_call({"calls": [0], "traced_bytes": [0]}) is None
    assert heap_growth_per_call({"calls": [0, 4], "traced_bytes": [0, 400]}) == 100
