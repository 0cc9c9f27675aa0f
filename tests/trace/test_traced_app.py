"""examples/traced_app under uvicorn: Server-Timing for the token holder, under perflab http."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import urllib.request

import pytest

from perflab import model
from tests.conftest import ROOT
from tests.trace.served import wait_until_up

pytest.importorskip(
    "uvicorn", reason="uvicorn is a test dependency that `make test` installs; run make test"
)

APP = ROOT / "examples" / "traced_app" / "app.py"
TOKEN = "t0ken-for-tests"


class Served:
    """The example app running on a free loopback port (a socket handed over: no race).

    Attributes:
        url: its base URL.
        dump: the trace file it writes at exit (PERFLAB_TRACE_DUMP).
    """

    def __init__(self, tmp_path) -> None:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        self.dump = tmp_path / "trace.json"
        env = {**os.environ, "PERFLAB_TRACE_DUMP": f"{self.dump},1h"}
        self.log = tmp_path / "app.log"  # a file, not a pipe nobody reads while it runs
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen(
                [sys.executable, str(APP), "--fd", str(sock.fileno()), "--token", TOKEN],
                pass_fds=[sock.fileno()],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        sock.close()
        wait_until_up(self.url + "/health", b"ok", self.proc, self.log, self.stop)

    def stop(self) -> None:
        """SIGTERM: uvicorn exits cleanly, and the trace file is written at exit."""
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)


@pytest.fixture
def served(tmp_path):
    server = Served(tmp_path)
    try:
        yield server
    finally:
        server.stop()


def get(url: str, token: str | None = None) -> tuple[bytes, dict[str, str]]:
    request = urllib.request.Request(url, headers={"X-Perflab-Token": token} if token else {})
    with urllib.request.urlopen(request, timeout=10) as r:
        return r.read(), {k.lower(): v for k, v in r.headers.items()}


def test_the_token_holder_sees_the_server_side_and_nobody_else(served):
    url = served.url
    body, headers = get(url + "/orders?customer=ALFKI", TOKEN)
    assert b"<h1>Orders of ALFKI</h1>" in body and body.count(b"<tr><td>") == 6
    timing = headers["server-timing"]
    metrics = dict(re.findall(r"([\w.]+);dur=([\d.]+)", timing))
    assert list(metrics) == ["db.orders", "render", "app"], timing
    assert float(metrics["app"]) >= float(metrics["db.orders"]) + float(metrics["render"])
    plain_body, plain_headers = get(url + "/orders?customer=ALFKI", "wrong")
    assert plain_body == body and "server-timing" not in plain_headers
    assert "server-timing" not in get(url + "/orders?customer=ALFKI")[1]
    assert "Traceback" not in served.log.read_text()


def test_under_perflab_http_every_request_is_a_span(served, perflab_cli, tmp_path):
    out = tmp_path / "http.json"
    proc = perflab_cli(
        "http",
        served.url + "/orders?customer=ALFKI",
        "--rate",
        "50",
        "--duration",
        "2s",
        "--warmup",
        "0s",
        "-H",
        f"X-Perflab-Token: {TOKEN}",
        "--redact",
        "X-Perflab-Token",
        "--json",
        str(out),
        "--quiet",
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert TOKEN not in out.read_text()  # the secret is redacted from the results file
    step = json.loads(out.read_text())["benchmarks"][0]["steps"][0]
    requests = sum(step["status_counts"].values())
    assert step["status_counts"].get("200", 0) == requests >= 50
    # perflab http's server-side breakdown: the app's spans, totals within the client's.
    timing = step["server_timing"]
    assert timing["responses"] == requests and timing["malformed"] == 0
    assert sorted(timing["metrics"]) == ["app", "db.orders", "render"]
    for p in ("p50_us", "p90_us", "p99_us", "max_us"):
        assert timing["app_total"][p] <= step["latency"][p] * 1.002  # HDR buckets: 0.1%
        assert timing["metrics"]["db.orders"][p] <= timing["app_total"][p] * 1.002
    served.stop()
    spans = {b.name: b.span for b in model.load(served.dump).benchmarks}
    # Every request is a span (the ones of the start-up check too), with its children.
    assert spans["app"].count >= requests
    assert spans["db.orders"].count == spans["render"].count == spans["app"].count - 1
    assert spans["app"].total_ns >= spans["db.orders"].total_ns + spans["render"].total_ns
