"""cmd's ``{name}`` placeholders: unknown and malformed ones refused with one line,
other braces left alone, ``{{name}}`` the literal text; secrets kept out of names."""

from __future__ import annotations

import pytest

from perflab.engines.cmd.parameters import Parameter, expand_commands
from perflab.engines.cmd.placeholders import check, substitute
from perflab.errors import UsageError


@pytest.mark.parametrize(
    ("text", "names", "said"),
    [
        ("echo {x}", [], "{x} is no parameter (no -P/-L parameter is given)"),
        ("echo {m}", ["n"], "{m} is no parameter (the parameters are n)"),
        ("echo {n:03d}", ["n"], "'{n:03d}' is not a placeholder"),
        ("echo {n-1}", ["n"], "'{n-1}' is not a placeholder"),
        ("echo { n }", ["n"], "'{ n }' is not a placeholder"),
        ("echo {n }", ["n"], "'{n }' is not a placeholder"),
        ("echo {n", ["n"], "'{n' is not a placeholder"),
    ],
)
def test_unknown_or_malformed_placeholders_are_refused(
    text: str, names: list[str], said: str
) -> None:
    with pytest.raises(UsageError, match="^command") as caught:
        check([(f"command {text!r}", text)], names)
    assert said in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize(
    "text",
    [
        "awk 'BEGIN{print 1}'",
        "find . -exec true {} +",
        "echo {a,b} {1..3} ${HOME} ${n}",
        "curl -d '{\"a\": 1}'",
        "echo {{x}} {n}",
        "awk '{n = 1}' {n}",
    ],
)
def test_other_braces_are_left_alone(text: str) -> None:
    check([("command", text)], ["n"])


def test_substitution_and_the_literal_escape() -> None:
    assert substitute("make -j{n} {{n}} {{x}} {x}", {"n": 4}) == "make -j4 {n} {x} {x}"


def test_an_undefined_placeholder_in_a_hook_or_a_name_is_refused() -> None:
    n = [Parameter("n", (1, 2))]
    with pytest.raises(UsageError, match="^--prepare: {m} is no parameter"):
        expand_commands(["true {n}"], n, {"prepare": "echo {m}"})
    with pytest.raises(UsageError, match="^-n 'build {k}': {k} is no parameter"):
        expand_commands(["true {n}"], n, {}, names=["build {k}"])


def test_benchmark_names_carry_no_secret() -> None:
    command = (
        "true -H 'Authorization: Bearer S3CRET' --password hunter2 "
        "https://u:hunter2@h/?token=S3CRET API_KEY=S3CRET"
    )
    (spec,) = expand_commands([command], [], {})
    assert "S3CRET" not in spec.name and "hunter2" not in spec.name
    assert spec.text == command and spec.argv[-1] == "API_KEY=S3CRET"  # run as given
