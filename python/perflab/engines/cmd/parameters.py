"""``-P``/``-L`` parameters and command expansion of ``perflab cmd`` (hyperfine's parameter/).

From what the user typed to what the engine spawns: a :class:`Parameter` per ``-P NAME
LO HI [STEP]`` (a numeric scan) or ``-L NAME A,B,C`` (a list), and
:func:`expand_commands`, which substitutes every combination of parameter values into
the commands and hooks and resolves each command's program into a :class:`CommandSpec`.
"""

from __future__ import annotations

import math
import os
import re
import shlex
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from perflab import redact
from perflab.engines.cmd.placeholders import check as check_placeholders
from perflab.engines.cmd.placeholders import substitute
from perflab.errors import UsageError
from perflab.model import Benchmark

_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Parameter:
    """A benchmark parameter from ``-P`` (a numeric scan) or ``-L`` (a list).

    Attributes:
        name: the placeholder name; ``{name}`` in commands and hooks is replaced.
        values: the values in order (ints, floats or strings).
    """

    name: str
    values: tuple[Any, ...]


def _check_name(name: str, option: str) -> None:
    if not _NAME_RE.match(name):
        raise UsageError(
            f"{option} name {name!r} must be a word of letters, digits and _ "
            f"(used as {{name}} in commands); e.g. {option} n 1 5"
        )


def _number(text: str, option: str) -> int | float:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        raise UsageError(
            f"{option}: {text!r} is not a number; write e.g. "
            f"{option} n 1 10 or {option} t 0.1 0.5 0.1"
        ) from None
    if not math.isfinite(value):
        raise UsageError(f"{option}: {text!r} is not a finite number")
    return value


def _decimals(text: str) -> int:
    return len(text.partition(".")[2]) if "e" not in text.lower() else 12


def parse_scan(tokens: Sequence[str], max_values: int = 10_000) -> Parameter:
    """Parse ``-P name lo hi [step]`` into a parameter: lo, lo+step, … ≤ hi (hyperfine's -P).

    Integers stay integers; with decimals each value is rounded to the most
    decimals written, so 0.1 0.3 0.1 gives 0.1, 0.2, 0.3 (not 0.30000000000000004).

    Args:
        tokens: [name, lo, hi] or [name, lo, hi, step] as typed.
        max_values: refuse scans longer than this.

    Returns:
        The parameter; ``hi`` is included when a whole number of steps reaches it.

    Raises:
        UsageError: wrong count, bad name, not numbers, lo > hi, step ≤ 0, too many values.
    """
    if len(tokens) not in (3, 4):
        raise UsageError(
            f"-P takes NAME LO HI [STEP], got {' '.join(tokens)!r}; "
            "e.g. -P n 1 5 or -P t 0.1 0.5 0.1"
        )
    name, *numbers = tokens
    _check_name(name, "-P")
    lo, hi, step = [_number(t, "-P") for t in numbers] + ([1] if len(numbers) == 2 else [])
    if lo > hi:
        raise UsageError(f"-P {name}: LO {lo} is above HI {hi}; swap them")
    if step <= 0:
        raise UsageError(f"-P {name}: STEP must be above zero, got {step}")
    count = math.floor((hi - lo) / step + 1e-9) + 1
    if count > max_values:
        raise UsageError(
            f"-P {name}: {count:,} values is too many (at most {max_values:,}); use a larger STEP"
        )
    digits = max(_decimals(t) for t in numbers)
    if all(isinstance(v, int) for v in (lo, hi, step)):
        return Parameter(name, tuple(lo + i * step for i in range(count)))
    return Parameter(name, tuple(round(lo + i * step, digits) for i in range(count)))


def parse_list(tokens: Sequence[str]) -> Parameter:
    """Parse ``-L name a,b,c`` into a parameter of string values (hyperfine's -L).

    Raises:
        UsageError: bad name, or an empty list or empty value.
    """
    name, text = tokens
    _check_name(name, "-L")
    values = tuple(text.split(","))
    if not text or any(v == "" for v in values):
        raise UsageError(
            f"-L {name}: empty value in {text!r}; write values separated by "
            "commas, e.g. -L py python3.11,python3.12"
        )
    return Parameter(name, values)


@dataclass(frozen=True)
class CommandSpec:
    """One command to benchmark, resolved and ready to spawn.

    Attributes:
        name: display name (the command text; ``#2``… appended to repeats).
        text: the command text after parameter substitution.
        argv: what is spawned; ``argv[0]`` is an absolute path.
        params: parameter values of this case.
        hooks: hook name ("setup", "prepare", "conclude", "cleanup") → argv (``sh -c``).
    """

    name: str
    text: str
    argv: tuple[str, ...]
    params: dict[str, Any] = field(default_factory=dict)
    hooks: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def to_benchmark(self) -> Benchmark:
        """An empty Benchmark of kind "command" for this spec."""
        return Benchmark(name=self.name, kind="command", params=dict(self.params))


def resolve_executable(name: str, command: str) -> str:
    """Absolute path of the program ``name`` (searched on PATH when it has no slash).

    Raises:
        UsageError: not found, a directory, or not executable; says what to do.
    """
    if os.sep not in name:
        found = shutil.which(name)
        if found is None:
            raise UsageError(
                f"command {redact.text(command)!r}: {name!r} not found on PATH; check the "
                "spelling, give its full path, or use --shell for shell "
                "built-ins, pipes and redirections"
            )
        return os.path.abspath(found)
    path = os.path.abspath(name)
    if not os.path.exists(path):
        raise UsageError(
            f"command {redact.text(command)!r}: {name!r} does not exist; check the path"
        )
    if os.path.isdir(path):
        raise UsageError(
            f"command {redact.text(command)!r}: {name!r} is a folder, not a program; give "
            "the path of the program to run"
        )
    if not os.access(path, os.X_OK):
        raise UsageError(
            f"command {redact.text(command)!r}: permission denied running {name!r} "
            f"(not an executable file); make it executable with chmod +x {name}"
        )
    return path


def command_argv(text: str, shell: str | None) -> tuple[str, ...]:
    """The argv that runs ``text``: ``shlex.split`` without a shell, ``shell -c`` with one.

    Raises:
        UsageError: empty command, unbalanced quotes, or program not found.
    """
    if shell:
        return (resolve_executable(shell, text), "-c", text)
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise UsageError(f"command {redact.text(text)!r}: {exc}; check its quotes") from None
    if not words:
        raise UsageError(
            "an empty command was given; write the command to run, e.g. perflab cmd 'sleep 0.1'"
        )
    return (resolve_executable(words[0], text), *words[1:])


def expand_commands(
    commands: Sequence[str],
    parameters: Sequence[Parameter],
    hooks: dict[str, str | None],
    shell: str | None = None,
    names: Sequence[str] = (),
) -> list[CommandSpec]:
    """Every command × every combination of parameter values, resolved.

    Hooks always run through ``sh -c`` (they are untimed and often need pipes,
    e.g. ``sync; echo 3 | sudo tee /proc/sys/vm/drop_caches``).

    Args:
        commands: command texts, possibly with ``{name}`` placeholders.
        parameters: from ``-P``/``-L``; each must appear in a command or hook.
        hooks: hook name → text or None.
        shell: run commands through this shell (``--shell``), or None.
        names: display names of the first commands, in order (hyperfine's ``-n``);
            ``{name}`` placeholders in them are replaced too, and a name without any
            gets the case's parameter values appended (``build n=2``).

    Returns:
        Specs in order: command by command, parameters varying fastest; a
        command that uses no parameter (nor do the hooks) runs once.

    Raises:
        UsageError: no command, duplicate or unused parameter, an unknown or malformed
            placeholder (:mod:`perflab.engines.cmd.placeholders`), program not found.
    """
    if not commands:
        raise UsageError(
            "no command given; write the commands to compare, "
            "e.g. perflab cmd 'sleep 0.1' 'sleep 0.2'"
        )
    check_placeholders(
        [(f"command {redact.text(c)!r}", c) for c in commands]
        + [(f"--{h}", t) for h, t in hooks.items() if t]
        + [(f"-n {redact.text(n)!r}", n) for n in names],
        [p.name for p in parameters],
    )
    _check_parameters(commands, parameters, hooks)
    sh = resolve_executable("sh", "--setup/--prepare/--conclude/--cleanup")
    if not any(hooks.values()):
        sh = ""
    specs, seen = [], {}
    hook_texts = "".join(filter(None, hooks.values()))
    for index, text in enumerate(commands):
        used = [p for p in parameters if "{" + p.name + "}" in text + hook_texts]
        for params in _combinations(used):
            concrete = substitute(text, params)
            shown = concrete
            if index < len(names):
                shown = substitute(names[index], params)
                if shown == names[index] and params:
                    shown += " " + " ".join(f"{k}={v}" for k, v in params.items())
            shown = redact.text(shown)  # the name is saved and printed; the command runs
            key = (shown, tuple(params.items()))
            seen[key] = seen.get(key, 0) + 1
            name = shown if seen[key] == 1 else f"{shown} #{seen[key]}"
            spec_hooks = {h: (sh, "-c", substitute(t, params)) for h, t in hooks.items() if t}
            specs.append(
                CommandSpec(name, concrete, command_argv(concrete, shell), params, spec_hooks)
            )
    return specs


def _check_parameters(
    commands: Sequence[str], parameters: Sequence[Parameter], hooks: dict[str, str | None]
) -> None:
    names = [p.name for p in parameters]
    texts = [*commands, *filter(None, hooks.values())]
    for name in names:
        if names.count(name) > 1:
            raise UsageError(f"parameter {name!r} is given twice; give each -P/-L name once")
        if not any("{" + name + "}" in t for t in texts):
            raise UsageError(
                f"parameter {name!r} is not used: no command has {{{name}}}; "
                f"put {{{name}}} where its value goes"
            )


def _combinations(parameters: Sequence[Parameter]) -> list[dict[str, Any]]:
    combos: list[dict[str, Any]] = [{}]
    for param in parameters:
        combos = [{**c, param.name: v} for c in combos for v in param.values]
    return combos
