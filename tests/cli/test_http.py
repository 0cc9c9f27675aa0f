"""`perflab http` through the real entry point against `perflab serve` on 127.0.0.1:
a sweep with its table, results file and chart; re-rendering; every bad input of
issue 4; Ctrl-C and a server killed mid-sweep. Steps are 0.5-1 s at ≤ 300 req/s.
"""

from __future__ import annotations

import csv
import io
import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from perflab import _core
from tests.conftest import free_port, popen_perflab

FAST = ["--duration", "0.5s", "--warmup", "0.1s", "--threads", "1", "--quiet"]


def one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


@pytest.fixture
def server() -> Any:
    with _core.serve({"host": "127.0.0.1", "port": 0, "delay": "1ms"}) as s:
        yield s


def test_sweep_prints_a_table_writes_results_and_a_chart(
    tmp_path: Path, server: Any, perflab_cli
) -> None:
    out, chart = tmp_path / "sweep.json", tmp_path / "sweep.png"
    result = perflab_cli(
        "http",
        f"http://{server.address}/",
        "--rate",
        "100:200:100",
        *FAST,
        "--json",
        str(out),
        "--chart",
        str(chart),
        "--slo",
        "500ms",
        "--format",
        "markdown",
    )
    assert result.returncode == 0, result.stderr
    assert "| offered | achieved | drained | error % |" in result.stdout
    assert "| 100/s |" in result.stdout and "| 200/s |" in result.stdout
    assert "capacity estimate" in result.stdout
    assert f"results saved to {out}" in result.stderr and chart.stat().st_size > 10_000
    data = json.loads(out.read_text())
    assert data["kind"] == "http" and len(data["benchmarks"][0]["steps"]) == 2
    first = data["benchmarks"][0]["steps"][0]
    assert first["ok_responses"] > 20 and first["latency"]["encoded"]
    assert data["benchmarks"][0]["summary"]["steps"][0]["verdict"] in ("ok", "generator-limited")
    shown = perflab_cli("show", str(out), "--format", "csv")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[0].startswith("step,mode,offered_rate")
    assert len(shown.stdout.splitlines()) == 3
    table = perflab_cli("show", str(out))
    assert table.returncode == 0 and "verdict" in table.stdout


def test_closed_loop_and_a_requests_file(tmp_path: Path, server: Any, perflab_cli) -> None:
    reqs = tmp_path / "reqs.jsonl"
    reqs.write_text('{"path": "/a"}\n{"method": "POST", "path": "/b", "body": "x"}\n')
    result = perflab_cli(
        "http",
        f"http://{server.address}/",
        "--connections",
        "2",
        *FAST,
        "--requests",
        str(reqs),
        "--json",
        str(tmp_path / "c.json"),
    )
    assert result.returncode == 0, result.stderr
    assert "2 conn" in result.stdout
    data = json.loads((tmp_path / "c.json").read_text())
    assert data["benchmarks"][0]["name"].endswith(f"(2 requests from {reqs})")
    assert data["benchmarks"][0]["steps"][0]["mode"] == "closed"


def test_http2_closed_loop_multiplexes_and_prints_the_phases(
    tmp_path: Path, server: Any, perflab_cli
) -> None:
    out, table = tmp_path / "h2.json", tmp_path / "h2.csv"
    result = perflab_cli(
        "http",
        f"http://{server.address}/",
        "--http2",
        "--streams",
        "4",
        "--connections",
        "2",
        *FAST,
        "--json",
        str(out),
        "--csv",
        str(table),
    )
    assert result.returncode == 0, result.stderr
    assert "Phases" in result.stdout and "h2 ×4" in result.stdout
    (step,) = json.loads(out.read_text())["benchmarks"][0]["steps"]
    assert (step["protocol"], step["streams"], step["connections"]) == ("h2", 4, 2)
    # Eight request loops on two connections, every one opened in the recorded window
    # or the warmup; each response's first byte and body timed.
    assert step["connections_opened"] == step["connections_closed"] == 2
    assert step["ttfb"]["count"] >= step["latency"]["count"] > 0
    assert step["body_time"]["count"] == sum(step["status_counts"].values())
    (row,) = csv.DictReader(io.StringIO(table.read_text()))
    assert row["protocol"] == "h2" and row["streams"] == "4"
    assert float(row["ttfb_p50_s"]) >= 0.0009  # the server's 1 ms delay


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["not-a-url", "--rate", "10"], "malformed"),
        (["ftp://127.0.0.1/", "--rate", "10"], "not supported"),
        (["http://127.0.0.1:1/", "--rate", "0"], "above zero"),
        (["http://127.0.0.1:1/", "--rate", "-5"], "above zero"),
        (["http://127.0.0.1:1/", "--rate", "10", "--duration", "0s"], "above zero"),
        (["http://127.0.0.1:1/", "--rate", "10", "--duration=-2s"], "above zero"),
        (["http://127.0.0.1:1/"], "give --rate"),
        (["http://127.0.0.1:1/", "--rate", "10", "--header", "nocolon"], "Name: value"),
        # refused before the target is even tried (issue 12: 1e10 used to hang for minutes)
        (
            ["http://127.0.0.1:1/", "--rate", "1e10", "--threads", "1"],
            "at most 1,000,000 requests/s per engine thread",
        ),
        (["http://127.0.0.1:1/", "--rate", "10", "--threads", "1000"], "more than the"),
        (["http://127.0.0.1:1/", "--rate", "10", "--streams", "4"], "add --http2"),
        (["http://127.0.0.1:1/", "--rate", "10", "--http2", "--streams", "0"], "between 1"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv: list[str], message: str, perflab_cli) -> None:
    result = perflab_cli("http", *argv, "--quiet", timeout=30)
    assert result.returncode == 2
    assert message in one_error_line(result.stderr)


def test_unreachable_target_is_a_clear_line_not_a_hang(perflab_cli) -> None:
    started = time.monotonic()
    result = perflab_cli(
        "http", f"http://127.0.0.1:{free_port()}/", "--rate", "10", *FAST, timeout=30
    )
    assert result.returncode == 2 and time.monotonic() - started < 20
    assert "connection refused" in one_error_line(result.stderr)


def test_more_connections_than_the_open_file_limit_names_ulimit(server: Any, perflab_cli) -> None:
    result = perflab_cli(
        "http", f"http://{server.address}/", "--connections", "10000000", *FAST, timeout=30
    )
    assert result.returncode == 2
    assert "ulimit -n" in one_error_line(result.stderr)


def _wait_for_requests(server: Any, count: int, proc: Any, within_s: float = 120.0) -> None:
    """Wait until ``server`` has answered ``count`` requests (or ``proc`` ended): the
    load is under way however long a busy machine took to start it; bounded."""
    deadline = time.monotonic() + within_s
    while server.stats().get("requests", 0) < count:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"fewer than {count} requests in {within_s:g} s"
        time.sleep(0.01)


def _three_step_sweep(address: str, out: Path) -> Any:
    """``perflab http`` of three 1 s steps at 100/s against ``address``, its results to
    ``out``, started in the background (stdout and stderr piped, as text)."""
    return popen_perflab(
        ["http", f"http://{address}/", "--rate", "100,100,100", "--duration", "1s"]
        + ["--warmup", "0.1s", "--threads", "1", "--quiet", "--json", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_ctrl_c_keeps_the_steps_measured(tmp_path: Path, server: Any) -> None:
    out = tmp_path / "int.json"
    proc = _three_step_sweep(server.address, out)
    # inside the second step: the first (0.1 s warm-up + 0.9 s at 100/s) is 100 requests
    _wait_for_requests(server, 110, proc)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130, stderr
    assert "interrupted" in stdout
    steps = json.loads(out.read_text())["benchmarks"][0]["steps"]
    assert 1 <= len(steps) <= 2 and steps[0]["ok_responses"] > 0
    assert steps[-1]["interrupted"] or len(steps) == 1


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_the_highest_rate_at_once(
    tmp_path: Path, server: Any, sig: signal.Signals
) -> None:
    # A million requests/s (one thread's most) kept perflab busy; the signal still ends
    # the step within the engine's 100 ms check, and what was measured is saved.
    out = tmp_path / "fast.json"
    proc = popen_perflab(
        [
            "http",
            f"http://{server.address}/",
            "--rate",
            "1e6",
            "--duration",
            "300s",
            "--threads",
            "1",
            "--quiet",
            "--json",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_for_requests(server, 1000, proc)  # the step is under way
    sent = time.monotonic()
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=120)
    # 100 ms to see it, then the save, the table and interpreter exit on a busy machine:
    # seconds at most, against the 300 s the step would have lasted.
    assert time.monotonic() - sent < 30 and proc.returncode == 128 + sig, stderr  # 130, 143
    (step,) = json.loads(out.read_text())["benchmarks"][0]["steps"]
    assert step["interrupted"] and step["connections_opened"] == step["connections_closed"]


def test_a_server_killed_mid_sweep_ends_it_with_results_kept(tmp_path: Path) -> None:
    serve = _core.serve({"host": "127.0.0.1", "port": 0})
    try:
        address = serve.address
        out = tmp_path / "killed.json"
        http = _three_step_sweep(address, out)
        # stopped once the first step is done and the second under way (110 answers),
        # an event rather than a guess at the start-up time
        _wait_for_requests(serve, 110, http)
        serve.stop()
        stdout, stderr = http.communicate(timeout=120)
    finally:
        serve.stop()
        serve.join()
    assert http.returncode == 1, stderr
    assert "stopped accepting" in stdout
    steps = json.loads(out.read_text())["benchmarks"][0]["steps"]
    assert steps and steps[0]["ok_responses"] > 0


def test_responses_that_all_came_while_draining_are_successes(tmp_path: Path, perflab_cli) -> None:
    # Every response takes 1 s, the step 0.5 s: none completes inside the window, all
    # are drained. The achieved rate is 0, the step saturated, and the run succeeded.
    with _core.serve({"host": "127.0.0.1", "port": 0, "delay": "1s"}) as slow:
        out = tmp_path / "slow.json"
        result = perflab_cli(
            "http",
            f"http://{slow.address}/",
            "--rate",
            "6",
            "--duration",
            "0.5s",
            "--warmup",
            "0s",
            "--threads",
            "1",
            "--quiet",
            "--json",
            str(out),
            "--format",
            "csv",
        )
    assert result.returncode == 0, result.stderr
    (step,) = json.loads(out.read_text())["benchmarks"][0]["steps"]
    assert (step["ok_responses"], step["drained"]) == (0, 3) and step["drain_s"] > 0.5
    (record,) = csv.DictReader(io.StringIO(result.stdout))
    assert float(record["achieved_rate"]) == 0 and record["verdict"] == "saturated"
