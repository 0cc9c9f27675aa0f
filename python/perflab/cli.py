"""The command-line entry point: a table of contents of the subcommands.

Each subcommand lives in ``perflab.commands.<name>`` with two functions,
``add_arguments(parser)`` and ``main(args) -> int``, imported only when that
subcommand runs, so ``perflab --help`` starts fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

#: subcommand → one-line help. Order is the order of ``perflab --help``.
COMMANDS = {
    "run": "benchmark Python functions in a file (in-process, fresh workers)",
    "cmd": "benchmark whole commands, interleaved",
    "http": "HTTP load: fixed rate, rate sweep or closed loop",
    "serve": "an HTTP target with controlled delay, stalls and errors",
    "doctor": "check whether this machine's clocks and CPU can be trusted",
    "compare": "compare two results files: faster, slower, same or inconclusive",
    "fit": "fit USL, complexity or break-even models to results",
    "show": "re-render a saved results file",
}


class _Parser(argparse.ArgumentParser):
    """argparse with the house error format: one ``error: ...`` line and exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"error: {message}; see '{self.prog} --help'\n")
        raise SystemExit(2)


def _top_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="perflab", description="perflab: a performance lab in one tool.",
                     formatter_class=argparse.RawDescriptionHelpFormatter,
                     epilog="commands:\n" + "\n".join(f"  {k:<9} {v}"
                                                      for k, v in COMMANDS.items()))
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    parser.add_argument("command", nargs="?", choices=list(COMMANDS), metavar="COMMAND",
                        help="one of: " + ", ".join(COMMANDS))
    parser.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run perflab with ``argv`` (default ``sys.argv[1:]``); return the exit code.

    Exit codes: 0 success, 1 a benchmark failed (or a gate tripped),
    2 usage or bad input, 130 interrupted before any result.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    top = _top_parser().parse_args(argv[:1] if argv and not argv[0].startswith("-") else argv)
    if top.version:
        from perflab import __version__

        print(f"perflab {__version__}")
        return 0
    if top.command is None:
        _top_parser().print_help()
        return 2
    module = importlib.import_module(f"perflab.commands.{top.command}")
    parser = _Parser(prog=f"perflab {top.command}", description=COMMANDS[top.command])
    parser.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    module.add_arguments(parser)
    args = parser.parse_args(argv[1:])
    return _guarded(module.main, args)


def _guarded(func, args: argparse.Namespace) -> int:  # type: ignore[no-untyped-def]
    """Call a subcommand; turn perflab errors into one ``error:`` line and an exit code."""
    from perflab.errors import PerflabError

    try:
        return int(func(args))
    except PerflabError as exc:
        if args.debug:
            raise
        sys.stderr.write(f"error: {exc}\n")
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("error: interrupted\n")
        return 130
    except Exception as exc:  # noqa: BLE001 - last line of defence, no traceback
        if args.debug:
            raise
        sys.stderr.write(f"error: internal error {type(exc).__name__}: {exc}; "
                         "re-run with --debug and report it\n")
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
