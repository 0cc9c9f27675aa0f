"""Parameters (-P/-L), exit-code lists, command splitting and program resolution."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perflab.engines.cmd.commands import parse_codes
from perflab.engines.cmd.parameters import (
    command_argv,
    expand_commands,
    parse_list,
    parse_scan,
    resolve_executable,
    substitute,
)
from perflab.errors import UsageError

NO_HOOKS: dict[str, str | None] = {
    "setup": None,
    "prepare": None,
    "conclude": None,
    "cleanup": None,
}


def test_scan_of_integers_includes_both_ends() -> None:
    assert parse_scan(["n", "1", "5"]).values == (1, 2, 3, 4, 5)
    assert parse_scan(["n", "0", "10", "5"]).values == (0, 5, 10)
    assert parse_scan(["n", "-2", "2", "2"]).values == (-2, 0, 2)


def test_scan_of_decimals_is_rounded_to_what_was_written() -> None:
    assert parse_scan(["t", "0.1", "0.3", "0.1"]).values == (0.1, 0.2, 0.3)
    assert parse_scan(["t", "0", "1", "0.25"]).values == (0, 0.25, 0.5, 0.75, 1.0)


@pytest.mark.parametrize(
    "tokens, words",
    [
        (["n", "1"], "NAME LO HI"),
        (["n", "1", "2", "3", "4"], "NAME LO HI"),
        (["1n", "1", "2"], "must be a word"),
        (["n", "a", "2"], "not a number"),
        (["n", "5", "1"], "above HI"),
        (["n", "1", "5", "0"], "above zero"),
        (["n", "1", "5", "-1"], "above zero"),
        (["n", "0", "1e9"], "too many"),
        (["n", "nan", "1"], "finite"),
    ],
)
def test_malformed_scans_say_what_to_write(tokens: list[str], words: str) -> None:
    with pytest.raises(UsageError, match=words):
        parse_scan(tokens)


@settings(max_examples=60, deadline=None)
@given(lo=st.integers(-1000, 1000), span=st.integers(0, 500), step=st.integers(1, 50))
def test_property_integer_scans(lo: int, span: int, step: int) -> None:
    values = parse_scan(["n", str(lo), str(lo + span), str(step)]).values
    assert values[0] == lo and len(values) == span // step + 1
    assert all(b - a == step for a, b in zip(values, values[1:]))
    assert values[-1] <= lo + span < values[-1] + step


@settings(max_examples=60, deadline=None)
@given(lo=st.integers(0, 100), span=st.integers(0, 100), step=st.integers(1, 20))
def test_property_decimal_scans_hit_the_grid(lo: int, span: int, step: int) -> None:
    text = [f"{lo / 10:.1f}", f"{(lo + span) / 10:.1f}", f"{step / 10:.1f}"]
    values = parse_scan(["t", *text]).values
    assert len(values) == span // step + 1
    assert values == tuple(round((lo + i * step) / 10, 1) for i in range(len(values)))


def test_lists_and_their_errors() -> None:
    assert parse_list(["py", "python3.11,python3.12"]).values == ("python3.11", "python3.12")
    assert parse_list(["py", "python3,python3"]).values == ("python3", "python3")
    for bad in ("", "a,,b", "a,"):
        with pytest.raises(UsageError, match="empty value"):
            parse_list(["py", bad])
    with pytest.raises(UsageError, match="must be a word"):
        parse_list(["p y", "a"])


def test_exit_code_lists() -> None:
    assert parse_codes(None) is None
    assert parse_codes("1,2") == frozenset({1, 2})
    for bad in ("x", "1,", "-1", "1;2"):
        with pytest.raises(UsageError, match="exit codes separated by commas"):
            parse_codes(bad)


def test_substitute_leaves_other_braces_alone() -> None:
    assert substitute("awk '{print $1}' {f}", {"f": "x.txt"}) == "awk '{print $1}' x.txt"


def test_expand_is_commands_times_every_combination() -> None:
    params = [parse_scan(["n", "1", "2"]), parse_list(["m", "a,b"])]
    specs = expand_commands(["echo {n} {m}", "true {n}{m}"], params, NO_HOOKS)
    assert [s.name for s in specs] == [
        "echo 1 a",
        "echo 1 b",
        "echo 2 a",
        "echo 2 b",
        "true 1a",
        "true 1b",
        "true 2a",
        "true 2b",
    ]
    assert specs[1].params == {"n": 1, "m": "b"}
    assert specs[0].argv[1:] == ("1", "a") and os.path.isabs(specs[0].argv[0])
    assert len({s.to_benchmark().id for s in specs}) == len(specs)


def test_repeated_commands_get_distinct_names() -> None:
    specs = expand_commands(["{py} -c pass"], [parse_list(["py", "python3,python3"])], NO_HOOKS)
    assert [s.name for s in specs] == ["python3 -c pass", "python3 -c pass #2"]
    assert specs[0].argv == specs[1].argv
    assert specs[0].to_benchmark().id != specs[1].to_benchmark().id


def test_a_command_without_placeholders_runs_once() -> None:
    specs = expand_commands(["true", "sleep {n}"], [parse_scan(["n", "0", "1"])], NO_HOOKS)
    assert [(s.name, s.params) for s in specs] == [
        ("true", {}),
        ("sleep 0", {"n": 0}),
        ("sleep 1", {"n": 1}),
    ]


def test_hooks_run_through_sh_with_parameters_substituted() -> None:
    hooks = {**NO_HOOKS, "prepare": "echo {n} | cat"}
    (spec,) = expand_commands(["sleep {n}"], [parse_scan(["n", "0", "0"])], hooks)
    assert spec.hooks["prepare"][1:] == ("-c", "echo 0 | cat") and "setup" not in spec.hooks


def test_parameters_must_be_used_and_given_once() -> None:
    with pytest.raises(UsageError, match="not used"):
        expand_commands(["true"], [parse_scan(["n", "1", "2"])], NO_HOOKS)
    with pytest.raises(UsageError, match="given twice"):
        expand_commands(
            ["true {n}"], [parse_scan(["n", "1", "2"]), parse_list(["n", "a"])], NO_HOOKS
        )
    expand_commands(["true"], [parse_scan(["n", "1", "2"])], {**NO_HOOKS, "setup": "echo {n}"})


def test_no_command_and_empty_command() -> None:
    with pytest.raises(UsageError, match="no command given"):
        expand_commands([], [], NO_HOOKS)
    with pytest.raises(UsageError, match="empty command"):
        expand_commands(["  "], [], NO_HOOKS)


def test_split_like_sh_without_a_shell_and_sh_c_with_one() -> None:
    assert command_argv("python3 -c 'import json'", None)[1:] == ("-c", "import json")
    with pytest.raises(UsageError, match="check its quotes"):
        command_argv("python3 -c 'import json", None)
    argv = command_argv("echo a | wc -l", "sh")
    assert argv[1:] == ("-c", "echo a | wc -l") and argv[0].endswith("sh")


def test_programs_not_found_or_not_runnable(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not found on PATH.*--shell"):
        resolve_executable("no-such-program-perflab", "no-such-program-perflab x")
    with pytest.raises(UsageError, match="does not exist"):
        resolve_executable(str(tmp_path / "missing"), "missing")
    script = tmp_path / "script.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    with pytest.raises(UsageError, match="permission denied.*chmod \\+x"):
        resolve_executable(str(script), str(script))
    with pytest.raises(UsageError, match="is a folder, not a program"):
        resolve_executable(str(tmp_path), str(tmp_path))
    script.chmod(0o755)
    assert resolve_executable(str(script), str(script)) == str(script)
