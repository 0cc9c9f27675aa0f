"""Threads mode folded across processes: Jain's index and the per-benchmark figures."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perflab.analyze.run import threads
from perflab.model import Benchmark
from tests.engines.run.test_threads import threaded_bench

PROPERTY = settings(max_examples=30, deadline=None, derandomize=True)


def test_jain_index_of_equal_and_of_monopolised_work() -> None:
    assert threads.jain_index([5, 5, 5, 5]) == pytest.approx(1.0)
    assert threads.jain_index([8, 0, 0, 0]) == pytest.approx(0.25)
    assert threads.jain_index([3, 1]) == pytest.approx(16 / 20)
    assert math.isnan(threads.jain_index([0, 0]))
    with pytest.raises(ValueError):
        threads.jain_index([])


@PROPERTY
@given(st.lists(st.integers(0, 10**6), min_size=1, max_size=16).filter(any))
def test_jain_index_lies_between_one_over_n_and_one(ops: list[int]) -> None:
    value = threads.jain_index(ops)
    assert 1 / len(ops) - 1e-12 <= value <= 1 + 1e-12


def test_thread_figures_take_medians_over_processes() -> None:
    fig = threads.thread_figures(threaded_bench("lock", 4, 1e-6, [10, 20, 30, 40]))
    assert fig is not None and fig.threads == 4
    assert fig.latency_ns["p50"] == 2000.0
    assert fig.min_max == pytest.approx(0.25)
    assert fig.jain == pytest.approx(100**2 / (4 * 3000))
    assert fig.gil_enabled is True
    assert threads.thread_figures(Benchmark(name="plain")) is None
