"""Fixtures of the perflab.trace tests: a clean recorder per test."""

from __future__ import annotations

import pytest

import perflab.trace


@pytest.fixture(autouse=True)
def clean_recorder():
    """Recording on and every span count at zero, before and after each test."""
    perflab.trace.enable(True)
    perflab.trace.reset()
    yield
    perflab.trace.enable(True)
    perflab.trace.reset()
