"""Options that several commands share, and the parsers that turn option text into the
typed values the layers below take (asv's ``commands/common_args.py`` is the model).

A command's ``main`` turns the parsed :class:`argparse.Namespace` into typed values with
the parsers here before calling the layer below (the HTTP engine takes a
:class:`perflab.engines.http.engine.Plan` built from typed values, never the options).
Every parser raises :class:`perflab.errors.UsageError` with one line naming the option
and what to give instead.
"""

from __future__ import annotations

import argparse
from typing import Any

from perflab.errors import UsageError


def http_plan(args: argparse.Namespace, check: bool = True) -> Any:
    """The :class:`perflab.engines.http.engine.Plan` of ``perflab http``'s parsed options
    (``url``, ``--rate``, ``--connections``, ``--duration``, ``--warmup``, ``--threads``,
    ``--poisson``, ``--seed``, ``--method``, ``--header``, ``--body``, ``--body-file``,
    ``--requests``, ``--ok``, ``--insecure``, ``--timeout``, ``--connect-timeout``),
    built by :func:`perflab.engines.http.engine.make_plan`; with ``check`` the engine checks
    every step on this machine too.

    Raises:
        UsageError: any bad value, checked in the options' order (the URL first).
    """
    from perflab import files
    from perflab.engines.http import engine
    from perflab.units import parse_duration, parse_positive_duration

    url = engine.parse_url(args.url).url
    duration = parse_positive_duration(args.duration, "--duration")
    if args.warmup is None:
        warmup = engine.default_warmup(duration)
    else:
        warmup = parse_duration(args.warmup, "--warmup")
        if warmup < 0:
            raise UsageError(f"--warmup {args.warmup!r} must not be negative")
    if warmup >= duration:
        raise UsageError(f"--warmup {args.warmup} must be shorter than --duration {args.duration}")
    rates = engine.parse_sweep(args.rate) if args.rate else []
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
        requests = engine.load_requests(args.requests)
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
        check=check,
    )
