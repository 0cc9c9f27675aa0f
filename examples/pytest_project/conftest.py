"""Shared fixtures of the example project: a text of about 6 kB."""

import pytest

SENTENCE = "the quick brown fox jumps over the lazy dog and the dog doesn't mind "


@pytest.fixture(scope="session")
def text() -> str:
    return SENTENCE * 90
