"""The bounds of a distributed run (engines/http/cluster/bounds.py): agents a machine or
cluster holds, the cluster address checked before joining, Ray's start or join bounded.
Loopback only; no Ray started."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from perflab.engines.http.cluster import bounds
from perflab.errors import UsageError


def test_a_machine_holds_four_agents_per_core(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bounds.os, "cpu_count", lambda: 2)
    bounds.check_local(8)
    with pytest.raises(UsageError, match=r"^--agents 1000: this machine has 2 core\(s\)"):
        bounds.check_local(1000)
    bounds.check_cluster(12, [2.0, 1.0])
    with pytest.raises(UsageError, match="2 node\\(s\\) hold at most 12 agents"):
        bounds.check_cluster(13, [2.0, 1.0])
    assert bounds.most_agents(0) == 4  # a node whose CPUs Ray does not report


@pytest.fixture
def listener() -> Iterator[tuple[socket.socket, int]]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    yield server, server.getsockname()[1]
    server.close()


def test_nothing_listening_is_refused_at_once() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: refused
        with pytest.raises(UsageError, match="Connection refused"):
            bounds.check_address(f"127.0.0.1:{port}")
        with pytest.raises(UsageError, match="Connection refused"):
            bounds.check_address(f"ray://127.0.0.1:{port}")


def test_a_silent_listener_is_refused_within_the_bound(
    listener: tuple[socket.socket, int],
) -> None:
    _, port = listener  # the kernel accepts; nobody answers
    started = time.monotonic()
    with pytest.raises(UsageError, match="no answer within 0.3 s"):
        bounds.check_address(f"127.0.0.1:{port}", timeout_s=0.3)
    assert time.monotonic() - started < 30  # a generous bound: the point is it ends


def test_a_server_that_is_not_grpc_is_refused(listener: tuple[socket.socket, int]) -> None:
    server, port = listener

    def answer() -> None:
        conn, _ = server.accept()
        conn.recv(100)
        conn.sendall(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")
        conn.close()

    threading.Thread(target=answer, daemon=True).start()
    with pytest.raises(UsageError, match="does not speak Ray's protocol"):
        bounds.check_address(f"127.0.0.1:{port}", timeout_s=10)


def test_a_grpc_like_server_passes(listener: tuple[socket.socket, int]) -> None:
    server, port = listener

    def answer() -> None:
        conn, _ = server.accept()
        conn.recv(100)
        conn.sendall(b"\x00\x00\x00\x04\x00\x00\x00\x00\x00")  # an empty SETTINGS frame
        conn.close()

    threading.Thread(target=answer, daemon=True).start()
    bounds.check_address(f"127.0.0.1:{port}")
    bounds.check_address("local")
    bounds.check_address("auto")


@pytest.mark.parametrize("address", ["127.0.0.1", "host:port", "ray://h:0", "h:70000"])
def test_malformed_addresses_are_refused(address: str) -> None:
    with pytest.raises(UsageError, match="write local, auto"):
        bounds.check_address(address)


def test_the_deadline_turns_a_wait_into_one_error() -> None:
    with pytest.raises(UsageError, match="^Ray did not join"):
        with bounds.Deadline(0.2, "Ray did not join; check the address"):
            for _ in range(600):  # a Python-level wait, as Ray's retry loop is
                time.sleep(0.05)
    with bounds.Deadline(30, "never"):  # done in time: nothing happens
        pass


def test_a_wait_that_never_returns_to_python_ends_the_process() -> None:
    code = (
        "import threading\n"
        "from perflab.engines.http.cluster import bounds\n"
        "bounds.GRACE_S = 0.3\n"
        "lock = threading.Lock(); lock.acquire()\n"
        "with bounds.Deadline(0.2, 'Ray did not start; try again'):\n"
        "    lock.acquire()  # not interruptible by interrupt_main\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip() == "error: Ray did not start; try again"
