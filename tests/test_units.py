"""The one duration grammar (``perflab.units.parse_duration``, the native
``perflab._core.parse_duration_s``): bare numbers are seconds, units ns to h, compounds from
the largest unit down, a year at most either way, and the same parser behind ``perflab
serve``'s delays, stalls and serialization point."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perflab import _core
from perflab.errors import UsageError
from perflab.units import parse_duration, parse_positive_duration

#: Every unit's spellings and its length in seconds.
UNITS = {
    "h": 3600.0,
    "m": 60.0,
    "min": 60.0,
    "s": 1.0,
    "ms": 1e-3,
    "us": 1e-6,
    "µs": 1e-6,
    "ns": 1e-9,
}
YEAR_S = 366 * 86400.0


@settings(max_examples=300, deadline=None)
@given(
    st.floats(-1e7, 1e7, allow_nan=False), st.sampled_from([*UNITS, ""]), st.sampled_from(["", " "])
)
def test_a_number_and_unit_round_trip(value: float, unit: str, space: str) -> None:
    scale = UNITS.get(unit, 1.0)
    text = f"{value!r}{space}{unit}" if unit else repr(value)
    if abs(value * scale) > YEAR_S:
        with pytest.raises(UsageError, match="a year at most"):
            parse_duration(text, "--x")
    else:
        assert parse_duration(text, "--x") == value * scale  # exactly: one multiplication


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 10_000), min_size=5, max_size=5),
    st.sampled_from(["", " "]),
    st.booleans(),
)
def test_compounds_round_trip(parts: list[int], joiner: str, negative: bool) -> None:
    names = ("h", "m", "s", "ms", "us")
    chosen = [(n, name) for n, name in zip(parts, names) if n] or [(0, "s")]
    text = ("-" if negative else "") + joiner.join(f"{n}{name}" for n, name in chosen)
    total = 0.0
    for n, name in chosen:
        total += n * UNITS[name]
    expected = -total if negative else total
    if abs(expected) > YEAR_S:
        with pytest.raises(UsageError, match="a year at most"):
            parse_duration(text)
    else:
        assert parse_duration(text) == expected


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1.5", 1.5),
        (" 2 ", 2.0),
        (".5", 0.5),
        ("1e3", 1000.0),
        ("+5s", 5.0),
        ("-1ms", -1e-3),
        ("5 MS", 5e-3),
        ("2min", 120.0),
        ("1h", 3600.0),
        ("1m30s", 90.0),
        ("1m 30s", 90.0),
        ("1h2m3s", 3723.0),
        ("2s500ms", 2.5),
        ("250μs", 250e-6),
        ("8784h", YEAR_S),
    ],
)
def test_accepted(text: str, seconds: float) -> None:
    assert math.isclose(parse_duration(text), seconds, rel_tol=1e-15)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "ms",
        "5x",
        "2d",
        "1.",
        "5.s",
        "- 5s",
        "--5s",
        "5e",
        "1,5s",
        "nan",
        "inf",
        "soon",
        "30s1m",
        "1s1s",
        "1m30",
        "30 1m",
        "\udcff",
    ],
)
def test_refused_with_the_option_and_text_named(text: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_duration(text, "--budget")
    assert str(info.value) == (f"--budget {text!r} is not a duration; write e.g. 500ms, 5s or 2m")


@pytest.mark.parametrize("text", ["8785h", "-8785h", "1e12s", "1e400"])
def test_a_year_is_the_bound_either_way(text: str) -> None:
    with pytest.raises(UsageError, match=r"longer than any run can last \(a year at most\)"):
        parse_duration(text, "--timeout")


def test_positive_durations_refuse_zero_and_negative_values_by_meaning() -> None:
    assert parse_positive_duration("1m30s", "--budget") == 90.0
    for text in ("0", "-1s", "0ms"):
        with pytest.raises(UsageError, match="--budget must be above zero"):
            parse_positive_duration(text, "--budget")


def test_serve_reads_its_durations_with_the_same_grammar() -> None:
    for config in (
        {"delay": "0.001"},
        {"delay": "exp:0.5ms"},
        {"serialize": "0.0001"},
        {"delay": "uniform:0:1ms"},
        {"stall": "1ms/1m30s"},
    ):
        with _core.serve({"port": 0, **config}) as server:
            assert server.running, config
    for config, message in (
        ({"delay": "5x"}, 'delay: "5x" is not a duration'),
        ({"serialize": "-1ms"}, 'serialize: "-1ms" must not be negative'),
        ({"stall": "1s/8785h"}, "a year at most"),
    ):
        with pytest.raises(ValueError, match=message):
            _core.serve({"port": 0, **config})
