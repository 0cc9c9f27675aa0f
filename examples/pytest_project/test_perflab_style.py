"""Benchmarks written for perflab's own fixture, ``perflab_bench``."""

import pytest
import textstats


@pytest.mark.perflab(group="counting", baseline=True)
def test_words(perflab_bench, text):
    result = perflab_bench(textstats.words, text)
    assert result[:2] == ["the", "quick"]


@pytest.mark.perflab(group="counting")
def test_word_counts(perflab_bench, text):
    counts = perflab_bench(textstats.word_counts, text)
    assert counts["the"] == 270


def test_top_words_pedantic(perflab_bench, text):
    # fixed rounds, as pytest-benchmark's pedantic mode: 5 samples of 20 calls
    top = perflab_bench.pedantic(
        textstats.top_words, args=(text,), kwargs={"k": 3}, rounds=5, iterations=20, warmup_rounds=2
    )
    assert top[0] == ("the", 270)


def test_not_a_benchmark():
    assert textstats.words("A b") == ["a", "b"]
