"""A small library under test: word statistics of a text.

``PERFLAB_EXAMPLE_SLOWDOWN=K`` (an integer ≥ 1) makes :func:`word_counts` do its work K
times: the injected slowdown the gate demo (and tests/pytest_plugin) must catch.
"""

from __future__ import annotations

import collections
import os
import re

_WORD = re.compile(r"[a-z']+")
_SLOWDOWN = max(1, int(os.environ.get("PERFLAB_EXAMPLE_SLOWDOWN", "1")))


def words(text: str) -> list[str]:
    """The lower-case words of ``text``."""
    return _WORD.findall(text.lower())


def word_counts(text: str) -> collections.Counter[str]:
    """Occurrences of each word of ``text``."""
    counts: collections.Counter[str] = collections.Counter()
    for _ in range(_SLOWDOWN):
        counts = collections.Counter(words(text))
    return counts


def top_words(text: str, k: int = 10) -> list[tuple[str, int]]:
    """The ``k`` most frequent words with their counts."""
    return word_counts(text).most_common(k)
