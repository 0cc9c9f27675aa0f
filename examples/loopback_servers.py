"""Start memcached and redis-server on free loopback ports for the examples, and stop them.

The examples (cache.py, queues.py) need real servers. :func:`ensure` starts the
ones a benchmark file asks for when the environment does not already name
them, waits until each answers, and publishes ``host:port:pid`` in an
environment variable (``PERFLAB_MEMCACHED``, ``PERFLAB_REDIS``). perflab's
worker processes inherit the environment, so they connect to the servers that
the parent started instead of starting their own.

The servers never outlive the process that started them:
- an ``atexit`` hook stops them on a normal exit, an exception or Ctrl-C;
- each server is started with ``PR_SET_PDEATHSIG`` (Linux ``prctl``): the kernel
  sends it SIGTERM when the starting process dies, even by SIGKILL.

Only loopback addresses are used; each server gets its own temporary folder
(Redis persistence off) and a log that is shown when it fails to start.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HOST = "127.0.0.1"
#: how long a server may take to answer after it is started, seconds
START_TIMEOUT_S = 15.0
#: memory memcached may use before it evicts, MiB (1M Northwind rows take ~0.5 GiB)
MEMCACHED_MEMORY_MIB = 4096
_PR_SET_PDEATHSIG = 1


class ServerError(RuntimeError):
    """A server could not be found, started or reached; the message says what to do."""


@dataclass
class Server:
    """A running server.

    Attributes:
        kind: "memcached" or "redis".
        host, port: where it listens (loopback).
        pid: its process id (for its RSS in /proc/PID/status).
    """

    kind: str
    host: str
    port: int
    pid: int

    def to_env(self) -> str:
        """``host:port:pid``, the form :func:`from_env` reads."""
        return f"{self.host}:{self.port}:{self.pid}"


ENV = {"memcached": "PERFLAB_MEMCACHED", "redis": "PERFLAB_REDIS"}
BINARY = {"memcached": "memcached", "redis": "redis-server"}
_started: list[tuple[subprocess.Popen[bytes], Path]] = []


def from_env(kind: str) -> Server | None:
    """The server of ``kind`` named by the environment, or None.

    Raises:
        ServerError: the variable is malformed.
    """
    value = os.environ.get(ENV[kind])
    if not value:
        return None
    try:
        host, port, pid = value.rsplit(":", 2)
        return Server(kind, host, int(port), int(pid))
    except ValueError:
        raise ServerError(f"{ENV[kind]}={value!r}: expected host:port:pid") from None


def available(kind: str) -> bool:
    """True when the server of ``kind`` is running already or its binary is installed."""
    return from_env(kind) is not None or _binary(kind) is not None


def _binary(kind: str) -> str | None:
    return shutil.which(BINARY[kind]) or next(
        (
            p
            for p in (f"/usr/bin/{BINARY[kind]}", f"/usr/sbin/{BINARY[kind]}")
            if os.access(p, os.X_OK)
        ),
        None,
    )


def ensure(kind: str) -> Server:
    """The server of ``kind``: the one the environment names, else a new one started here.

    A started server is published in the environment (for child processes) and
    stopped when this process exits.

    Raises:
        ServerError: the binary is missing (``make bench-deps`` installs it), or
            the server did not answer within START_TIMEOUT_S.
    """
    server = from_env(kind)
    if server is not None:
        return server
    binary = _binary(kind)
    if binary is None:
        raise ServerError(
            f"{BINARY[kind]} is not installed; run `make bench-deps` "
            f"(Debian package {'redis-server' if kind == 'redis' else kind})"
        )
    for attempt in range(3):  # a free port can be taken between probe and bind: retry
        try:
            server = _start(kind, binary, _free_port())
            break
        except ServerError:
            if attempt == 2:
                raise
    os.environ[ENV[kind]] = server.to_env()
    return server


def _free_port() -> int:
    """A loopback TCP port that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def die_with_parent() -> None:
    """Get SIGTERM when the parent process dies (Linux prctl PR_SET_PDEATHSIG; a no-op
    elsewhere). Called in a child: a server before exec, a forked producer."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _command(kind: str, binary: str, port: int, folder: Path) -> list[str]:
    if kind == "memcached":
        cmd = [
            binary,
            "-l",
            HOST,
            "-p",
            str(port),
            "-U",
            "0",
            "-m",
            str(MEMCACHED_MEMORY_MIB),
            "-c",
            "1024",
            "-t",
            "2",
        ]
        # as root memcached needs -u; "root" keeps its credentials, since a change of
        # user would clear the parent-death signal (prctl(2))
        return cmd + (["-u", "root"] if os.geteuid() == 0 else [])
    return [
        binary,
        "--bind",
        HOST,
        "--port",
        str(port),
        "--save",
        "",
        "--appendonly",
        "no",
        "--daemonize",
        "no",
        "--protected-mode",
        "yes",
        "--dir",
        str(folder),
    ]


def _start(kind: str, binary: str, port: int) -> Server:
    folder = Path(tempfile.mkdtemp(prefix=f"perflab-{kind}-"))
    log = (folder / "server.log").open("wb")
    proc = subprocess.Popen(
        _command(kind, binary, port, folder),
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        preexec_fn=die_with_parent,
        cwd=folder,
    )
    log.close()
    if not _started:
        atexit.register(stop_all)
    _started.append((proc, folder))
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        if _answers(kind, port):
            return Server(kind, HOST, port, proc.pid)
        time.sleep(0.02)
    tail = (folder / "server.log").read_text(errors="replace")[-600:]
    _stop(proc, folder)
    _started.remove((proc, folder))
    raise ServerError(
        f"{BINARY[kind]} on {HOST}:{port} did not answer within "
        f"{START_TIMEOUT_S:.0f}s (exit code {proc.returncode}); its log: {tail!r}"
    )


def _answers(kind: str, port: int) -> bool:
    """True when the server answers its protocol's no-op (memcached version, Redis PING)."""
    probe, expect = (b"version\r\n", b"VERSION") if kind == "memcached" else (b"PING\r\n", b"+PONG")
    try:
        with socket.create_connection((HOST, port), timeout=0.5) as sock:
            sock.sendall(probe)
            return sock.recv(64).startswith(expect)
    except OSError:
        return False


def _stop(proc: subprocess.Popen[bytes], folder: Path) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    shutil.rmtree(folder, ignore_errors=True)


def stop_all() -> None:
    """Stop every server this process started (SIGTERM, then SIGKILL after 5 s)."""
    while _started:
        _stop(*_started.pop())
    for kind, name in ENV.items():
        server = from_env(kind)
        if server is not None and not _alive(server.pid):
            os.environ.pop(name, None)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def rss_bytes(pid: int) -> int | None:
    """Resident set size of process ``pid`` (VmRSS in /proc/PID/status), bytes; None if gone.

    The kernel's count of the process's pages in RAM, read from outside the
    process (as ``ps`` and psutil do), so it also works for the servers.
    """
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None
