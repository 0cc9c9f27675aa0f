"""Benchmarks written the way pytest-benchmark's documentation writes them; they run
unchanged under perflab when pytest-benchmark is not installed."""

import time

import pytest
import textstats


def something(duration=0.000001):
    """Function that needs some serious benchmarking."""
    time.sleep(duration)
    # You may return anything you want, like the result of a computation
    return 123


def test_my_stuff(benchmark):
    # benchmark something
    result = benchmark(something)

    # Extra code, to verify that the run completed correctly.
    # Sometimes you may want to check the result, fast functions
    # are no good if they return incorrect results :-)
    assert result == 123


def test_my_stuff_different_arg(benchmark):
    # benchmark something, but add some arguments
    result = benchmark(something, 0.001)
    assert result == 123


@pytest.mark.benchmark(
    group="group-name",
    min_time=0.1,
    max_time=0.5,
    min_rounds=5,
    timer=time.time,
    disable_gc=True,
    warmup=False,
)
def test_my_stuff_marked(benchmark, text):
    benchmark.extra_info["chars"] = len(text)

    @benchmark
    def result():
        # Code to be measured
        return textstats.word_counts(text)

    # Extra code, to verify that the run completed correctly.
    assert result["fox"] == 90


def test_with_setup(benchmark):
    def setup():
        # a fresh list each round: sorting must not see a sorted input
        return (list(range(2000, 0, -1)),), {}

    result = benchmark.pedantic(sorted, setup=setup, rounds=10)
    assert result[0] == 1


def test_group_attribute(benchmark, text):
    benchmark.group = "counting"
    assert benchmark(textstats.top_words, text, k=1) == [("the", 270)]


@pytest.mark.parametrize("k", [1, 5])
def test_top_k(benchmark, text, k):
    # parametrized: perflab names it test_top_k with params {"k": …}, as it reads
    # pytest-benchmark's files, so a pytest-benchmark baseline matches by name
    benchmark.group = "top"
    assert len(benchmark(textstats.top_words, text, k=k)) == k
