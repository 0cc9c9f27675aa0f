"""The one percentage parser (--precision, --threshold)."""

from __future__ import annotations

import pytest

from perflab.errors import UsageError
from perflab.units import parse_fraction


def test_percentages_and_fractions_parse_alike() -> None:
    assert parse_fraction("2%", "--threshold", "2%", "0.02") == pytest.approx(0.02)
    assert parse_fraction("0.02", "--threshold", "2%", "0.02") == 0.02
    assert parse_fraction("0%", "--threshold", "2%", "0.02", allow_zero=True) == 0


@pytest.mark.parametrize(
    "text, message",
    [
        ("abc", "--precision 'abc' is not a number; write e.g. 1% or 0.005"),
        ("0", "--precision '0' must be between 0% and 100%, e.g. 1%"),
        ("100%", "--precision '100%' must be between 0% and 100%, e.g. 1%"),
        ("nan", "--precision 'nan' must be between 0% and 100%, e.g. 1%"),
    ],
)
def test_out_of_range_or_not_a_number(text: str, message: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_fraction(text, "--precision", "1%", "0.005")
    assert str(caught.value) == message


def test_zero_allowed_range_says_so() -> None:
    with pytest.raises(UsageError, match="at least 0% and below 100%, e.g. 2%"):
        parse_fraction("-1%", "--threshold", "2%", "0.02", allow_zero=True)
