"""``perflab serve``: an HTTP/1.1 (and h2c, and with ``--http3`` HTTP/3) target with
controlled delay, stalls, errors and faults.

The server is native (``perflab._core.serve``, Rust): Python only checks the options,
prints the address and waits for Ctrl-C.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from perflab.errors import UsageError

FAULTS = ("none", "close_mid_response", "endless_body")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``perflab serve``."""
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (127.0.0.1: this machine only)"
    )
    parser.add_argument("--port", type=int, default=8080, help="port (8080; 0 picks a free one)")
    parser.add_argument(
        "--delay",
        help="time each response waits: 1ms, uniform:1ms:5ms or "
        "exp:2ms (exponential with that mean); a bare number is seconds",
    )
    parser.add_argument(
        "--stall",
        metavar="LENGTH/PERIOD",
        help="freeze every response for LENGTH at the end of each PERIOD, e.g. 1s/10s",
    )
    parser.add_argument(
        "--error-rate",
        type=float,
        default=0.0,
        metavar="P",
        help="share of requests answered 500, e.g. 0.01 (0)",
    )
    parser.add_argument(
        "--body-size", type=int, default=0, metavar="BYTES", help="response body size in bytes (0)"
    )
    parser.add_argument(
        "--fault",
        choices=FAULTS,
        default="none",
        help="close_mid_response: "
        "half a body, then close; endless_body: a chunk every 100 ms forever",
    )
    parser.add_argument(
        "--serialize",
        metavar="TIME",
        help="hold one global lock this long "
        "per request (e.g. 0.2ms): throughput can't pass 1/TIME",
    )
    parser.add_argument("--threads", type=int, default=1, help="server threads (1)")
    parser.add_argument("--seed", type=int, help="seed of the error draws and random delays")
    parser.add_argument(
        "--http3",
        action="store_true",
        help="also serve HTTP/3 over QUIC on the UDP port of the same number "
        "(self-signed certificate: clients need --insecure)",
    )


def config_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """The ``perflab._core.serve`` config. Raises UsageError on out-of-range numbers."""
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port} is not a port; use 1-65535, or 0 for a free one")
    if not 0 <= args.error_rate <= 1:
        raise UsageError(f"--error-rate {args.error_rate} must be between 0 and 1, e.g. 0.01")
    if args.body_size < 0:
        raise UsageError(f"--body-size {args.body_size} must be 0 or more bytes")
    if args.threads < 1:
        raise UsageError(f"--threads {args.threads} must be at least 1")
    config = {
        "host": args.host,
        "port": args.port,
        "delay": args.delay,
        "stall": args.stall,
        "error_rate": args.error_rate,
        "body_size": args.body_size,
        "fault": args.fault,
        "serialize": args.serialize,
        "threads": args.threads,
        "seed": args.seed,
        "http3": args.http3 or None,
    }
    return {k: v for k, v in config.items() if v is not None}


def describe(config: dict[str, Any]) -> str:
    """The behaviour in words, e.g. "delay 1ms, stall 1s/10s, 1% errors"."""
    parts = [f"{key} {config[key]}" for key in ("delay", "stall", "serialize") if key in config]
    if config.get("error_rate"):
        parts.append(f"{config['error_rate']:.2%} errors (500)")
    if config.get("body_size"):
        parts.append(f"{config['body_size']:,}-byte bodies")
    if config.get("fault", "none") != "none":
        parts.append(f"fault {config['fault']}")
    return ", ".join(parts) or "no delay, no errors"


def main(args: argparse.Namespace) -> int:
    """Start the server, print where it listens, wait for Ctrl-C (or SIGTERM).

    Returns:
        0 after Ctrl-C; errors (a port in use, a bad delay) exit 2 via UsageError.
    """
    from perflab._core import serve
    from perflab.interrupts import StopSignals

    config = config_from_args(args)
    try:
        server = serve(config)
    except ValueError as exc:
        raise UsageError(_hint(str(exc), config)) from None
    url = f"http://{server.address}/"
    h3 = f"HTTP/3 on https://{server.address}/ over UDP (self-signed: use --insecure); "
    stats: dict[str, int] = {}
    try:
        with StopSignals():  # before the address is printed: no SIGTERM race
            print(
                f"perflab serve listening on {url} ({describe(config)}); "
                f"{h3 if config.get('http3') else ''}Ctrl-C stops it",
                flush=True,
            )
            while server.running:
                stats = server.stats()
                time.sleep(0.2)
    except KeyboardInterrupt:
        stats = server.stats() or stats
    server.stop()
    server.join()
    sys.stderr.write(
        f"stopped: {stats.get('requests', 0):,} requests on "
        f"{stats.get('connections', 0):,} connections\n"
    )
    return 0


def _hint(message: str, config: dict[str, Any]) -> str:
    """Name the option a native error is about, and what to do about a busy port or an
    address that isn't this machine's."""
    if "in use" in message.lower():
        return (
            f"{message}; another program holds port {config['port']}: pick another with "
            "--port, or --port 0 for a free one"
        )
    if "assign requested address" in message.lower():  # EADDRNOTAVAIL: not this machine's
        return (
            f"{message}; --host {config['host']} is not an address of this machine: "
            "use 127.0.0.1 (loopback), or one of this machine's own addresses"
        )
    for key in ("delay", "stall", "serialize"):
        prefix = f"serve config: {key}: "  # the native config reader names the key
        if message.startswith(prefix):
            return f"--{key} {config[key]}: {message[len(prefix) :]}"
    return message
