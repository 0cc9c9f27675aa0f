"""Bounds of a distributed ``perflab http --agents`` run: how many agents a machine or a
cluster can hold, and how long joining or starting Ray may take.

Each agent is a process of its own (a Ray worker: Python, Ray and perflab imported, the
engine's threads); more agents than a node's cores only compete for the same cores, and
1,000 of them on a 2-core machine never finished starting. A node holds at most
:data:`AGENTS_PER_CORE` agents per core (the count of a local Ray instance is checked
before Ray starts; a joined cluster's nodes by the CPUs Ray reports).

Joining a cluster at an address nothing listens on left Ray retrying for minutes. The
address is checked first (:func:`check_address`: a TCP connection within
:data:`CONNECT_S`, then the HTTP/2 settings frame every gRPC server — Ray's GCS and its
Ray Client server — answers a client's preface with), and Ray's own start or join is
bounded (:class:`Deadline`: the main thread is interrupted at the deadline; should Ray
not return to Python within :data:`GRACE_S` after that, the process ends with the
error line, exit 2: nothing was measured yet).
"""

from __future__ import annotations

import _thread
import math
import os
import socket
import sys
import threading
from types import TracebackType
from typing import Any

from perflab.errors import UsageError

#: Most agents per core of a node.
AGENTS_PER_CORE = 4
#: Longest wait for a TCP connection to the cluster's address, and for its first
#: HTTP/2 frame, s each.
CONNECT_S = 5.0
#: Longest wait for Ray to join a cluster by its GCS address, s (a reachable GCS answers within seconds;
#: an HTTP/2 server that is not Ray's passes :func:`check_address` and is found out here).
JOIN_S = 30.0
#: Longest wait for a join through Ray Client (``ray://``), s. The head's proxy starts a
#: server process for each driver and waits for it up to its
#: ``RAY_CLIENT_SERVER_CHECK_CHANNEL_TIMEOUT_S`` (30 s by default; 120 s as
#: docs/distributed.md advises for a busy head), then refuses the driver, which perflab
#: retries. perflab waits longer than that, so the proxy's answer comes first: with
#: :data:`JOIN_S` a join to a head configured as advised was cut off at 30 s while its
#: server was still starting (seen on a loaded 2-core machine).
CLIENT_JOIN_S = 150.0
#: After the deadline, how long Ray has to return to Python before the process ends, s.
GRACE_S = 10.0
#: The HTTP/2 client connection preface and an empty SETTINGS frame (RFC 9113 §3.4).
_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"


def most_agents(cores: float) -> int:
    """How many agents a node of ``cores`` CPUs holds (at least 1)."""
    return max(1, int(AGENTS_PER_CORE * max(cores, 1)))


def check_local(agents: int) -> None:
    """Refuse more agents than this machine holds, before a local Ray starts.

    Raises:
        UsageError: ``agents`` above :func:`most_agents` of this machine's cores.
    """
    cores = os.cpu_count() or 1
    if agents > most_agents(cores):
        raise UsageError(
            f"--agents {agents}: this machine has {cores} core(s) and holds at most "
            f"{most_agents(cores)} agents ({AGENTS_PER_CORE} per core; each is a process "
            "of its own, and more only compete for the same cores): use fewer --agents, "
            "or --cluster ADDRESS of a cluster with more nodes"
        )


def check_cluster(agents: int, node_cores: list[float]) -> None:
    """Refuse more agents than a joined cluster's nodes hold.

    Args:
        agents: how many agents were asked for.
        node_cores: each alive node's CPUs as Ray reports them (0 when unknown: 1 core).

    Raises:
        UsageError: ``agents`` above the sum of :func:`most_agents` over the nodes.
    """
    room = sum(most_agents(c) for c in node_cores)
    if agents > room:
        raise UsageError(
            f"--agents {agents}: the cluster's {len(node_cores)} node(s) hold at most "
            f"{room} agents ({AGENTS_PER_CORE} per core, {math.fsum(node_cores):g} cores): "
            "use fewer --agents, or add nodes"
        )


def _host_port(address: str) -> tuple[str, int] | None:
    """(host, port) of ``HOST:PORT`` or ``ray://HOST:PORT``; None for local or auto."""
    if address in ("local", "auto"):
        return None
    rest = address.split("://", 1)[1] if "://" in address else address
    rest = rest.split("/", 1)[0]
    host, sep, port = rest.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(
            f"--cluster {address!r}: write local, auto, ray://HOST:10001 or HOST:PORT "
            "(the GCS address, e.g. 10.0.0.5:6379)"
        )
    return host.strip("[]") or "127.0.0.1", int(port)


def check_address(address: str, timeout_s: float = CONNECT_S) -> None:
    """Refuse, within about 2 × ``timeout_s``, a cluster address that cannot be Ray's:
    nothing listens there, or what listens does not speak gRPC (HTTP/2).

    Raises:
        UsageError: a malformed address, a refused or silent connection, or a server
            that does not answer an HTTP/2 preface with a SETTINGS frame.
    """
    where = _host_port(address)
    if where is None:
        return
    host, port = where
    fix = "check the address (ray status on a node prints it), or drop --cluster to start one here"
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as sock:
            sock.settimeout(timeout_s)
            sock.sendall(_PREFACE)
            head = _read(sock, 9)
    except TimeoutError:
        raise UsageError(
            f"cannot join the Ray cluster {address!r}: no answer within {timeout_s:g} s; {fix}"
        ) from None
    except OSError as exc:
        raise UsageError(
            f"cannot join the Ray cluster {address!r}: {exc.strerror or exc}; {fix}"
        ) from None
    if len(head) < 9 or head[3] != 0x4:  # frame type 4: SETTINGS
        raise UsageError(
            f"cannot join the Ray cluster {address!r}: what listens there does not speak "
            f"Ray's protocol (gRPC); {fix}"
        )


def _read(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            break
        data += chunk
    return data


class Deadline:
    """Context manager bounding a call that may block in Ray (``ray.init``).

    At ``seconds`` the main thread is interrupted; leaving the block then raises
    UsageError(``message``) instead of the interrupt. Should the main thread not get
    back to Python within :data:`GRACE_S` after that, ``error: message`` is written and
    the process exits 2 (nothing was measured yet). A Ctrl-C stays a Ctrl-C.

    Args:
        seconds: the bound, s.
        message: the error's text, saying what to do.
    """

    def __init__(self, seconds: float, message: str) -> None:
        self.seconds = seconds
        self.message = message
        self.fired = threading.Event()
        self.done = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True, name="perflab-deadline")

    def _watch(self) -> None:
        if self.done.wait(self.seconds):
            return
        self.fired.set()
        _thread.interrupt_main()
        if not self.done.wait(GRACE_S):
            sys.stderr.write(f"error: {self.message}\n")
            sys.stderr.flush()
            os._exit(2)

    def __enter__(self) -> Deadline:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.done.set()
        if self.fired.is_set() and (kind is None or issubclass(kind, KeyboardInterrupt)):
            raise UsageError(self.message) from None


def init_ray(ray: Any, address: str, kwargs: dict[str, Any], seconds: float) -> None:
    """``ray.init(address=address, **kwargs)`` within ``seconds`` (:class:`Deadline`),
    then this process's SIGTERM handler back: Ray's own (``sys.exit(15)``) would end a
    run without saving it and with exit 15, not 143.

    Raises:
        UsageError: Ray did not start or join within ``seconds``.
        perflab.interrupts.Stopped: a SIGTERM while Ray started (Ray's handler exits).
        What ``ray.init`` raises (ConnectionError, …): the caller words it.
    """
    import signal

    handler = signal.getsignal(signal.SIGTERM)
    verb = "start" if address == "local" else "join"
    try:
        with Deadline(
            seconds,
            f"cannot {verb} the Ray cluster {address!r}: Ray did not {verb} it within "
            f"{seconds:g} s; check the address and that the cluster is up (ray status on a "
            "node), or drop --cluster to start one here",
        ):
            ray.init(address=address, **kwargs)
    except SystemExit as exc:  # Ray's handler, while it starts: sys.exit(SIGTERM)
        if exc.code != signal.SIGTERM:
            raise
        from perflab.interrupts import Stopped

        raise Stopped(signal.SIGTERM) from None
    finally:
        if handler is not None:
            signal.signal(signal.SIGTERM, handler)
