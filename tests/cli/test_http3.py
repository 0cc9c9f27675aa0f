"""HTTP/3 end to end through the real entry points: `perflab serve --http3` (QUIC on the
UDP port of its TCP port's number, self-signed) and `perflab http --http3 --insecure`,
closed and open loop. Steps are 0.5 s at 100 req/s or 2 connections: the tests assert
counts, the protocol and which phases were recorded, never speeds."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.test_http import FAST, one_error_line
from tests.conftest import popen_perflab


@pytest.fixture
def h3_address() -> Iterator[str]:
    """`perflab serve --http3 --port 0 --delay 1ms --body-size 64`'s host:port."""
    proc = popen_perflab(
        ["serve", "--http3", "--port", "0", "--delay", "1ms", "--body-size", "64"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        assert "HTTP/3 on https://127.0.0.1:" in line, line
        yield line.split("https://")[1].split("/")[0]
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=10)


def _run(perflab_cli, address: str, out: Path, *load: str) -> tuple[dict, str]:  # type: ignore[no-untyped-def]
    """One `perflab http --http3 --insecure` step: its results and its printed tables."""
    result = perflab_cli(
        "http", f"https://{address}/", "--http3", "--insecure", *load, *FAST, "--json", str(out)
    )
    assert result.returncode == 0, result.stderr
    (step,) = json.loads(out.read_text())["benchmarks"][0]["steps"]
    assert step["protocol"] == "h3"
    assert step["connections_opened"] == step["connections_closed"] >= 1
    assert step["errors"] == {} or not any(step["errors"].values()), step["errors"]
    # QUIC has no TCP connect: the handshake is recorded as tls_handshake.
    assert step["connect"]["count"] == 0
    assert step["ttfb"]["count"] >= step["latency"]["count"] > 0
    assert step["body_time"]["count"] == sum(step["status_counts"].values())
    assert set(step["status_counts"]) == {"200"}
    return step, result.stdout


def test_closed_loop_multiplexes_streams_on_quic(
    tmp_path: Path, h3_address: str, perflab_cli
) -> None:
    step, printed = _run(
        perflab_cli, h3_address, tmp_path / "c.json", "--connections", "2", "--streams", "4"
    )
    assert "h3 ×4" in printed and "QUIC has no TCP connect" in printed
    assert (step["streams"], step["connections"], step["mode"]) == (4, 2, "closed")
    # Eight request loops on two QUIC connections, each handshake timed once.
    assert step["connections_opened"] == 2
    assert step["bytes_in"] == 64 * sum(step["status_counts"].values())


def test_open_loop_counts_every_intended_request(
    tmp_path: Path, h3_address: str, perflab_cli
) -> None:
    step, _ = _run(perflab_cli, h3_address, tmp_path / "o.json", "--rate", "100", "--streams", "2")
    assert step["mode"] == "open" and step["offered_rate"] == pytest.approx(100, rel=0.01)
    assert step["send_lag"]["count"] == step["requests_sent"] > 0
    # Handshakes are timed for connections recorded requests opened (not the warmup's).
    assert step["tls_handshake"]["count"] <= step["connections_opened"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["http://127.0.0.1:1/", "--http3"], "https://"),
        (["https://127.0.0.1:1/", "--http2", "--http3"], "exclude each other"),
    ],
)
def test_bad_http3_input_is_one_line_and_exit_2(argv: list[str], message: str, perflab_cli):  # type: ignore[no-untyped-def]
    result = perflab_cli("http", *argv, "--rate", "10", "--quiet", timeout=30)
    assert result.returncode == 2
    assert message in one_error_line(result.stderr)
