"""The perflab error tree. Every message says what went wrong and what to do next.

Exit codes follow the CLI contract: 2 for usage and bad input, 1 when a
benchmark failed, 0 otherwise.
"""

from __future__ import annotations

from typing import Any


class PerflabError(Exception):
    """Base of every error perflab reports as one ``error: ...`` line.

    Attributes:
        exit_code: the process exit code the CLI uses for this error.
    """

    exit_code = 1


class UsageError(PerflabError):
    """Bad command-line input or a bad input file (exit code 2)."""

    exit_code = 2


class ResultsFileError(UsageError):
    """A results file that is missing, truncated, foreign or too new (exit code 2)."""


class BenchFileError(UsageError):
    """A benchmark file that can't be loaded: missing, syntax error, no benchmarks (exit 2)."""


class BenchmarkError(PerflabError):
    """A benchmark that raised, hung or killed its worker (exit code 1)."""


def option_name(args: Any, dest: str, default: str) -> str:
    """The option as the user typed it for ``dest`` (``-r``, ``--markdown``…), recorded by
    :func:`perflab.cli.typed_options`; ``default`` when it was not typed or ``args`` was
    made without the CLI. For error messages: name what the user wrote."""
    return getattr(args, "typed_options", {}).get(dest, default)
