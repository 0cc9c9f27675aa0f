"""The HTTP engine's Python side: a run plan from the command line, the native engine
(:func:`perflab._core.http_run`) driven one step at a time, and its raw output turned
into the results model (:class:`perflab.model.HttpStep`).

Running one step per engine call lets perflab save after every step, check between
steps that the target still accepts connections (a server killed mid-sweep ends the
sweep with a clear line instead of minutes of refused connections), and stop cleanly
on Ctrl-C: the engine finishes the current step's accounting and returns it.

Method: open-loop latency is measured from each request's intended send time
(coordinated omission: Gil Tene, "How NOT to Measure Latency"; wrk2), see
``rust/engine/src/load/mod.rs``.
"""

from __future__ import annotations

import math
import re
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from perflab.engines.http.steps import step_from_raw
from perflab.errors import UsageError
from perflab.model import HttpStep

#: An engine: ``(config, progress) -> raw result`` (``perflab._core.http_run`` or a fake).
Engine = Callable[[dict[str, Any], Callable[[dict[str, Any]], None] | None], dict[str, Any]]
#: Live progress: ``(step index, step count, engine snapshot)``.
ProgressFn = Callable[[int, int, dict[str, Any]], None]

#: Most HTTP/2 streams per connection (the engine's own limit).
MAX_STREAMS = 1024
#: Most steps a sweep may have (a typo like 1:100000:1 would otherwise run for days).
MAX_STEPS = 200
_NUMBER = r"[0-9]*\.?[0-9]+(?:e[-+]?[0-9]+)?[kK]?"
_RANGE_RE = re.compile(rf"^\s*({_NUMBER})\s*:\s*({_NUMBER})\s*(?::\s*({_NUMBER})\s*)?$")
_OK_RE = re.compile(r"^\s*\d{3}(\s*-\s*\d{3})?(\s*,\s*\d{3}(\s*-\s*\d{3})?)*\s*$")


def _number(text: str, option: str) -> float:
    """``"2000"``, ``"2.5k"`` → float. Raises UsageError."""
    text = text.strip()
    scale = 1000.0 if text[-1:] in "kK" else 1.0
    try:
        return float(text[:-1] if scale > 1 else text) * scale
    except ValueError:
        raise UsageError(
            f"{option} {text!r} is not a number; write e.g. 1000, 2.5k, "
            "1000:20000:1000 or 500,1000,2000"
        ) from None


def parse_sweep(text: str, option: str = "--rate") -> list[float]:
    """Parse a step list: ``"1000"``, ``"500,1000,2000"`` or ``"1000:20000:1000"``.

    ``START:STOP:STEP`` includes STOP when it falls on the grid (like autobench's
    low/high/step); ``START:STOP`` uses 10 equal steps.

    Args:
        text: the user's text; numbers may end in ``k`` (×1000).
        option: the option name for messages.

    Returns:
        The values in the given order, each > 0.

    Raises:
        UsageError: not numbers, a value ≤ 0, STOP < START, a step ≤ 0, or more
            than :data:`MAX_STEPS` steps.
    """
    match = _RANGE_RE.match(text)
    if match:
        start, stop = _number(match.group(1), option), _number(match.group(2), option)
        step = _number(match.group(3), option) if match.group(3) else (stop - start) / 9 or 1.0
        if step <= 0 or stop < start:
            raise UsageError(
                f"{option} {text!r}: write START:STOP:STEP with START ≤ STOP and "
                "STEP > 0, e.g. 1000:20000:1000"
            )
        count = math.floor((stop - start) / step * (1 + 1e-9)) + 1
        values = [start + i * step for i in range(min(count, MAX_STEPS + 1))]
    else:
        parts = text.split(",")
        if any(not v.strip() for v in parts):  # "100,200," or "100,,200": a value went missing
            raise UsageError(
                f"{option} {text!r}: an empty value between commas; write e.g. 100,200,400"
            )
        values = [_number(v, option) for v in parts]
    if not values or any(not math.isfinite(v) or v <= 0 for v in values):
        raise UsageError(f"{option} {text!r}: every value must be above zero")
    if len(values) > MAX_STEPS:
        raise UsageError(f"{option} {text!r} makes more than {MAX_STEPS} steps; use a larger STEP")
    return values


def parse_connections(text: str) -> list[int]:
    """``"64"``, ``"1,2,4,8"`` or ``"8:64:8"`` → connection counts. Raises UsageError."""
    values = parse_sweep(text, "--connections")
    if any(v != int(v) for v in values):
        raise UsageError(f"--connections {text!r}: connection counts are whole numbers")
    return [int(v) for v in values]


#: A header name: an RFC 9110 token (§5.1, §5.6.2): no spaces, no separators.
_TOKEN_RE = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")


def parse_header(text: str) -> tuple[str, str]:
    """``"Name: value"`` → (name, value). Raises UsageError without a colon, with a name
    that is not an HTTP token (``X Token: 1`` reached the server, which answered 400 to
    every request), or with a line break."""
    name, colon, value = text.partition(":")
    if not colon or not _TOKEN_RE.fullmatch(name.strip()) or any(c in text for c in "\r\n"):
        raise UsageError(
            f"--header {text!r} is not 'Name: value' with a name of letters, "
            "digits and -; write e.g. --header 'Accept: application/json'"
        )
    return name.strip(), value.strip()


def parse_ok(text: str) -> str:
    """Check a ``--ok`` status list like ``"200-299,304"``; return it. Raises UsageError."""
    if not _OK_RE.match(text):
        raise UsageError(f"--ok {text!r} is not a status list; write e.g. 200-299 or 200-299,304")
    return text.replace(" ", "")


@dataclass(frozen=True)
class Target:
    """Where load goes: the URL split into what the preflight check needs.

    Attributes:
        url: the URL as given (trimmed).
        scheme: "http" or "https".
        host: host name or IP literal (no IPv6 brackets).
        port: TCP port (80/443 by default).
    """

    url: str
    scheme: str
    host: str
    port: int


def parse_url(url: str) -> Target:
    """Split and check a target URL.

    Raises:
        UsageError: no scheme or host, a scheme other than http/https, or a bad port.
    """
    from perflab import redact

    url = url.strip()
    shown = redact.url(url)  # messages never echo a password
    example = "e.g. http://127.0.0.1:8080/"
    if "://" not in url:
        raise UsageError(
            f"URL {shown!r} is malformed: write it as http://HOST[:PORT]/PATH, {example}"
        )
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise UsageError(
            f"URL {shown!r} is malformed ({exc}): a bad port (ports are 1-65535) "
            "or host (IPv6 in brackets, e.g. http://[::1]:8080/)"
        ) from None
    if parts.scheme.lower() not in ("http", "https"):
        raise UsageError(f"URL scheme {parts.scheme!r} is not supported; use http:// or https://")
    if not parts.hostname:
        raise UsageError(f"URL {shown!r} has no host; {example}")
    if "@" in parts.netloc:
        raise UsageError(
            f"URL {shown!r} holds credentials (user:password@), which perflab "
            "does not send; pass them as a header, e.g. -H 'Authorization: Basic "
            "…' (redacted from files and output)"
        )
    if port == 0:
        raise UsageError(
            f"URL {shown!r} has port 0, which no server listens on; give the server's port, 1-65535"
        )
    default = 443 if parts.scheme.lower() == "https" else 80
    return Target(url, parts.scheme.lower(), parts.hostname, default if port is None else port)


def check_reachable(target: Target, timeout_s: float) -> None:
    """Open and close one TCP connection to the target, so that a server that is not
    there gives one clear line instead of a sweep of refused connections.

    Raises:
        UsageError: the host does not resolve, the connection is refused, or nothing
            answers within ``timeout_s``.
    """
    where = f"{target.host}:{target.port}"
    try:
        host = _resolver_name(target.host)
        socket.create_connection((host, target.port), timeout=timeout_s).close()
    except socket.gaierror as exc:
        raise UsageError(
            f"cannot resolve host {target.host!r} ({exc.strerror}); check the URL"
        ) from None
    except ConnectionRefusedError:
        raise UsageError(
            f"cannot connect to {where}: connection refused; is the server "
            f"running? (try `perflab serve --port {target.port}`)"
        ) from None
    except TimeoutError:
        raise UsageError(
            f"cannot connect to {where}: no answer within {timeout_s:g} s; check "
            "the address, the server and any firewall"
        ) from None
    except OSError as exc:
        raise UsageError(
            f"cannot connect to {where}: {exc.strerror or exc}; check the address and the server"
        ) from None


def _resolver_name(host: str) -> str | bytes:
    """An ASCII ``host`` as the bytes the ``idna`` codec's fast path gives (labels 1-63
    characters, the last < 64) without loading its tables (≈ 2 ms CPU a run, issue 30);
    any other as is, for ``socket`` to encode or refuse as it does."""
    labels = host.split(".")
    fits = all(0 < len(x) < 64 for x in labels[:-1]) and len(labels[-1]) < 64
    return host.encode("ascii") if host.isascii() and fits else host


@dataclass
class Plan:
    """A whole ``perflab http`` invocation: the engine config shared by every step,
    and the steps.

    Attributes:
        target: the checked URL.
        config: engine config keys shared by all steps (see ``perflab._core.http_run``),
            without ``rate``/``rates``/``connections_list``.
        rates: open loop: offered rate of each step, req/s; empty in closed loop.
        connections: closed loop: connections of each step; empty in open loop.
        connect_timeout_s: used by the reachability check too.
        shape: open loop: the load shape of the one step (``rates`` holds its peak), or
            None.
    """

    target: Target
    config: dict[str, Any]
    rates: list[float] = field(default_factory=list)
    connections: list[int] = field(default_factory=list)
    connect_timeout_s: float = 2.0
    shape: dict[str, Any] | None = None

    @property
    def steps(self) -> int:
        """Number of steps."""
        return len(self.rates) or len(self.connections)

    def step_config(self, index: int) -> dict[str, Any]:
        """The engine config of step ``index`` alone."""
        if self.shape:
            return {**self.config, "mode": "open", "shape": self.shape}
        if self.rates:
            return {**self.config, "mode": "open", "rate": self.rates[index]}
        return {**self.config, "mode": "closed", "connections": self.connections[index]}


@dataclass
class SweepOutcome:
    """What a sweep measured and why it ended.

    Attributes:
        steps: the steps measured, in order (an interrupted step included).
        address: the socket address the engine connected to.
        interrupted: Ctrl-C (or SIGTERM) stopped the sweep.
        target_lost: set when the target stopped accepting connections between steps:
            the message saying so; the remaining steps were skipped.
        agents_lost: a distributed run (``--agents``): which load agents died, and
            whether the run went on without them; None when none did.
    """

    steps: list[HttpStep] = field(default_factory=list)
    address: str = ""
    interrupted: bool = False
    target_lost: str | None = None
    agents_lost: str | None = None


def run_sweep(
    plan: Plan,
    engine: Engine | None = None,
    progress: ProgressFn | None = None,
    on_step: Callable[[SweepOutcome], None] | None = None,
) -> SweepOutcome:
    """Run every step of ``plan``, one engine call each.

    Args:
        plan: what to run.
        engine: ``perflab._core.http_run`` by default (a fake in tests).
        progress: called about every 100 ms with (step, steps, snapshot).
        on_step: called after each step with the outcome so far (to save it).

    Returns:
        The outcome; a Ctrl-C keeps every step measured, the current one included.

    Raises:
        UsageError: the engine rejected the config (e.g. more connections than
            ``ulimit -n`` allows, an unresolvable host).
    """
    if engine is None:
        from perflab._core import http_run as engine
    outcome = SweepOutcome()
    monitor = _clock_monitor()
    try:
        for index in range(plan.steps):
            if index and (lost := _lost(plan)):
                outcome.target_lost = (
                    f"the target stopped accepting connections before step "
                    f"{index + 1} ({lost}); the remaining "
                    f"{plan.steps - index} step(s) were skipped"
                )
                break
            monitor.start()
            raw = _call(engine, plan.step_config(index), index, plan.steps, progress)
            skew, flag = monitor.stop()
            outcome.address = raw.get("address", outcome.address)
            for step in (steps := [step_from_raw(s) for s in raw["steps"]]):
                step.clock_skew_ns, step.flagged = skew, flag
            outcome.steps += steps
            outcome.interrupted = bool(raw.get("interrupted"))
            if on_step:
                on_step(outcome)
            if outcome.interrupted:
                break
    except KeyboardInterrupt:
        outcome.interrupted = True
    return outcome


def _clock_monitor() -> Any:
    """The clock cross-check of :mod:`perflab.engines.integrity`, one bracket per step (the
    engine's per-request timestamps come from one clock, MONOTONIC; a step during which
    it disagreed with REALTIME, RAW or the TSC has untrustworthy rates and latencies)."""
    from perflab.engines import integrity

    monitor = integrity.Monitor()
    monitor.ready()
    return monitor


def _lost(plan: Plan) -> str | None:
    """Why the target can no longer be reached, or None when it still accepts (HTTP/3:
    not checked, the TCP check cannot tell whether QUIC answers)."""
    if plan.config.get("protocol") == "http3":
        return None
    try:
        check_reachable(plan.target, plan.connect_timeout_s)
    except UsageError as exc:
        return str(exc).split(";")[0]
    return None


def _call(
    engine: Engine, config: dict[str, Any], index: int, steps: int, progress: ProgressFn | None
) -> dict[str, Any]:
    """One engine call; its ValueError (a bad config) becomes a UsageError."""
    callback = (lambda snap: progress(index, steps, snap)) if progress else None
    try:
        return engine(config, callback)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def default_warmup(duration_s: float) -> float:
    """1 s, or a fifth of the step when that is shorter (so short steps still record)."""
    return min(1.0, duration_s / 5)


def request_label(
    config: dict[str, Any], requests_file: str | None, requests: Sequence[dict[str, Any]] | None
) -> str:
    """The benchmark name: ``GET http://…/`` or ``http://…/ (3 requests from FILE)``."""
    if requests:
        return f"{config['url']} ({len(requests)} requests from {requests_file})"
    return f"{config.get('method', 'GET')} {config['url']}"


def make_plan(
    url: str,
    duration_s: float,
    warmup_s: float,
    rates: Sequence[float] = (),
    connections: Sequence[int] = (),
    *,
    poisson: bool = False,
    connect_timeout_s: float = 2.0,
    read_timeout_s: float = 10.0,
    ok: str = "200-299",
    insecure: bool = False,
    threads: int | None = None,
    seed: int | None = None,
    method: str | None = None,
    headers: Sequence[tuple[str, str]] = (),
    body: bytes | str | None = None,
    requests: list[dict[str, Any]] | None = None,
    protocol: str = "http1",
    streams: int | None = None,
    check: bool = True,
    shape: dict[str, Any] | None = None,
    interval_s: float = 1.0,
) -> Plan:
    """Build and check the plan of a ``perflab http`` invocation from typed values (the
    options parsed by :func:`perflab.commands.options.http_plan`); with ``check`` the
    engine checks every step on this machine too (load agents check their own share on
    theirs instead).

    Args:
        url: the target, http(s)://HOST[:PORT]/PATH.
        duration_s / warmup_s: each step's length and its unrecorded start, s
            (``warmup_s`` < ``duration_s``; :func:`default_warmup` gives the default).
        rates: open loop: offered rate of each step, req/s.
        connections: closed loop: connections of each step; with ``rates``, one number:
            the connection pool's cap.
        poisson: open loop: Poisson arrivals instead of evenly spaced ones.
        connect_timeout_s / read_timeout_s: the engine's timeouts, s.
        ok: statuses that count as success, checked by :func:`parse_ok` ("200-299").
        insecure: skip TLS certificate checks.
        threads: engine threads (None: the engine's default); seed: Poisson seed.
        method / headers / body: the one request sent (method None: GET).
        requests: instead, requests sent round-robin (:func:`perflab.engines.http.requests_file.load_requests`).
        shape: open loop: a load shape (:mod:`perflab.engines.http.shapes`) the one step
            follows instead of its fixed rate (``rates`` then holds the shape's peak).
        interval_s: the timeline's interval, s (0: no timeline).
        protocol: "http1", "http2" (``--http2``: ALPN h2 over https, prior knowledge
            h2c over http) or "http3" (``--http3``: QUIC, https only).
        streams: HTTP/2's or HTTP/3's concurrent streams per connection (None: 1).

    Raises:
        UsageError: any bad value: URL, rates, connections, --ok, the load's shape, or
            (``check``) a step the engine refuses.
    """
    target = parse_url(url)
    if warmup_s >= duration_s:
        raise UsageError(
            f"warmup {warmup_s:g} s must be shorter than the duration {duration_s:g} s"
        )
    rates, connections = list(rates), list(connections)
    check_load(rates, connections, poisson, threads)
    config: dict[str, Any] = {
        "url": target.url,
        "duration_s": duration_s,
        "warmup_s": warmup_s,
        "connect_timeout_s": connect_timeout_s,
        "read_timeout_s": read_timeout_s,
        "ok": parse_ok(ok),
        "insecure": insecure,
        "threads": threads,
        "seed": seed,
        "interval_s": interval_s,
    }
    if protocol not in ("http1", "http2", "http3"):
        raise UsageError(f"unknown protocol {protocol!r}; use http1, http2 or http3")
    if streams is not None and protocol == "http1":
        raise UsageError("--streams N is streams per connection: add --http2 or --http3")
    if streams is not None and not 1 <= streams <= MAX_STREAMS:
        raise UsageError(f"--streams {streams} must be between 1 and {MAX_STREAMS}")
    if protocol == "http3" and target.scheme != "https":
        raise UsageError(f"--http3 runs over QUIC, always encrypted: use https://, not {url}")
    if protocol != "http1":
        config.update({"protocol": protocol, "streams": streams or 1})
    if requests is not None:
        check_request_source(method, headers, body)
        config["requests"] = requests
    else:
        config.update({"method": (method or "GET").upper(), "headers": list(headers), "body": body})
    if rates:
        config["arrival"] = "poisson" if poisson else "constant"
        config["connections"] = connections[0] if connections else None
    plan = Plan(target, config, rates, [] if rates else connections, connect_timeout_s, shape)
    if check:
        check_plan(plan)
    return plan


def check_plan(plan: Plan) -> None:
    """Have the engine check every step's config before anything is sent (the engine's
    own rules, one source of truth: e.g. a rate above what its threads can schedule, more
    threads than cores, more connections than ``ulimit -n`` allows).

    Raises:
        UsageError: the engine's one-line reason.
    """
    from perflab._core import http_check

    for index in range(plan.steps):
        try:
            http_check(plan.step_config(index))
        except ValueError as exc:
            raise UsageError(str(exc)) from None


def check_load(
    rates: Sequence[float], conns: Sequence[int], poisson: bool, threads: int | None
) -> None:
    """Open loop (--rate), closed loop (--connections), never neither. Raises UsageError."""
    if not rates and not conns:
        raise UsageError(
            "give --rate (open loop, requests/s, e.g. --rate 1000:10000:1000) or "
            "--connections N (closed loop)"
        )
    if rates and len(conns) > 1:
        raise UsageError(
            "with --rate, --connections is the connection pool's cap: give one "
            "number (a list of counts is a closed-loop sweep, without --rate)"
        )
    if poisson and not rates:
        raise UsageError("--poisson shapes open-loop arrivals: it needs --rate")
    if threads is not None and threads < 1:
        raise UsageError(f"--threads {threads} must be at least 1")


def check_request_source(
    method: str | None, headers: Sequence[tuple[str, str]], body: bytes | str | None
) -> None:
    """With ``--requests`` (each request's method, headers and body from a file) none of
    the one request's own may be given. Raises UsageError naming the options."""
    if method or headers or body is not None:
        raise UsageError(
            "--requests FILE gives each request's method, headers and body; "
            "drop --method, --header and --body"
        )
