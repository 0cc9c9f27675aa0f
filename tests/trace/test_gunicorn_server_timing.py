"""The WSGI middleware under gunicorn, and ``perflab http``'s Server-Timing breakdown.

The app (tests/trace/fixed_wsgi.py) sleeps 4 ms in span ``db`` and 2 ms in ``render``,
so the figures are known: each span's dur is its sleep plus a little (bounds are
generous — sleeps overshoot on a loaded machine, never undershoot), the app's total is
at least their sum, and the service time perflab measures is at least the app's total.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.request

import pytest

from perflab import model
from perflab.errors import ResultsFileError
from tests.conftest import ROOT
from tests.trace.served import wait_until_up

pytest.importorskip(
    "gunicorn", reason="gunicorn is a test dependency that `make test` installs; run make test"
)

TOKEN = "gunicorn-t0ken"


class Gunicorn:
    """gunicorn (gthread worker, keep-alive) serving fixed_wsgi on a socket handed over
    as ``fd://N`` (a free loopback port, no race). Attributes: url, log."""

    def __init__(self, tmp_path) -> None:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        self.log = tmp_path / "gunicorn.log"
        env = {
            **os.environ,
            "PERFLAB_TEST_TOKEN": TOKEN,
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        }
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "gunicorn",
                    "--bind",
                    f"fd://{sock.fileno()}",
                    "--workers",
                    "1",
                    "--worker-class",
                    "gthread",
                    "--threads",
                    "8",
                    "--keep-alive",
                    "30",
                    "--chdir",
                    str(ROOT),
                    "tests.trace.fixed_wsgi:app",
                ],
                pass_fds=[sock.fileno()],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        sock.close()
        wait_until_up(self.url + "/raw", b"ok", self.proc, self.log, self.stop)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)


@pytest.fixture(scope="module")
def gunicorn(tmp_path_factory):
    server = Gunicorn(tmp_path_factory.mktemp("gunicorn"))
    try:
        yield server
    finally:
        server.stop()


def get(url: str, token: str | None = None) -> tuple[bytes, list[tuple[str, str]]]:
    request = urllib.request.Request(url, headers={"X-Perflab-Token": token} if token else {})
    with urllib.request.urlopen(request, timeout=10) as r:
        return r.read(), [(k.lower(), v) for k, v in r.headers.items()]


def test_gunicorn_serves_the_header_to_the_token_holder_only(gunicorn):
    body, headers = get(gunicorn.url + "/", TOKEN)
    timing = dict(headers)["server-timing"]
    assert [m.split(";")[0] for m in timing.split(", ")] == ["db", "render", "app"], timing
    for token in ("wrong", None):
        plain_body, plain_headers = get(gunicorn.url + "/", token)
        assert plain_body == body
        assert "server-timing" not in dict(plain_headers)
        # The same headers as the token holder's, minus Server-Timing (Date may tick).
        assert [k for k, _ in plain_headers] == [k for k, _ in headers if k != "server-timing"]


def run_http(perflab_cli, url: str, out, *extra: str) -> dict:
    proc = perflab_cli(
        "http",
        url,
        "--rate",
        "40",
        "--duration",
        "2s",
        "--warmup",
        "0.5s",
        *extra,
        "--json",
        str(out),
        "--quiet",
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text())["benchmarks"][0]["steps"][0]


def test_perflab_http_breaks_the_latency_down_by_server_timing(gunicorn, perflab_cli, tmp_path):
    out = tmp_path / "traced.json"
    step = run_http(
        perflab_cli,
        gunicorn.url + "/",
        out,
        "-H",
        f"X-Perflab-Token: {TOKEN}",
        "--redact",
        "X-Perflab-Token",
    )
    timing = step["server_timing"]
    ok = step["status_counts"]["200"]
    assert ok >= 40 and timing["responses"] == ok
    assert (timing["malformed"], timing["metrics_dropped"]) == (0, 0)
    metrics = timing["metrics"]
    assert sorted(metrics) == ["app", "db", "render"]
    assert all(m["count"] == ok for m in metrics.values())
    # The fixed delays: ≥ the sleep, and below 100× (a sleep on a machine at load 8 can
    # overrun by scheduler quanta; the fault excluded is a unit slip, 1,000×).
    assert 4000 <= metrics["db"]["p50_us"] < 400_000
    assert 2000 <= metrics["render"]["p50_us"] < 200_000
    assert timing["app_total"]["count"] == ok
    app = timing["app_total"]
    assert app["min_us"] * 1.002 >= metrics["db"]["min_us"] + metrics["render"]["min_us"]
    for p in ("min_us", "p50_us", "p90_us", "p99_us", "max_us"):
        # Per request app ≥ db, app ≥ render and app ≤ service time ≤ latency, so the
        # same order holds at every percentile (HdrHistogram buckets: within 0.1%).
        assert app[p] * 1.002 >= max(metrics["db"][p], metrics["render"][p])
        assert app[p] <= step["service_time"][p] * 1.002
        assert app[p] <= step["latency"][p] * 1.002
    assert timing["outside_app"]["count"] == ok and timing["outside_app"]["min_us"] >= 0

    # The results file, the table, and compare per metric.
    results = model.load(out)
    st = results.benchmarks[0].steps[0].server_timing
    assert st is not None and st.metrics["db"].count == ok
    shown = perflab_cli("show", str(out))
    assert shown.returncode == 0, shown.stderr
    assert "Server-Timing" in shown.stdout and "outside the app" in shown.stdout
    assert "render" in shown.stdout
    html = tmp_path / "report.html"
    made = perflab_cli("report", str(out), "-o", str(html))
    assert made.returncode == 0, made.stderr
    assert "Server-Timing: the server" in html.read_text()
    compared = perflab_cli("compare", str(out), str(out), "--json", str(tmp_path / "c.json"))
    assert compared.returncode == 0, compared.stderr
    rows = json.loads((tmp_path / "c.json").read_text())["rows"]
    server_rows = [r["id"] for r in rows if "server-timing" in r["id"]]
    assert any("server-timing db p50" in r for r in server_rows), server_rows
    assert any("outside the app p99" in r for r in server_rows), server_rows

    # A results file is untrusted: stored percentiles are recomputed from the encoding,
    # and an encoding that is not an HdrHistogram is refused with its JSON path.
    data = json.loads(out.read_text())
    metric = data["benchmarks"][0]["steps"][0]["server_timing"]["metrics"]["db"]
    metric["p50_us"] = 1.0
    (tmp_path / "tampered.json").write_text(json.dumps(data))
    loaded = model.load(tmp_path / "tampered.json").benchmarks[0].steps[0].server_timing
    assert loaded.metrics["db"].p50_us == st.metrics["db"].p50_us != 1.0
    metric["encoded"] = "AAAAAAAA"
    (tmp_path / "tampered.json").write_text(json.dumps(data))
    with pytest.raises(ResultsFileError, match=r"server_timing\.metrics\.'db'\.encoded"):
        model.load(tmp_path / "tampered.json")


def test_without_the_token_no_breakdown(gunicorn, perflab_cli, tmp_path):
    step = run_http(perflab_cli, gunicorn.url + "/", tmp_path / "plain.json")
    assert step.get("server_timing") is None
    assert model.load(tmp_path / "plain.json").benchmarks[0].steps[0].server_timing is None


def test_malformed_headers_are_counted_never_failed(gunicorn, perflab_cli, tmp_path):
    step = run_http(perflab_cli, gunicorn.url + "/raw", tmp_path / "raw.json")
    ok = step["status_counts"]["200"]
    assert step["failures"] == 0 and ok >= 40
    timing = step["server_timing"]
    assert timing["responses"] == timing["malformed"] == ok
    assert sorted(timing["metrics"]) == ["ok", "total"]
    assert 1499 <= timing["metrics"]["ok"]["p50_us"] <= 1501
    assert 2999 <= timing["app_total"]["max_us"] <= 3003  # the metric named total
