"""Options the commands share, and argparse actions beyond argparse's own (hyperfine's
``-P NAME LO HI [STEP]`` and ``--ignore-failure[=CODES]`` that may be followed by commands).

Not a command: every command may import it (tests/test_architecture.py).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


class Commands(argparse.Action):
    """Positional commands: extend the list (other options may have added to it)."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
        setattr(namespace, self.dest, (getattr(namespace, self.dest) or []) + list(values))


class Scan(argparse.Action):
    """``-P NAME LO HI [STEP]``: keeps 3 or 4 tokens; what follows them are commands.

    argparse has no "3 or 4 arguments", so -P takes all that follow and hands
    back the commands (a 4th token is the step only if it is a number).
    """

    def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
        count = 4 if len(values) > 3 and is_number(values[3]) else 3
        getattr(namespace, self.dest).append(list(values[:count]))
        namespace.commands = (namespace.commands or []) + list(values[count:])


class IgnoreFailure(argparse.Action):
    """``--ignore-failure[=CODES]``: a following word that isn't a code list is a command."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
        from perflab.engines.cmd.commands import is_code_list

        if (
            values is not None
            and not is_code_list(values)
            and any(w.startswith(f"{s}=") for w in sys.argv for s in self.option_strings)
        ):
            parser.error(
                f"{option}={values}: exit codes are whole numbers, comma separated, "
                "e.g. --ignore-failure=1,2 (or --ignore-failure alone for any code)"
            )
        if values is not None and not is_code_list(values):
            namespace.commands = (namespace.commands or []) + [values]
            values = None
        namespace.ignore_failure = "all" if values is None else values


def is_number(text: str) -> bool:
    """Whether ``text`` parses as a float (a -P step, rather than a command)."""
    try:
        float(text)
    except ValueError:
        return False
    return True
