"""Options that several commands share, argparse actions beyond argparse's own
(hyperfine's ``-P NAME LO HI [STEP]`` and ``--ignore-failure[=CODES]`` that may be
followed by commands), and the parsers that turn option text into the typed values the
layers below take (asv's ``commands/common_args.py`` is the model).

A command's ``main`` turns the parsed :class:`argparse.Namespace` into typed values with
the parsers here before calling the layer below (the HTTP engine takes a
:class:`perflab.engines.http.engine.Plan` built from typed values, never the options).
Every parser raises :class:`perflab.errors.UsageError` with one line naming the option
and what to give instead. Not a command: every command may import it
(tests/test_architecture.py).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from perflab.errors import UsageError


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


def protocol(args: argparse.Namespace) -> str:
    """The engine's protocol of ``perflab http``'s options: "http1", "http2" (``--http2``)
    or "http3" (``--http3``). Raises UsageError when both are given."""
    http2, http3 = getattr(args, "http2", False), getattr(args, "http3", False)
    if http2 and http3:
        raise UsageError("--http2 and --http3 exclude each other: give one")
    return "http3" if http3 else "http2" if http2 else "http1"


def http_plan(args: argparse.Namespace, check: bool = True) -> Any:
    """The :class:`perflab.engines.http.engine.Plan` of ``perflab http``'s parsed options
    (``url``, ``--rate``, ``--connections``, ``--duration``, ``--warmup``, ``--threads``,
    ``--poisson``, ``--seed``, ``--method``, ``--header``, ``--body``, ``--body-file``,
    ``--requests``, ``--ok``, ``--insecure``, ``--timeout``, ``--connect-timeout``,
    ``--http2``, ``--http3``, ``--streams``),
    built by :func:`perflab.engines.http.engine.make_plan`; with ``check`` the engine checks
    every step on this machine too.

    Raises:
        UsageError: any bad value, checked in the options' order (the URL first).
    """
    from perflab import files
    from perflab.engines.http import engine, requests_file
    from perflab.engines.http.shapes import parse_rate
    from perflab.units import parse_duration, parse_positive_duration

    url = engine.parse_url(args.url).url
    spec = parse_rate(args.rate) if args.rate else None
    if args.duration is not None:
        duration = parse_positive_duration(args.duration, "--duration")
    else:
        duration = spec.length_s if spec and spec.length_s else 10.0
    if args.warmup is None:
        warmup = engine.default_warmup(duration)
    else:
        warmup = parse_duration(args.warmup, "--warmup")
        if warmup < 0:
            raise UsageError(f"--warmup {args.warmup!r} must not be negative")
    if warmup >= duration:
        raise UsageError(f"--warmup {args.warmup} must be shorter than --duration {args.duration}")
    rates = spec.rates if spec else []
    if spec and spec.shape and getattr(args, "agents", None) is not None and not args.poisson:
        raise UsageError(
            "a load shape (--rate A..B/T or M~A/T) on --agents needs --poisson (evenly "
            "spaced arrivals of a shape run on one machine): add --poisson or drop --agents"
        )
    interval = parse_duration(args.interval, "--interval")
    if interval != 0 and interval < 0.001:
        raise UsageError(f"--interval {args.interval!r}: at least 1ms, or 0 for no timeline")
    conns = engine.parse_connections(args.connections) if args.connections else []
    engine.check_load(rates, conns, args.poisson, args.threads)
    connect_timeout = parse_positive_duration(args.connect_timeout, "--connect-timeout")
    read_timeout = parse_positive_duration(args.timeout, "--timeout")
    engine.parse_ok(args.ok)
    headers = [engine.parse_header(h) for h in args.header or []]
    body = (
        args.body
        if args.body_file is None
        else files.read_bytes(args.body_file, f"--body-file {args.body_file}")
    )
    requests = None
    if args.requests:
        engine.check_request_source(args.method, headers, body)
        requests = requests_file.load_requests(args.requests)
    return engine.make_plan(
        url,
        duration,
        warmup,
        rates,
        conns,
        poisson=args.poisson,
        connect_timeout_s=connect_timeout,
        read_timeout_s=read_timeout,
        ok=args.ok,
        insecure=args.insecure,
        threads=args.threads,
        seed=args.seed,
        method=args.method,
        headers=headers,
        body=body,
        requests=requests,
        protocol=protocol(args),
        streams=args.streams,
        check=check,
        shape=spec.shape if spec else None,
        interval_s=interval,
    )


def add_n_plus_one(parser: Any) -> None:
    """``--n-plus-one N`` (``perflab http``, ``perflab run``): the N+1 check's limit."""
    from perflab.analyze.server_timing import REPEAT_LIMIT

    parser.add_argument(
        "--n-plus-one",
        metavar="N",
        help="flag a perflab.trace span (Server-Timing metric) name that ran more than N "
        f"times within one request or call: the N+1 pattern ({REPEAT_LIMIT})",
    )


def n_plus_one(args: argparse.Namespace) -> int | None:
    """``--n-plus-one``'s limit, or None when not given (the default applies).

    Raises:
        UsageError: not a whole number ≥ 1.
    """
    text = getattr(args, "n_plus_one", None)
    if text is None:
        return None
    if not text.strip().isdigit() or int(text) < 1:
        raise UsageError(
            f"--n-plus-one {text!r} is not a whole number ≥ 1; write e.g. 10 (a span name "
            "that runs more than N times in one request or call is flagged)"
        )
    return int(text)


def add_history_arguments(parser: Any, recording: bool = True) -> None:
    """The history options (of a parser or an argument group): --history, and for
    measuring commands --no-history and --tag (:func:`history_database`, ``args.tag``)."""
    from perflab.history import record

    parser.add_argument(
        "--history",
        metavar="PATH",
        help=f"the history database (default: $PERFLAB_HISTORY or {record.DEFAULT_PATH})",
    )
    if recording:
        parser.add_argument(
            "--no-history",
            action="store_true",
            help="don't record this run in the history database",
        )
        parser.add_argument(
            "--tag",
            action="append",
            default=[],
            metavar="WORD",
            type=_tag,
            help="label this run in history (repeatable), e.g. --tag nightly",
        )


def _tag(text: str) -> str:
    """argparse type of --tag: one checked tag (see :func:`check_tags`)."""
    try:
        from perflab.history.record import check_tags

        return check_tags([text])[0]
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc).split(": ", 1)[-1]) from None


def history_database(args: argparse.Namespace) -> Path | None:
    """The history database of a command's ``--history`` and ``--no-history``
    (:func:`perflab.history.record.database`), or None when recording is off."""
    from perflab.history import record

    return record.database(getattr(args, "history", None), getattr(args, "no_history", False))


def add_from_argument(parser: argparse.ArgumentParser) -> None:
    """``--from pyperf|hyperfine|pytest-benchmark`` of show, compare and fit: the format
    given to :func:`perflab.model.load` (``args.source``; None: detected)."""
    from perflab.interop import FORMATS

    parser.add_argument(
        "--from",
        dest="source",
        choices=FORMATS,
        default=None,
        help="read the input files as this peer's JSON instead of detecting "
        "the format (perflab, pyperf, hyperfine --export-json, "
        "pytest-benchmark --benchmark-json/autosave)",
    )


# --quick and the time estimate (perflab run): pyperf's --fast is the model of the preset;
# hyperfine and criterion print an estimate before they start.
#: ``--quick``: the options it sets (those the user gave win), and their defaults
QUICK = {"budget": "2s", "min_processes": 3, "max_processes": 6, "process_time": "50ms"}
#: a benchmark's time outside its sampling budget, roughly: the cold-call and allocation
#: passes' worker processes and the setup they run (seconds, for the estimate)
START_S = 0.6
_DEFAULTS = {"budget": "10s", "min_processes": None, "max_processes": 60, "process_time": "100ms"}


def apply_quick(args: argparse.Namespace) -> None:
    """``--quick``: each option of :data:`QUICK` the user left at its default takes the
    quick value."""
    if getattr(args, "quick", False):
        for name, value in QUICK.items():
            if getattr(args, name) == _DEFAULTS[name]:
                setattr(args, name, value)


def time_estimate(cases: int, budget_s: float, process_s: float, min_processes: int) -> str:
    """The line printed before a run starts: the most it can take (each benchmark stops at
    its budget; the last process may overrun it by one process's sampling time; plus
    :data:`START_S` each) and the least (``min_processes`` processes each). E.g. "≈ 20 s–1 min 32 s: 9 benchmarks ×
    10 s budget (sooner where the precision is reached first)"."""
    from perflab.units import format_span

    most = cases * (budget_s + process_s + START_S)
    least = cases * (min(budget_s, min_processes * process_s) + START_S)
    word = "benchmark" if cases == 1 else "benchmarks"
    return (
        f"≈ {format_span(least)}–{format_span(most)}: {cases} {word} × "
        f"{format_span(budget_s)} budget (sooner where the precision is reached first; "
        "--quick for a first look)"
    )
