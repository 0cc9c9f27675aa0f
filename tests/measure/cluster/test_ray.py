"""Distributed `perflab http --agents` on a real Ray instance on this machine, against
`perflab serve`: the merged rate and histograms, closed loop and Poisson, an agent
killed mid-step, --fail-fast, Ctrl-C, an unreachable target, a version mismatch, and
the default (a local Ray instance started by perflab itself).

Ray starts slowly (seconds per instance, and per agent process), so this module starts
one instance for all its tests (``ray_address``, module-scoped); the command-line runs
join it with ``--cluster``, and only one test starts its own. Ray is installed by the
Makefile (``make test``), so nothing here skips. Rates are ≤ 600 req/s, steps ≤ 2 s.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import ray
from perflab import _core
from perflab.errors import UsageError
from perflab.measure.cluster.controller import Cluster, ClusterOptions
from perflab.measure.cluster.sweep import run_sweep
from perflab.measure.http import plan_from_args
from tests.measure.cluster.test_parts import cli_args, free_port
from tests.conftest import popen_perflab

FAST = ["--warmup", "0.2s", "--threads", "1", "--quiet"]


@pytest.fixture(scope="module")
def ray_address() -> Any:
    """One local Ray instance for the whole module (stopped at its end)."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(num_cpus=4, include_dashboard=False, object_store_memory=100 * 2**20,
             logging_level=logging.ERROR, log_to_driver=False, configure_logging=False)
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def server() -> Any:
    with _core.serve({"host": "127.0.0.1", "port": 0, "delay": "1ms"}) as s:
        yield s


def _cli(*argv: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    import sys

    return subprocess.run([sys.executable, "-m", "perflab", "http", *argv], text=True,
                          capture_output=True, timeout=timeout)


def _buckets(encoded: str) -> Counter[int]:
    d = _core.hdr_decode(encoded)
    return Counter(dict(zip(d["values"], d["counts"])))


def test_two_agents_offer_the_rate_asked_and_merge_exactly(ray_address: str, server: Any,
                                                           tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    proc = _cli(f"http://127.0.0.1:{server.port}/", "--rate", "300,600", "--duration", "2s",
                *FAST, "--agents", "2", "--cluster", ray_address, "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "load agents" in proc.stdout and "agent 2" in proc.stdout
    data = json.loads(out.read_text())
    assert [a["index"] for a in data["agents"]] == [0, 1]
    assert all(a["same_clock"] and a["round_trip_ns"] > 0 for a in data["agents"])
    summaries = data["benchmarks"][0]["summary"]["steps"]
    for step, summary in zip(data["benchmarks"][0]["steps"], summaries):
        # one agent carries 600/s easily: the merged rate is the offered one
        assert summary["achieved_rate"] == pytest.approx(step["offered_rate"], rel=0.005)
        parts = [a["step"] for a in step["agents"]]
        assert [p["offered_rate"] for p in parts] == [step["offered_rate"] / 2] * 2
        assert step["requests_sent"] == sum(p["requests_sent"] for p in parts)
        union = _buckets(parts[0]["latency"]["encoded"]) + \
            _buckets(parts[1]["latency"]["encoded"])
        assert _buckets(step["latency"]["encoded"]) == union
        assert all(0 < a["start_lead_s"] < 1 for a in step["agents"])
    shown = _cli_show(out)
    assert shown.returncode == 0 and "load agents" in shown.stdout


def _cli_show(path: Path) -> subprocess.CompletedProcess[str]:
    import sys

    return subprocess.run([sys.executable, "-m", "perflab", "show", str(path)], text=True,
                          capture_output=True, timeout=60)


def test_closed_loop_and_poisson_are_split(ray_address: str, server: Any,
                                           tmp_path: Path) -> None:
    out = tmp_path / "c.json"
    proc = _cli(f"http://127.0.0.1:{server.port}/", "--connections", "3", "--duration",
                "1s", *FAST, "--agents", "2", "--cluster", ray_address, "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    step = json.loads(out.read_text())["benchmarks"][0]["steps"][0]
    assert step["mode"] == "closed" and step["connections"] == 3
    assert sorted(a["step"]["connections"] for a in step["agents"]) == [1, 2]
    out = tmp_path / "p.json"
    proc = _cli(f"http://127.0.0.1:{server.port}/", "--rate", "400", "--poisson", "--seed",
                "7", "--duration", "1s", *FAST, "--agents", "2", "--cluster", ray_address,
                "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    step = json.loads(out.read_text())["benchmarks"][0]["steps"][0]
    assert step["offered_rate"] == 400 and step["requests_sent"] > 0.6 * 400 * 1.2


def _plan(server: Any, *argv: str) -> Any:
    return plan_from_args(cli_args(f"http://127.0.0.1:{server.port}/", *argv, "--warmup",
                                   "0.2s", "--threads", "1"), check=False)


@pytest.mark.parametrize("fail_fast", [False, True])
def test_an_agent_killed_mid_step_keeps_the_others_data(ray_address: str, server: Any,
                                                        fail_fast: bool) -> None:
    plan = _plan(server, "--rate", "200,200", "--duration", "2s")
    options = ClusterOptions(2, ray_address, None, fail_fast)
    target = ("127.0.0.1", server.port, 2.0)
    with Cluster(options, target, [plan.step_config(i) for i in range(2)]) as cluster:
        victim = cluster.agents[1].info.pid
        threading.Timer(1.2, os.kill, (victim, signal.SIGKILL)).start()
        outcome = run_sweep(cluster, plan)
    first = outcome.steps[0]
    assert [a.lost for a in first.agents] == [False, True]
    assert first.requests_sent == first.agents[0].step.requests_sent > 0
    assert first.offered_rate == 100  # the survivor's share
    assert "agent 2" in outcome.agents_lost
    if fail_fast:
        assert len(outcome.steps) == 1 and "--fail-fast" in outcome.agents_lost
    else:  # the next step runs on the agent left, with the whole rate
        assert len(outcome.steps) == 2
        assert [a.agent for a in outcome.steps[1].agents] == [0]
        assert outcome.steps[1].offered_rate == 200
    assert cluster.ray is None and ray.is_initialized()  # the module's Ray is kept


def test_a_version_mismatch_is_refused_at_start(ray_address: str, server: Any,
                                                monkeypatch: Any) -> None:
    import perflab

    monkeypatch.setattr(perflab, "__version__", "0.0.0-other")
    plan = _plan(server, "--rate", "100", "--duration", "1s")
    with pytest.raises(UsageError, match=r"agent 1 .* runs perflab .* the controller "
                                         r"0\.0\.0-other"):
        with Cluster(ClusterOptions(1, ray_address), ("127.0.0.1", server.port, 2.0),
                     [plan.step_config(0)]):
            pass


def test_an_unreachable_target_is_named_per_agent(ray_address: str) -> None:
    proc = _cli(f"http://127.0.0.1:{free_port()}/", "--rate", "100", "--duration", "1s",
                *FAST, "--agents", "2", "--cluster", ray_address)
    assert proc.returncode == 2, proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and "2 of 2 agents cannot reach the target" in errors[0]
    assert "Traceback" not in proc.stderr


def test_ctrl_c_stops_every_agent_and_saves(ray_address: str, server: Any,
                                            tmp_path: Path) -> None:
    out = tmp_path / "i.json"
    proc = popen_perflab(["http", f"http://127.0.0.1:{server.port}/", "--rate", "200",
                          "--duration", "60s", "--warmup", "0s", "--threads", "1",
                          "--agents", "2", "--cluster", ray_address, "--json", str(out)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    for line in proc.stderr:  # start-up news, then plain progress: stderr is not a terminal
        lines.append(line)
        if "ready in" in line:
            break
    time.sleep(2.0)  # the step has started (0.25 s lead) and runs
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, "".join(lines) + err
    assert time.monotonic() - t0 < 10  # generous for a loaded 2-core CI machine (issue: ~1 s)
    steps = json.loads(out.read_text())["benchmarks"][0]["steps"]
    assert len(steps) == 1 and steps[0]["interrupted"]
    assert all(not a["lost"] and a["step"]["interrupted"] for a in steps[0]["agents"])
    assert steps[0]["requests_sent"] > 100


def test_default_starts_a_local_ray_instance(server: Any, tmp_path: Path) -> None:
    out = tmp_path / "l.json"
    proc = _cli(f"http://127.0.0.1:{server.port}/", "--rate", "200", "--duration", "1s",
                "--warmup", "0.2s", "--threads", "1", "--agents", "2", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "starting a local Ray instance" in proc.stderr
    assert len(json.loads(out.read_text())["agents"]) == 2
