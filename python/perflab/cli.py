"""The command-line entry point: a table of contents of the subcommands.

Each subcommand lives in ``perflab.commands.<name>`` with two functions,
``add_arguments(parser)`` and ``main(args) -> int``, imported only when that
subcommand runs, so ``perflab --help`` starts fast.
"""

from __future__ import annotations

import argparse
import atexit
import gc
import importlib
import os
import sys
import threading
from collections.abc import Sequence
from typing import Any, NoReturn

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
    "history": "recorded runs, trends and change points from the history database",
    "report": "one self-contained HTML report of results files and history",
}


class _Parser(argparse.ArgumentParser):
    """argparse with the house error format: one ``error: ...`` line and exit code 2.

    Abbreviated options are off (``allow_abbrev=False``): ``--head`` for ``--header``
    bypassed the redaction of secret headers, and an abbreviation becomes ambiguous
    the day another option with that prefix is added.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        from perflab import redact
        from perflab.report.escape import terminal

        text = terminal(redact.text(message), one_line=True)
        sys.stderr.write(f"error: {text}; see '{self.prog} --help'\n")
        raise SystemExit(2)


def _top_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="perflab",
        description="perflab: a performance lab in one tool.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="commands:\n" + "\n".join(f"  {k:<9} {v}" for k, v in COMMANDS.items()),
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    parser.add_argument(
        "command",
        nargs="?",
        choices=list(COMMANDS),
        metavar="COMMAND",
        help="one of: " + ", ".join(COMMANDS),
    )
    parser.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run perflab with ``argv`` (default ``sys.argv[1:]``); return the exit code.

    Exit codes: 0 success, 1 a benchmark failed (or a gate tripped),
    2 usage or bad input, 3 measured but the results file could not be written
    (they are in the rescue file the error names), 128 + the signal's number when
    interrupted (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP).
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
    if top.command != "serve":
        parser.add_argument(
            "--wide",
            action="store_true",
            help="print every column of the tables, however wide the lines "
            "(by default lower-priority columns fold away to fit the terminal, "
            "or COLUMNS, or 120 when piped)",
        )
    module.add_arguments(parser)
    words = attach_negative_values(parser, argv[1:])
    args = parser.parse_args(words)
    args.typed_options = typed_options(parser, words)
    from perflab.report import console

    console.configure(wide=getattr(args, "wide", False))
    if _ENTRY["collector_off"]:
        _start_collector(top.command)
    return _guarded(module.main, args)


#: Set by :func:`run` (the console script and ``python -m perflab``), never by a caller
#: of :func:`main` in a longer-lived process (tests, examples).
_ENTRY = {"collector_off": False}


def run() -> NoReturn:
    """The ``perflab`` console script and ``python -m perflab``: :func:`main` on
    ``sys.argv``, then exit with its code.

    Two savings of a short-lived process (issue 30: ``perflab http``'s whole-process
    CPU is compared with wrk's, so start-up and exit count):

    - the cyclic garbage collector is off while the modules load and the arguments
      are parsed (those objects live until exit: a collection there only walks them),
      and those objects are frozen (``gc.freeze``) before the command runs, so the
      collections that follow skip them (:func:`_start_collector`);
    - the interpreter's teardown (clearing every module, the last collections) is
      skipped when nothing needs it (:func:`_exit_now`).

    Raises:
        SystemExit: always (the exit code); argparse's exits and errors pass through.
    """
    gc.disable()
    _ENTRY["collector_off"] = True
    try:
        code = main()
    finally:
        if _ENTRY["collector_off"]:  # main() stopped before the command ran (--help, errors)
            _ENTRY["collector_off"] = False
            gc.enable()
    _exit_now(code)


def _start_collector(command: str) -> None:
    """Turn the collector back on before the command runs; freeze what start-up made
    first, except for ``run``, which times Python code in this process and keeps the
    collector as a fresh interpreter has it."""
    _ENTRY["collector_off"] = False
    if command != "run":
        gc.freeze()
    gc.enable()


def _exit_now(code: int) -> NoReturn:
    """Exit with ``code`` without the interpreter's teardown, as a normal exit does
    otherwise: the ``atexit`` handlers run (``weakref.finalize`` and temporary folders
    included) and stdout and stderr are flushed first. Only when this thread is the
    last one (a normal exit would wait for the others) and the flushes succeed (a
    closed pipe takes the normal way, which reports it as before); else ``SystemExit``.
    """
    if threading.active_count() > 1 or not hasattr(atexit, "_run_exitfuncs"):
        raise SystemExit(code)
    atexit._run_exitfuncs()  # noqa: SLF001 - what the interpreter's own exit runs first
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        raise SystemExit(code) from None
    os._exit(code)


def attach_negative_values(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """Join an option that takes one value with a following value that looks like an
    option (``--budget -1s`` → ``--budget=-1s``), so that argparse passes it on and the
    option's parser rejects it by its meaning ("must be above zero") instead of argparse
    answering "expected one argument". Words that are options themselves are left alone.
    """
    takes_one = {
        s
        for a in parser._actions
        if a.nargs is None and a.option_strings  # noqa: SLF001
        for s in a.option_strings
    }
    known = {s for a in parser._actions for s in a.option_strings}  # noqa: SLF001
    out: list[str] = []
    words = iter(argv)
    for word in words:
        if word == "--":
            out += [word, *words]
            break
        if word in takes_one:
            value = next(words, None)
            if (
                value is not None
                and value.startswith("-")
                and value != "-"
                and value.split("=")[0] not in known
            ):
                out.append(f"{word}={value}" if word.startswith("--") else word + value)
                continue
            out += [word] if value is None else [word, value]
            continue
        out.append(word)
    return out


def typed_options(parser: argparse.ArgumentParser, words: Sequence[str]) -> dict[str, str]:
    """dest → the option string the user typed for it (the last one given): ``--markdown``
    or ``--export-markdown``, ``-r`` or ``--runs``, so that an error names what was
    written (:func:`perflab.errors.option_name`). ``--opt=value`` and ``-rVALUE`` count."""
    strings = {s: a.dest for a in parser._actions for s in a.option_strings}  # noqa: SLF001
    out: dict[str, str] = {}
    for word in words:
        if word == "--":
            break
        name = (
            word.split("=", 1)[0]
            if word.startswith("--")
            else word
            if word in strings
            else word[:2]
        )
        if word.startswith("-") and name in strings:
            out[strings[name]] = name
    return out


def _pipe_closed() -> int:
    """stdout's reader went away (``perflab show … | head -1``): end quietly, exit 0, as
    ``cat`` does; stdout goes to /dev/null so that the exit's flush can't fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
    return 0


def _guarded(func, args: argparse.Namespace) -> int:  # type: ignore[no-untyped-def]
    """Call a subcommand; turn perflab errors into one ``error:`` line and an exit code."""
    from perflab.errors import PerflabError
    from perflab.report.escape import terminal

    try:
        if hasattr(args, "no_history"):  # a measuring command: its history is checked first
            from perflab.commands.options import history_database
            from perflab.history.record import check_database

            check_database(history_database(args))
        code = int(func(args))
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        return _pipe_closed()
    except SystemExit as exc:  # rich exits 1 on a closed pipe
        if isinstance(exc.__context__, BrokenPipeError):
            return _pipe_closed()
        raise
    except PerflabError as exc:
        if args.debug:
            raise
        sys.stderr.write(f"error: {terminal(exc, one_line=True)}\n")
        return exc.exit_code
    except KeyboardInterrupt as exc:
        from perflab.interrupts import exit_code

        sys.stderr.write("error: interrupted\n")
        return exit_code(exc)
    except Exception as exc:  # noqa: BLE001 - last line of defence, no traceback
        if args.debug:
            raise
        if type(exc).__module__ == "sqlite3":  # the history database: corrupt, read-only…
            sys.stderr.write(
                f"error: the history database can't be used ({terminal(exc, one_line=True)}); "
                "check the file and its folder (permissions, disk, corruption), or pass "
                "--history with another path\n"
            )
            return 2
        sys.stderr.write(
            f"error: internal error {type(exc).__name__}: "
            f"{terminal(exc, one_line=True)}; re-run with --debug and report it\n"
        )
        return 1


if __name__ == "__main__":
    run()
