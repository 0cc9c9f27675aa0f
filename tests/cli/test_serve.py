"""`perflab serve` through the real entry point: it prints its address at once, answers
with the configured behaviour, stops on Ctrl-C, and rejects bad options in one line."""

from __future__ import annotations

import http.client
import signal
import socket
import subprocess
import time
from typing import Any

import pytest

from tests.conftest import popen_perflab


def start(*argv: str) -> tuple[subprocess.Popen, str]:
    proc = popen_perflab(
        ["serve", "--port", "0", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    line = proc.stdout.readline()  # type: ignore[union-attr]
    assert line.startswith("perflab serve listening on http://127.0.0.1:"), line
    return proc, line.split("http://")[1].split("/")[0]


def get(address: str, path: str = "/") -> tuple[int, bytes, float]:
    host, port = address.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    started = time.monotonic()
    conn.request("GET", path)
    response = conn.getresponse()
    body = response.read()
    conn.close()
    return response.status, body, time.monotonic() - started


def test_prints_its_address_serves_and_stops_on_ctrl_c() -> None:
    proc, address = start("--delay", "50ms", "--body-size", "7")
    try:
        status, body, seconds = get(address)
        assert status == 200 and body == b"x" * 7
        # A 50 ms delay: at least 50 ms, and not 50 s (a unit slip, which the client's
        # 10 s timeout would also catch); a busy machine may add seconds, not tens of them.
        assert 0.05 <= seconds < 10.0
    finally:
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=10)
    assert proc.returncode == 0, stderr
    assert "stopped: 1 requests on 1 connections" in stderr


def test_error_rate_one_answers_500() -> None:
    proc, address = start("--error-rate", "1")
    try:
        assert get(address)[0] == 500
    finally:
        proc.terminate()
        proc.communicate(timeout=10)
    assert proc.returncode == 0  # SIGTERM stops it like Ctrl-C


def busy_port() -> Any:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    return sock


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--error-rate", "2"], "between 0 and 1"),
        (["--delay", "1xs"], "--delay 1xs"),
        (["--stall", "10s/1s"], "shorter than its period"),
        (["--serialize", "-1ms"], '--serialize -1ms: "-1ms" must not be negative'),
        (["--delay", "exp:5x"], '--delay exp:5x: "5x" is not a duration'),
        (["--body-size", "-1"], "0 or more"),
        (["--port", "70000"], "not a port"),
        (["--threads", "0"], "at least 1"),
        (["--host", "192.0.2.1"], "is not an address of this machine: use 127.0.0.1"),
    ],
)
def test_bad_options_are_one_line_and_exit_2(argv: list[str], message: str, perflab_cli) -> None:
    result = perflab_cli("serve", *argv, timeout=30)
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and message in errors[0], result.stderr


def test_a_port_in_use_says_what_to_do(perflab_cli) -> None:
    with busy_port() as sock:
        result = perflab_cli("serve", "--port", str(sock.getsockname()[1]), timeout=30)
    assert result.returncode == 2
    assert "--port 0 for a free one" in result.stderr
