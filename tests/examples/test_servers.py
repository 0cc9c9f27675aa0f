"""examples/loopback_servers.py: servers start on loopback, answer, and never outlive their
starter (normal exit, an exception, SIGKILL of the starter)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import ROOT
from tests.examples.conftest import need_server

STARTER = """
import sys, time
sys.path.insert(0, {folder!r})
import loopback_servers as s
server = s.ensure({kind!r})
print(server.pid, server.port, flush=True)
mode = {mode!r}
if mode == "raise":
    raise RuntimeError("a failing benchmark")
if mode == "hang":
    time.sleep(60)
"""


def _gone(pid: int, within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:  # a zombie whose parent is gone counts as stopped
            with open(f"/proc/{pid}/stat") as f:
                if f.read().split(")")[-1].split()[0] == "Z":
                    return True
        except OSError:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("kind,binary", [("memcached", "memcached"), ("redis", "redis-server")])
@pytest.mark.parametrize("mode", ["exit", "raise", "kill"])
def test_server_stops_with_its_starter(kind: str, binary: str, mode: str) -> None:
    need_server(binary)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERFLAB_")}
    code = STARTER.format(
        folder=str(ROOT / "examples"), kind=kind, mode="hang" if mode == "kill" else mode
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    line = proc.stdout.readline().split()
    assert line, proc.stderr.read()
    pid, port = int(line[0]), int(line[1])
    assert pid != proc.pid and port > 0
    if mode == "kill":
        os.kill(proc.pid, signal.SIGKILL)  # no atexit: the kernel's parent-death signal
    proc.wait(30)
    assert _gone(pid), f"{kind} (pid {pid}) outlived its starter ({mode})"


def test_missing_binary_says_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    import loopback_servers as s

    monkeypatch.delenv("PERFLAB_REDIS", raising=False)
    monkeypatch.setattr(s, "_binary", lambda kind: None)
    with pytest.raises(s.ServerError, match="make bench-deps"):
        s.ensure("redis")


def test_malformed_environment_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import loopback_servers as s

    monkeypatch.setenv("PERFLAB_REDIS", "nonsense")
    with pytest.raises(s.ServerError, match="host:port:pid"):
        s.ensure("redis")


def test_rss_of_this_process() -> None:
    import loopback_servers as s

    assert s.rss_bytes(os.getpid()) > 1_000_000
    assert s.rss_bytes(2**22 + 12345) is None
