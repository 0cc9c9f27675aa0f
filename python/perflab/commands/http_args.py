"""The options of ``perflab http``: its argparse definitions (the command is
:mod:`perflab.commands.http`; typed option values are :mod:`perflab.commands.options`)."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``perflab http`` (wrk2/vegeta names where they exist)."""
    parser.add_argument("url", help="target, http://HOST[:PORT]/PATH or https://…")
    load = parser.add_argument_group("load")
    load.add_argument(
        "--rate",
        metavar="R",
        help="open loop: offered requests/s; a sweep as "
        "START:STOP:STEP (1000:20000:1000) or a list (500,1000,2000), /LENGTH holds each "
        "step that long (1k,5k,10k/20s); a linear ramp FROM..TO/LENGTH (1k..20k/60s); a "
        "sine MEAN~AMPLITUDE/PERIOD (5k~2k/30s)",
    )
    load.add_argument(
        "--connections",
        metavar="N",
        help="closed loop (without --rate): N "
        "connections, each sending its next request when the last one ends; a "
        "list or START:STOP:STEP sweeps; with --rate: the connection pool's cap "
        "(default automatic, up to 1024)",
    )
    load.add_argument(
        "--duration",
        help="length of each step, warmup included (10s, or the LENGTH of --rate …/LENGTH)",
    )
    load.add_argument(
        "--interval",
        default="1s",
        help="timeline interval: offered, achieved, errors, latency and send lag per "
        "interval of every step (1s; 0: no timeline)",
    )
    load.add_argument(
        "--warmup",
        help="unrecorded start of each step (1s, or a fifth of --duration when that is shorter)",
    )
    load.add_argument(
        "--threads",
        type=int,
        help="engine threads, one event loop each "
        "(default: the cores less one, at least 1; at most the cores)",
    )
    load.add_argument(
        "--poisson",
        action="store_true",
        help="open loop: Poisson arrivals (exponential gaps) instead of evenly spaced ones",
    )
    load.add_argument("--seed", type=int, help="seed of the Poisson arrivals")
    load.add_argument(
        "--http2",
        action="store_true",
        help="speak HTTP/2: ALPN h2 over https, prior knowledge (h2c) over http",
    )
    load.add_argument(
        "--http3",
        action="store_true",
        help="speak HTTP/3 over QUIC (UDP, https:// only; --insecure for self-signed)",
    )
    load.add_argument(
        "--streams",
        type=int,
        metavar="N",
        help="with --http2/--http3: concurrent streams per connection (h2load's -m; 1): "
        "closed loop runs connections × N request loops, open loop's pool holds that many",
    )
    req = parser.add_argument_group("requests")
    req.add_argument("--method", help="HTTP method (GET)")
    req.add_argument(
        "-H",
        "--header",
        action="append",
        metavar="'NAME: VALUE'",
        help="extra request header; repeatable",
    )
    req.add_argument(
        "--redact",
        action="append",
        default=[],
        metavar="NAME",
        help="a header whose value is a secret: never saved or printed "
        "(Authorization, Proxy-Authorization and Cookie always are); repeatable",
    )
    body = req.add_mutually_exclusive_group()
    body.add_argument("--body", help="request body (text)")
    body.add_argument("--body-file", metavar="FILE", help="request body read from FILE (bytes)")
    req.add_argument(
        "--requests",
        metavar="FILE",
        help="JSON lines of requests sent "
        'round-robin, e.g. {"method": "POST", "path": "/x", "headers": {…}, '
        '"body": "…"}',
    )
    req.add_argument(
        "--ok", default="200-299", help="statuses that count as success (200-299; e.g. 200-299,304)"
    )
    req.add_argument(
        "--timeout",
        default="10s",
        help="a request fails when its response has not ended this long after it was written (10s)",
    )
    req.add_argument(
        "--connect-timeout", default="2s", help="limit for connect plus TLS handshake (2s)"
    )
    req.add_argument(
        "--insecure",
        action="store_true",
        help="https: do not verify the server's certificate (self-signed test servers)",
    )
    out = parser.add_argument_group("output")
    out.add_argument(
        "--slo",
        metavar="LIMITS",
        help="service-level objective: a step that misses a latency limit is saturated, "
        "one that misses the error limit 'errors', and the run exits 1 (see --fail-on). "
        "A time bounds p99 (100ms); several limits as KEY=VALUE, comma separated, "
        "keys p50, p90, p99, p99.9, max (times), error (a share) and, with "
        "--watch or --watch-cmd, rss (the watched processes' summed RSS peak in "
        "a step: 200MB): p99=10ms,p99.9=50ms,error=0.1%%,rss=1GB",
    )
    from perflab.commands.options import add_n_plus_one

    add_n_plus_one(out)
    out.add_argument(
        "--fail-on",
        metavar="WHAT",
        help="exit 1 when a step is one of: slo (missed the --slo), saturated, errors (the "
        "server kept up but failed > 1%% of requests or the --slo error limit), "
        "generator-limited; comma separated; 'none' never (default: slo with --slo, else none)",
    )
    out.add_argument(
        "--json",
        metavar="FILE",
        help="write the results file here "
        "(default: .perflab/http-<time>.json); saved after every step",
    )
    out.add_argument("--chart", metavar="PNG", help="draw the sweep chart into this PNG")
    out.add_argument(
        "--format",
        choices=["table", "markdown", "csv"],
        default="table",
        help="how to print the results on stdout",
    )
    from perflab.report import outputs

    outputs.add_arguments(out, "one line per step")
    out.add_argument("--quiet", action="store_true", help="no live progress on stderr")
    from perflab.commands.options import add_history_arguments

    add_history_arguments(out)
    watch = parser.add_argument_group("server")
    watch.add_argument(
        "--watch",
        action="append",
        type=int,
        default=[],
        metavar="PID",
        help="sample this process's RSS and CPU time over the run (every "
        "100 ms, from /proc; repeatable): the table adds the server's CPU/wall, "
        "CPU per request and peak RSS per step",
    )
    watch.add_argument(
        "--watch-cmd",
        action="append",
        default=[],
        metavar="NAME",
        help="as --watch, for every process of this name (e.g. nginx)",
    )
    dist = parser.add_argument_group("distributed load (Ray; pip install 'perflab[cluster]')")
    dist.add_argument(
        "--agents",
        type=int,
        metavar="N",
        help="send the load from N load "
        "agents (Ray actors, one per node by default), each running the engine in "
        "its own process; each step's rate or connections are split among them "
        "and their histograms merged exactly",
    )
    dist.add_argument(
        "--cluster",
        metavar="ADDRESS",
        help="with --agents: 'local' starts a "
        "Ray instance on this machine (default); 'auto', ray://HOST:10001 or "
        "HOST:PORT joins a running cluster",
    )
    dist.add_argument(
        "--agents-per-node",
        type=int,
        metavar="K",
        help="with --agents: K "
        "agents per node (default: spread evenly, one per node when possible)",
    )
    dist.add_argument(
        "--fail-fast",
        action="store_true",
        help="with --agents: stop the run when an agent dies (default: go on with the others)",
    )
    dist.add_argument(
        "--split",
        metavar="HOW",
        help="with --agents: divide each step's load "
        "evenly (default), by each agent's measured capacity ('capacity'), or by "
        "weights, one per agent (3,1); constant arrivals stay evenly spaced",
    )
