"""Distributed `perflab http --agents` on a real Ray cluster on this machine, against
`perflab serve` and nginx: the merged rate and histograms, closed loop and Poisson, a
weighted split, joining by GCS address, by ``auto`` and by Ray Client (``ray://``), TLS,
an agent killed mid-step, --fail-fast, Ctrl-C (within a second), an unreachable target,
a version mismatch, and the default (a local Ray instance started by perflab itself,
its live progress drawn on a terminal).

Ray starts slowly (seconds per instance, and per agent process), so this module starts
one Ray head for all its tests (``ray_head``, module-scoped) with Ray's own command, as a
user would (``ray start --head``, loopback, with a Ray Client server); the command-line
runs join it with ``--cluster``, and only one test starts its own. Ray, nginx and
openssl are installed by the Makefile (``make test``), so nothing here skips. Rates are
≤ 600 req/s, steps ≤ 2 s, every wait bounded.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import ray

from perflab import _core
from perflab.commands.options import http_plan
from perflab.engines.http.cluster.controller import Cluster, ClusterOptions
from perflab.engines.http.cluster.sweep import run_sweep
from perflab.errors import UsageError
from tests.conftest import free_port, http_args, popen_perflab
from tests.engines.http.cluster.ray_head import running_ray_head
from tests.engines.http.nginx import running_nginx
from tests.terminal import perflab_on_a_terminal

FAST = ["--warmup", "0.2s", "--threads", "1", "--quiet"]


@pytest.fixture(scope="module")
def ray_head() -> Iterator[dict[str, str]]:
    """One Ray head for the whole module (:func:`running_ray_head`)."""
    with running_ray_head() as head:
        yield head


@pytest.fixture(scope="module")
def ray_address(ray_head: dict[str, str]) -> Iterator[str]:
    """The head's GCS address, with this process joined to it (as the tests that drive
    a Cluster directly need)."""
    from perflab.engines.http.cluster.controller import enable_token_auth_to_join

    enable_token_auth_to_join()  # as perflab does when it joins
    ray.init(
        address=ray_head["gcs"],
        logging_level=logging.ERROR,
        log_to_driver=False,
        configure_logging=False,
    )
    try:
        yield ray_head["gcs"]
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def server() -> Any:
    with _core.serve({"host": "127.0.0.1", "port": 0, "delay": "1ms"}) as s:
        yield s


def _cli(*argv: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "perflab", "http", *argv],
        text=True,
        capture_output=True,
        timeout=timeout,
    )


def _buckets(encoded: str) -> Counter[int]:
    d = _core.hdr_decode(encoded)
    return Counter(dict(zip(d["values"], d["counts"])))


def test_two_agents_offer_the_rate_asked_and_merge_exactly(
    ray_address: str, server: Any, tmp_path: Path
) -> None:
    out = tmp_path / "r.json"
    proc = _cli(
        f"http://127.0.0.1:{server.port}/",
        "--rate",
        "300,600",
        "--duration",
        "2s",
        *FAST,
        "--agents",
        "2",
        "--cluster",
        ray_address,
        "--json",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr
    assert "load agents" in proc.stdout and "agent 2" in proc.stdout
    data = json.loads(out.read_text())
    assert [a["index"] for a in data["agents"]] == [0, 1]
    assert all(a["same_clock"] and a["round_trip_ns"] > 0 for a in data["agents"])
    summaries = data["benchmarks"][0]["summary"]["steps"]
    for step, summary in zip(data["benchmarks"][0]["steps"], summaries):
        # The merged schedule is the offered one: every request due in the window is sent
        # or counted unsent (an agent on a busy machine may fall behind; how many it got
        # out in time is its speed, a benchmark's business), ±1 per agent at the edges;
        # the answers in the window are at most those due plus the warm-up's late ones.
        parts = [a["step"] for a in step["agents"]]
        due = step["requests_sent"] + step["unsent"]
        assert due == pytest.approx(step["offered_rate"] * step["elapsed_s"], abs=4)
        answered = summary["achieved_rate"] * step["elapsed_s"]
        assert 0 < answered <= due + step["ok_from_warmup"] + 0.5
        assert [p["offered_rate"] for p in parts] == [step["offered_rate"] / 2] * 2
        assert step["requests_sent"] == sum(p["requests_sent"] for p in parts)
        union = _buckets(parts[0]["latency"]["encoded"]) + _buckets(parts[1]["latency"]["encoded"])
        assert _buckets(step["latency"]["encoded"]) == union
        assert all(0 < a["start_lead_s"] < 1 for a in step["agents"])
        # the merged timeline's counts are the sums of the agents' timelines'
        for name in ("sent", "ok", "errors"):
            assert sum(step["timeline"][name]) == sum(sum(p["timeline"][name]) for p in parts)
    shown = _cli_show(out)
    assert shown.returncode == 0 and "load agents" in shown.stdout


def _cli_show(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "perflab", "show", str(path)],
        text=True,
        capture_output=True,
        timeout=60,
    )


def test_a_poisson_ramp_on_agents_keeps_the_whole_ramp(
    ray_address: str, server: Any, tmp_path: Path
) -> None:
    out = tmp_path / "ramp.json"
    proc = _cli(
        f"http://127.0.0.1:{server.port}/",
        "--rate",
        "200..400/2s",
        "--poisson",
        *FAST,
        "--interval",
        "0.5s",
        "--agents",
        "2",
        "--cluster",
        ray_address,
        "--json",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr
    assert "timeline of 200→400/s over 2 s" in proc.stdout
    step = json.loads(out.read_text())["benchmarks"][0]["steps"][0]
    assert step["shape"] == {"kind": "ramp", "from": 200.0, "to": 400.0, "over_s": 2.0}
    parts = [a["step"] for a in step["agents"]]
    assert [p["shape"]["to"] for p in parts] == [200.0, 200.0]
    for name in ("sent", "ok", "errors"):
        assert sum(step["timeline"][name]) == sum(sum(p["timeline"][name]) for p in parts)
    assert step["timeline"]["offered_rate"][:4] == pytest.approx([225.0, 275.0, 325.0, 375.0])


def test_closed_loop_is_split(ray_address: str, server: Any, tmp_path: Path) -> None:
    out, reqs = tmp_path / "c.json", tmp_path / "reqs.jsonl"
    reqs.write_text('{"path": "/a"}\n{"method": "POST", "path": "/b", "body": "x"}\n')
    proc = _cli(
        f"http://127.0.0.1:{server.port}/",
        "--connections",
        "3",
        "--duration",
        "1s",
        *FAST,
        "--agents",
        "2",
        "--cluster",
        ray_address,
        "--requests",
        str(reqs),
        "--slo",
        "5s",
        "--json",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())  # the requests file and the SLO reach the agents
    assert data["benchmarks"][0]["name"].endswith(f"(2 requests from {reqs})")
    assert data["settings"]["slo_s"] == 5
    step = data["benchmarks"][0]["steps"][0]
    assert step["mode"] == "closed" and step["connections"] == 3
    assert sorted(a["step"]["connections"] for a in step["agents"]) == [1, 2]


def _plan(server: Any, *argv: str) -> Any:
    return http_plan(
        http_args(f"http://127.0.0.1:{server.port}/", *argv, "--warmup", "0.2s", "--threads", "1"),
        check=False,
    )


def _await_requests(server: Any, before: int, more: int) -> bool:
    """Wait until ``server`` has answered ``more`` requests past ``before`` (a step is
    running, however slowly a loaded machine got there); False after 60 s without."""
    deadline = time.monotonic() + 60
    while server.stats()["requests"] < before + more:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def _kill_mid_step(server: Any, pid: int) -> None:
    """SIGKILL process ``pid`` once ``server`` has answered 50 more requests than now:
    during the next step."""
    before = server.stats()["requests"]

    def kill() -> None:
        if _await_requests(server, before, 50):  # else the test failed: the pid may be reused
            os.kill(pid, signal.SIGKILL)

    threading.Thread(target=kill, daemon=True).start()


def test_an_agent_killed_mid_step_keeps_the_others_data(ray_address: str, server: Any) -> None:
    # one cluster of 3 agents, two sweeps (one start-up, not two): an agent killed in the
    # first leaves its share to the others and the sweep goes on; with --fail-fast, an
    # agent killed in the second stops it
    plan = _plan(server, "--rate", "300,300", "--duration", "1s")
    target = ("127.0.0.1", server.port, 2.0)
    with Cluster(
        ClusterOptions(3, ray_address), target, [plan.step_config(i) for i in range(2)]
    ) as cluster:
        _kill_mid_step(server, cluster.agents[2].info.pid)
        outcome = run_sweep(cluster, plan)
        first = outcome.steps[0]
        assert [a.lost for a in first.agents] == [False, False, True]
        assert first.requests_sent == sum(a.step.requests_sent for a in first.agents[:2]) > 0
        assert first.offered_rate == 200  # the survivors' shares
        assert "agent 3" in outcome.agents_lost and len(outcome.steps) == 2
        # the next step runs on the agents left, with the whole rate
        assert [a.agent for a in outcome.steps[1].agents] == [0, 1]
        assert outcome.steps[1].offered_rate == 300 and not outcome.steps[1].agents[0].lost
        cluster.options.fail_fast = True
        _kill_mid_step(server, cluster.agents[1].info.pid)
        outcome = run_sweep(cluster, plan)
        assert [a.lost for a in outcome.steps[0].agents] == [False, True]
        assert outcome.steps[0].offered_rate == 150
        assert len(outcome.steps) == 1 and "--fail-fast" in outcome.agents_lost
        assert "agent 2" in outcome.agents_lost
    assert cluster.ray is None and ray.is_initialized()  # the module's Ray is kept


def test_a_version_mismatch_is_refused_at_start(
    ray_address: str, server: Any, monkeypatch: Any
) -> None:
    import perflab

    monkeypatch.setattr(perflab, "__version__", "0.0.0-other")
    plan = _plan(server, "--rate", "100", "--duration", "1s")
    with pytest.raises(
        UsageError,
        match=r"agent 1 .* runs perflab .* the controller "
        r"0\.0\.0-other",
    ):
        with Cluster(
            ClusterOptions(1, ray_address), ("127.0.0.1", server.port, 2.0), [plan.step_config(0)]
        ):
            pass


def test_an_unreachable_target_is_named_per_agent(ray_address: str) -> None:
    proc = _cli(
        f"http://127.0.0.1:{free_port()}/",
        "--rate",
        "100",
        "--duration",
        "1s",
        *FAST,
        "--agents",
        "2",
        "--cluster",
        ray_address,
    )
    assert proc.returncode == 2, proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and "2 of 2 agents cannot reach the target" in errors[0]
    assert "Traceback" not in proc.stderr


def test_ctrl_c_stops_every_agent_and_saves(ray_address: str, server: Any, tmp_path: Path) -> None:
    out = tmp_path / "i.json"
    proc = popen_perflab(
        [
            "http",
            f"http://127.0.0.1:{server.port}/",
            "--rate",
            "200",
            "--duration",
            "60s",
            "--warmup",
            "0s",
            "--threads",
            "1",
            "--agents",
            "2",
            "--cluster",
            ray_address,
            "--json",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines = []
    for line in proc.stderr:  # start-up news, then plain progress: stderr is not a terminal
        lines.append(line)
        if "ready in" in line:
            break
    _await_requests(server, server.stats()["requests"], 120)  # the step runs
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    served, last_request, saved = server.stats()["requests"], t0, None
    while proc.poll() is None and time.monotonic() - t0 < 60:
        now, count = time.monotonic(), server.stats()["requests"]
        if count != served:
            served, last_request = count, now
        if saved is None and out.exists() and json.loads(out.read_text())["interrupted"]:
            saved = now
        time.sleep(0.005)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, "".join(lines) + err
    # the issue asks ≤ 1 s, a speed that benchmarks/cluster.py measures (≈ 0.1-0.2 s);
    # here the behaviour: stopped and saved long before the 60 s step would have ended
    # (20 s: a loaded 2-core machine's Ray hand-offs and the save take seconds)
    assert last_request - t0 < 20 and saved is not None and saved - t0 < 20
    steps = json.loads(out.read_text())["benchmarks"][0]["steps"]
    assert len(steps) == 1 and steps[0]["interrupted"]
    assert all(not a["lost"] and a["step"]["interrupted"] for a in steps[0]["agents"])
    assert steps[0]["requests_sent"] > 100


def test_default_starts_a_local_ray_instance_with_live_progress(
    server: Any, tmp_path: Path
) -> None:
    out = tmp_path / "l.json"
    code, shown = perflab_on_a_terminal(
        "http",
        f"http://127.0.0.1:{server.port}/",
        "--rate",
        "200",
        "--duration",
        "2s",
        "--warmup",
        "0.2s",
        "--threads",
        "1",
        "--agents",
        "2",
        "--json",
        str(out),
    )
    assert code == 0, shown
    assert "starting a local Ray instance" in shown
    assert len(json.loads(out.read_text())["agents"]) == 2
    # live progress: the merged rate and p99 so far, and the slowest agent (their figures
    # are test_parts' business; 1.8 s of progress every 0.25 s shows them at least once)
    assert re.search(
        r"step 1/1 200/s .*achieved [\d,]+/s, \d+ failed, p99 [\d.,]+ ms, slowest agent "
        r"[12] \(.+\) p99 [\d.,]+ ms",
        shown,
    ), shown


def _client_server_logs(temp: str) -> str:
    """The tails of the head's Ray Client server logs (why a ray:// join failed)."""
    logs = sorted(Path(temp).glob("session_*/logs/ray_client_server*"))
    return "".join(
        f"\n--- {p.name}\n" + "\n".join(p.read_text(errors="replace").splitlines()[-15:])
        for p in logs
    )


def _csv_rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_ray_client_and_a_weighted_split_keep_one_open_loop(
    ray_head: dict[str, str], server: Any, tmp_path: Path
) -> None:
    out = tmp_path / "w.json"
    proc = _cli(
        f"http://127.0.0.1:{server.port}/",
        "--rate",
        "400",
        "--duration",
        "1s",
        *FAST,
        "--agents",
        "2",
        "--cluster",
        ray_head["client"],
        "--split",
        "3,1",
        "--format",
        "csv",
        "--json",
        str(out),
        # a busy head may take the proxy's whole 120 s to start this driver's server
        timeout=420,
    )
    assert proc.returncode == 0, proc.stderr + _client_server_logs(ray_head["temp"])
    data = json.loads(out.read_text())
    assert [a["weight"] for a in data["agents"]] == [3.0, 1.0]
    step = data["benchmarks"][0]["steps"][0]
    parts = [a["step"] for a in step["agents"]]
    # agent 1 holds 3 of every 4 requests of one evenly spaced 400/s schedule
    assert [p["offered_rate"] for p in parts] == [300.0, 100.0]
    due = [p["requests_sent"] + p["unsent"] for p in parts]  # sent in time or not: the plan
    assert due[0] == pytest.approx(3 * due[1], abs=3)
    # every request of the merged schedule's recorded 0.8 s went out (late ones count:
    # on a loaded machine the achieved rate is another test's business)
    assert step["requests_sent"] + step["unsent"] == pytest.approx(400 * 0.8, abs=2)
    rows = _csv_rows(proc.stdout)  # the merged row, then one per agent
    assert [(r["agent"], r["offered_rate"]) for r in rows] == [
        ("all", "400"),
        ("1", "300"),
        ("2", "100"),
    ]
    assert float(rows[1]["weight"]) == 3 and rows[2]["host"]


@pytest.fixture(scope="module")
def nginx_tls() -> Iterator[str]:
    """A private nginx serving https (`return 200`) on 127.0.0.1 with a fresh self-signed
    certificate (openssl), in a temp dir, no master process; yields its URL."""
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not os.access(nginx, os.X_OK) or shutil.which("openssl") is None:
        pytest.skip("needs nginx and openssl: make test installs them (as root)")
    folder = tempfile.mkdtemp(prefix="nginx")
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            f"{folder}/key.pem",
            "-out",
            f"{folder}/cert.pem",
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    port = free_port()
    try:
        with running_nginx(nginx, Path(folder), NGINX_TLS.format(dir=folder, port=port), port):
            yield f"https://127.0.0.1:{port}/"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


NGINX_TLS = """
worker_processes 1;
daemon off;
master_process off;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  client_body_temp_path {dir}/body; proxy_temp_path {dir}/proxy;
  fastcgi_temp_path {dir}/fastcgi; uwsgi_temp_path {dir}/uwsgi; scgi_temp_path {dir}/scgi;
  keepalive_requests 1000000;
  server {{
    listen 127.0.0.1:{port} ssl;
    ssl_certificate {dir}/cert.pem;
    ssl_certificate_key {dir}/key.pem;
    location / {{ return 200 "ok"; }}
  }}
}}
"""


def test_auto_joins_and_agents_load_nginx_over_tls_by_capacity_with_poisson_arrivals(
    ray_head: dict[str, str], nginx_tls: str, tmp_path: Path
) -> None:
    out = tmp_path / "t.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "perflab",
            "http",
            nginx_tls,
            "--insecure",
            "--rate",
            "400",
            "--poisson",
            "--seed",
            "7",
            "--duration",
            "1s",
            *FAST,
            "--agents",
            "2",
            "--cluster",
            "auto",
            "--split",
            "capacity",
            "--format",
            "markdown",
            "--json",
            str(out),
        ],
        text=True,
        capture_output=True,
        timeout=180,
        env={**os.environ, "RAY_ADDRESS": ray_head["gcs"]},
    )
    assert proc.returncode == 0, proc.stderr
    assert "### load agents" in proc.stdout and "| agent 2 |" in proc.stdout
    data = json.loads(out.read_text())
    capacities = [a["capacity_rps"] for a in data["agents"]]
    assert all(c > 0 for c in capacities)
    assert [a["weight"] for a in data["agents"]] == capacities
    step = data["benchmarks"][0]["steps"][0]
    for share, c in zip(step["agents"], capacities):  # shares ∝ capacity (to 1/1000)
        assert share["step"]["offered_rate"] == pytest.approx(
            400 * c / sum(capacities), abs=400 * 1.5 / 1000
        )
        assert set(share["step"]["status_counts"]) == {"200"}  # every answer over TLS ok
    assert step["ok_responses"] > 0 and not step["errors"]
    # the agents' independent Poisson streams add up to about the rate asked: 320 due in
    # the recorded 0.8 s on average (fewer than 240 has a probability below 1e-5). Due
    # is sent + unsent: how many a starved agent thread got out in time is the machine's
    # speed, not the schedule's.
    due = step["requests_sent"] + step["unsent"]
    assert step["offered_rate"] == pytest.approx(400) and due > 0.6 * 400
    assert step["requests_sent"] > 0
