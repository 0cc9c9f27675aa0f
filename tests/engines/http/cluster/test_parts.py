"""Distributed `perflab http` without Ray: the split of a step's load, the clock-offset
estimate, the exact merge of the agents' histograms, the load agent driven directly
against `perflab serve`, the per-agent table, and the bad inputs refused before Ray
starts. Deterministic except the agent runs (0.3-0.6 s at ≤ 400 req/s on loopback).
"""

from __future__ import annotations

import math
import random
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from perflab import _core, cli
from perflab.engines.http.cluster import clocks
from perflab.engines.http.cluster.agent import LoadAgent
from perflab.engines.http.cluster.controller import place
from perflab.engines.http.cluster.merge import merge_histograms, merge_steps
from perflab.engines.http.cluster.split import (
    PARTS,
    agent_seed,
    lanes,
    shares,
    split_step,
    weighted_shares,
)
from perflab.engines.http.steps import step_from_raw
from perflab.errors import UsageError
from perflab.model import Histogram
from perflab.model.cluster import AgentInfo, AgentShare
from tests.conftest import agents_results, free_port, http_args

OPEN = {
    "mode": "open",
    "rate": 1000.0,
    "arrival": "constant",
    "connections": None,
    "seed": None,
    "duration_s": 1.0,
}


@pytest.fixture(scope="module")
def server() -> Any:
    with _core.serve({"host": "127.0.0.1", "port": 0, "delay": "1ms"}) as s:
        yield s


# --- split --------------------------------------------------------------------------


def _slot_numbers(part: dict[str, Any], count: int) -> list[int]:
    """The first ``count`` requests of an agent's share, as numbers of the shared
    schedule (request n is due at n / R), as the engine computes them."""
    m, period = len(part["slots"]), part["slot_period"]
    return [(j // m) * period + part["slots"][j % m] for j in range(count)]


@pytest.mark.parametrize(
    "weights",
    [
        [1.0],
        [1.0] * 2,
        [1.0] * 3,
        [1.0] * 7,
        [3.0, 1.0],
        [5.0, 2.0, 1.0],
        [1.0, 1000.0],
        [0.37, 0.21, 0.42],
    ],
)
def test_constant_arrivals_interleave_into_one_even_schedule(weights: list[float]) -> None:
    parts = split_step(OPEN, len(weights), weights)
    assert sum(p["rate"] for p in parts) == pytest.approx(1000.0)
    period = parts[0]["slot_period"]
    # over whole periods, every request of the shared schedule is sent by exactly one
    # agent: the merged gaps are all 1/R
    numbers = sorted(n for p in parts for n in _slot_numbers(p, 3 * len(p["slots"])))
    assert numbers == list(range(3 * period))
    for p, w in zip(parts, weights):  # each share is its weight, to 1/PARTS at worst
        assert p["rate"] / 1000.0 == pytest.approx(w / sum(weights), abs=1.5 / PARTS)
        assert p["rate"] == 1000.0 * len(p["slots"]) / period


def test_even_split_is_one_slot_each_and_weighted_slots_are_spread() -> None:
    assert lanes([2.0, 2.0, 2.0]) == (3, [[0], [1], [2]])  # agent k sends (k + i·3)/R
    period, slots = lanes([3.0, 1.0])
    assert (period, slots) == (4, [[0, 1, 3], [2]])
    period, slots = lanes([1.0, 9.0])  # the small agent's slot is mid-period, not first
    gaps = [b - a for a, b in zip(slots[1], slots[1][1:])]
    assert period == 10 and slots[0] == [4] and max(gaps) == 2


def test_weighted_whole_shares_are_exact() -> None:
    assert weighted_shares(10, [3.0, 1.0]) == [8, 2]
    assert weighted_shares(5, [1.0, 1.0, 1.0], floor=1) == [2, 2, 1]
    assert sum(weighted_shares(1001, [0.3, 0.3, 0.4])) == 1001
    with pytest.raises(ValueError):
        weighted_shares(3, [1.0, 0.0])


def test_poisson_agents_get_distinct_seeds_and_weighted_rates() -> None:
    parts = split_step({**OPEN, "arrival": "poisson", "seed": 42}, 4)
    assert parts[0]["seed"] == 42 == agent_seed(42, 0)
    assert len({p["seed"] for p in parts}) == 4
    assert all("slots" not in p and p["rate"] == 250.0 for p in parts)
    parts = split_step({**OPEN, "arrival": "poisson"}, 2, [3.0, 1.0])
    assert [p["rate"] for p in parts] == [750.0, 250.0]


def test_closed_loop_connections_and_the_pool_cap_are_split_whole() -> None:
    assert shares(10, 3) == [4, 3, 3] and sum(shares(1001, 7)) == 1001
    closed = split_step({"mode": "closed", "connections": 3}, 5)
    assert [c and c["connections"] for c in closed] == [1, 1, 1, None, None]
    capped = split_step({**OPEN, "connections": 5}, 2)
    assert [c["connections"] for c in capped] == [3, 2]
    closed = split_step({"mode": "closed", "connections": 8}, 2, [3.0, 1.0])
    assert [c and c["connections"] for c in closed] == [6, 2]
    capped = split_step({**OPEN, "connections": 3}, 3, [100.0, 1.0, 1.0])  # one each first
    assert [c["connections"] for c in capped] == [1, 1, 1]
    with pytest.raises(UsageError, match="at least one connection per agent"):
        split_step({**OPEN, "connections": 1}, 2)


def test_placement_spreads_or_fills_nodes() -> None:
    assert place(["a", "b"], 3, None) == ["a", "b", "a"]
    assert place(["a", "b"], 3, 2) == ["a", "a", "b"]
    with pytest.raises(UsageError, match="needs 2 nodes"):
        place(["a"], 3, 2)


# --- clocks -------------------------------------------------------------------------


def test_offset_takes_the_minimum_round_trip_and_bounds_the_error() -> None:
    rng = random.Random(3)
    true_offset = 123_456_789  # the agent's clock is 123 ms ahead
    now = [1_000_000_000]

    def clock() -> int:
        return now[0]

    def ask() -> int:  # asymmetric, heavy-tailed paths (queueing only adds delay)
        now[0] += 40_000 + int(rng.expovariate(1 / 300_000))
        read = now[0] + true_offset
        now[0] += 90_000 + int(rng.expovariate(1 / 300_000))
        return read

    est = clocks.measure(ask, 16, clock)
    assert est.samples == 16
    assert abs(est.offset_ns - true_offset) <= est.uncertainty_ns
    assert (
        est.round_trip_ns == 2 * est.uncertainty_ns
        or est.round_trip_ns + 1 == 2 * est.uncertainty_ns
    )
    # the best of 16 samples is much tighter than a typical one
    assert est.round_trip_ns < 130_000 + 300_000
    assert clocks.on_agent_clock(10, est.offset_ns) == 10 + est.offset_ns


def test_the_latest_offset_places_the_start_and_a_shared_clock_needs_none() -> None:
    from perflab.engines.http.cluster.controller import Agent

    agent = Agent(AgentInfo(0, "h", offset_ns=5_000), actor=None)
    assert agent.offset_used_ns == 0  # not measured yet
    agent.offset = clocks.Offset(7_000, 100, 200, 5)  # drifted since start-up
    assert agent.offset_used_ns == 7_000
    agent.info.same_clock = True
    assert agent.offset_used_ns == 0


def test_offset_refuses_nothing_and_a_clock_that_steps_back() -> None:
    with pytest.raises(ValueError, match="no round trips"):
        clocks.estimate([])
    with pytest.raises(ValueError, match="stepped"):
        clocks.estimate([(100, 5, 50)])


# --- merge and the agent itself -----------------------------------------------------


def _nearest_rank(counts: Counter[int], q: float) -> int:
    n, seen = sum(counts.values()), 0
    rank = max(1, math.ceil(q * n))
    for value in sorted(counts):
        seen += counts[value]
        if seen >= rank:
            return value
    raise AssertionError


def test_agents_share_a_start_and_merge_exactly(server: Any, load_agents: Any) -> None:
    url = f"http://127.0.0.1:{server.port}/"
    answers = load_agents(url, 2, 400.0, 0.6)
    steps = [step_from_raw(a["raw"]["steps"][0]) for a in answers]
    for a in answers:  # both were asked 0.2 s ahead and waited for the instant
        assert 0.05 < a["raw"]["steps"][0]["start_lead_s"] < 0.3
        assert a["process_cpu_s"] > 0
    merged = merge_steps(steps)
    assert merged.offered_rate == pytest.approx(400.0)
    assert merged.requests_sent == sum(s.requests_sent for s in steps) > 0
    assert merged.latency.count == sum(s.latency.count for s in steps)
    union: Counter[int] = Counter()
    for s in steps:
        d = _core.hdr_decode(s.latency.encoded)
        union.update(dict(zip(d["values"], d["counts"])))
    qs = [0.0, 0.5, 0.9, 0.99, 0.999, 1.0]
    m = _core.hdr_decode(merged.latency.encoded, qs)
    assert Counter(dict(zip(m["values"], m["counts"]))) == union  # bucket by bucket
    assert [m["quantiles"][q] for q in qs] == [_nearest_rank(union, q) for q in qs]
    assert merged.latency.p99_us == m["p99_us"]
    # the merged timeline: the agents' intervals on the common start, their counts summed
    assert merged.timeline is not None and all(s.timeline is not None for s in steps)
    for name in ("sent", "ok", "errors"):
        total = sum(sum(getattr(s.timeline, name)) for s in steps)  # type: ignore[union-attr]
        assert sum(getattr(merged.timeline, name)) == total
    assert sum(merged.timeline.sent) == merged.requests_sent
    assert merged.timeline.offered_rate[0] == pytest.approx(400.0)


def test_agents_send_their_weighted_slots(server: Any, load_agents: Any) -> None:
    url = f"http://127.0.0.1:{server.port}/"
    steps = [
        step_from_raw(a["raw"]["steps"][0]) for a in load_agents(url, 2, 400.0, 0.6, [3.0, 1.0])
    ]
    # 0.6 s of the shared 400/s schedule: agent 1 holds 3 of every 4 requests
    assert [s.offered_rate for s in steps] == [300.0, 100.0]
    # due = sent + unsent (what a busy machine could not send in time stays counted)
    assert [s.requests_sent + s.unsent for s in steps] == [180, 60]
    merged = merge_steps(steps)
    assert merged.requests_sent + merged.unsent == 240


def test_http2_agents_keep_protocol_and_streams_and_merge_the_phases(server: Any) -> None:
    config = {
        "url": f"http://127.0.0.1:{server.port}/",
        "mode": "open",
        "rate": 400.0,
        "duration_s": 0.4,
        "threads": 1,
        "protocol": "http2",
        "streams": 4,
    }
    parts = split_step(config, 2)
    assert all(p is not None and (p["protocol"], p["streams"]) == ("http2", 4) for p in parts)
    steps = [step_from_raw(_core.http_run(p)["steps"][0]) for p in parts if p is not None]
    merged = merge_steps(steps)
    assert (merged.protocol, merged.streams) == ("h2", 4)
    for name in ("ttfb", "body_time", "connect"):
        assert getattr(merged, name).count == sum(getattr(s, name).count for s in steps)
    assert merged.body_time.count > 0


def test_the_capacity_probe_counts_requests_per_cpu_second() -> None:
    capacity = LoadAgent(0).capacity(1, probe_s=0.3)
    assert 1_000 < capacity < 10_000_000  # requests/s one engine thread can send, by CPU


def test_a_merge_of_other_bucket_layouts_is_refused() -> None:
    with pytest.raises(ValueError):
        merge_histograms([Histogram(encoded="not base64!")])
    assert merge_histograms([Histogram(), Histogram()]).count == 0


def test_an_agent_stops_at_once_and_for_good(server: Any) -> None:
    from perflab.commands.options import http_plan

    agent = LoadAgent(0)
    plan = http_plan(
        http_args(
            f"http://127.0.0.1:{server.port}/",
            "--rate",
            "100",
            "--duration",
            "300s",
            "--threads",
            "1",
        )
    )
    threading.Timer(0.5, agent.stop).start()
    t0 = time.monotonic()
    answer = agent.run_step(plan.step_config(0))
    assert time.monotonic() - t0 < 60  # a 300 s step, stopped: bounded for a busy box
    assert answer["raw"]["steps"][0]["interrupted"]
    assert agent.progress() is not None  # the live snapshot was kept
    assert agent.reachable("127.0.0.1", free_port(), 1.0)  # nothing listens: why, in words
    assert agent.reachable("127.0.0.1", server.port, 1.0) is None
    hello = agent.hello()
    assert hello["cores"] >= 1 and hello["perflab_version"]


# --- joining a cluster --------------------------------------------------------------

#: What Ray Client raises when the head's proxy could not start this driver's server.
CLIENT_REFUSED = (
    "Initialization failure from server:\nTraceback (most recent call last):\n"
    '  File "proxier.py", line 770, in Datapath\n    raise RuntimeError(\n'
    "RuntimeError: Proxy failed to Connect to backend! Check the logs"
)


class _RefusingRay:
    """A ``ray`` module whose ``init`` is refused ``refusals`` times, then joins."""

    def __init__(self, refusals: int) -> None:
        self.refusals, self.calls = refusals, 0

    def is_initialized(self) -> bool:
        return False

    def init(self, address: str, **kwargs: Any) -> None:
        self.calls += 1
        if self.calls <= self.refusals:
            raise ConnectionAbortedError(CLIENT_REFUSED)


@pytest.mark.parametrize(
    "address,refusals,joined,calls",
    [
        ("ray://127.0.0.1:10001", 2, True, 3),  # refused twice: the third join holds
        ("ray://127.0.0.1:10001", 3, False, 3),  # refused every time: one clear line
        ("127.0.0.1:6379", 1, False, 1),  # a GCS address is no Ray Client: not retried
    ],
)
def test_a_refused_ray_client_join_is_retried_a_bounded_number_of_times(
    monkeypatch: Any, address: str, refusals: int, joined: bool, calls: int
) -> None:
    from perflab.engines.http.cluster import controller

    monkeypatch.setattr(controller, "CLIENT_JOIN_PAUSE_S", 0.0)
    monkeypatch.setattr(controller, "enable_token_auth_to_join", lambda: None)
    monkeypatch.setattr(controller.bounds, "check_address", lambda address: None)  # a fake Ray
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    news: list[str] = []
    cluster = controller.Cluster(
        controller.ClusterOptions(2, address), ("127.0.0.1", 9, 1.0), [], news.append
    )
    cluster.ray = fake = _RefusingRay(refusals)
    if joined:
        cluster._connect()
        assert [n for n in news if "joining again" in n] == [
            "the Ray Client server failed to start a server for this driver (RuntimeError: "
            f"Proxy failed to Connect to backend! Check the logs); joining again ({k} of 3)…"
            for k in (2, 3)
        ]
    else:
        with pytest.raises(UsageError) as refused:
            cluster._connect()
        line = str(refused.value)
        assert f"cannot join the Ray cluster {address!r}" in line and "\n" not in line
        if address.startswith("ray://"):
            assert "3 times (RuntimeError: Proxy failed" in line and "ray_client_server" in line
    assert fake.calls == calls


def test_a_ray_client_join_outwaits_the_heads_proxy() -> None:
    from perflab.engines.http.cluster import bounds, controller

    # the proxy waits for this driver's server up to 120 s on a head set up as
    # docs/distributed.md advises: perflab must wait longer, or its deadline cuts the
    # join off while the server starts (and the proxy's refusal, retried, never comes)
    assert controller.join_deadline_s("ray://10.0.0.1:10001") > 120
    assert controller.join_deadline_s("10.0.0.1:6379") == bounds.JOIN_S
    assert controller.join_deadline_s("local") == controller.START_TIMEOUT_S


class _StartingRay:
    """A Ray whose actors' worker processes Ray gives up on: actor k dies "never
    started" ``never[k]`` times before its hello answers (no real Ray, no clock)."""

    def __init__(self, never: dict[int, int], ready: bool = True) -> None:
        import ray

        self.exceptions = ray.exceptions
        self.never, self.ready, self.spawned = dict(never), ready, Counter()

    def spawn(self, index: int, node: str) -> Any:
        self.spawned[index] += 1
        fake = self

        class Hello:
            def remote(self) -> tuple[int, int]:
                return (index, fake.spawned[index])

        return type("Actor", (), {"hello": Hello()})()

    def wait(self, refs: list[Any], num_returns: int, timeout: float) -> tuple[list, list]:
        return (refs[:1], refs[1:]) if self.ready else ([], refs)

    def get(self, ref: tuple[int, int], timeout: float) -> dict[str, Any]:
        index, incarnation = ref
        if incarnation <= self.never.get(index, 0):
            raise self.exceptions.ActorDiedError()  # a system death, not __init__'s
        return {"agent": index, "incarnation": incarnation}


def _starting_cluster(fake: _StartingRay, news: list[str]) -> Any:
    from perflab.engines.http.cluster import controller

    cluster = controller.Cluster(
        controller.ClusterOptions(2), ("127.0.0.1", 9, 1.0), [], news.append
    )
    cluster.ray, cluster._spawn = fake, fake.spawn
    for i in range(2):
        info = AgentInfo(index=i, host="?", address="127.0.0.1", node="n")
        cluster.agents.append(controller.Agent(info, fake.spawn(i, "n")))
    return cluster


def test_an_agent_ray_gave_up_starting_is_started_again_until_a_deadline(
    monkeypatch: Any,
) -> None:
    from perflab.engines.http.cluster import controller

    news: list[str] = []
    fake = _StartingRay({1: 2})  # agent 2's worker: given up on twice, then it starts
    cluster = _starting_cluster(fake, news)
    hellos = cluster._hellos()
    assert hellos == [{"agent": 0, "incarnation": 1}, {"agent": 1, "incarnation": 3}]
    assert fake.spawned == {0: 1, 1: 3}
    assert [n.split(": ", 1)[1] for n in news] == [
        f"Ray gave up starting its worker process (a busy node?); starting it again (attempt {k})…"
        for k in (2, 3)
    ]
    # never started by the deadline (0 s left once a death is seen): one line, no retry
    monkeypatch.setattr(controller, "START_TIMEOUT_S", 0.0)
    fake = _StartingRay({1: 99})
    with pytest.raises(UsageError) as late:
        _starting_cluster(fake, [])._hellos()
    line = str(late.value)
    assert "load agent(s) 2 did not start within 0 s (Ray gave up" in line and "\n" not in line
    # an agent that never answers at all: the same bounded line
    with pytest.raises(UsageError, match=r"agent\(s\) 1, 2 did not start within 0 s;"):
        _starting_cluster(_StartingRay({}, ready=False), [])._hellos()
    # a failing __init__ is no busy machine: not retried
    fake = _StartingRay({0: 1})
    broken = fake.exceptions.ActorDiedError()
    broken._actor_init_failed = True
    monkeypatch.setattr(fake, "get", lambda ref, timeout: (_ for _ in ()).throw(broken))
    with pytest.raises(UsageError, match="failed at start-up \\(hello\\)"):
        _starting_cluster(fake, [])._hellos()
    assert fake.spawned == {0: 1, 1: 1}


# --- results, table, bad input ------------------------------------------------------


def test_per_agent_data_round_trips_and_is_tabled(
    server: Any, tmp_path: Path, load_agents: Any
) -> None:
    from perflab import model
    from perflab.report.http_agents import agents_table

    url = f"http://127.0.0.1:{server.port}/"
    steps = [step_from_raw(a["raw"]["steps"][0]) for a in load_agents(url, 2, 200.0, 0.3)]
    merged = merge_steps(steps)
    merged.agents = [
        AgentShare(0, 0, 0, 0.2, 0.01, step=steps[0]),
        AgentShare(1, None, None, lost=True, error="died during the step"),
    ]
    results = agents_results(
        url,
        merged,
        [
            AgentInfo(0, "h<1>", same_clock=True),
            AgentInfo(
                1,
                "h2",
                offset_ns=2_500_000,
                offset_uncertainty_ns=40_000,
                lost_at_step=0,
                error="died",
                clock_flagged="clock_steps",
            ),
        ],
    )
    path = tmp_path / "r.json"
    model.save(results, path, {})
    back = model.load(path)
    assert back.agents[1].offset_ns == 2_500_000 and back.agents[1].clock_flagged
    share = back.benchmarks[0].steps[0].agents
    assert share[0].step.latency.count == steps[0].latency.count and share[1].lost
    from perflab.analyze.http import summarize_results

    sweep = summarize_results(back)
    table = agents_table(back, sweep)
    assert [r[1] for r in table.rows] == ["agent 1", "agent 2"]
    assert table.rows[1][-1].startswith("lost")
    text = "\n".join(table.footnotes)
    assert "+2.500 ± 0.040 ms" in text and "CLOCK CHECKS FAILED" in text
    from perflab.analyze.http import capacity, summarize_steps

    summary = summarize_steps(back.benchmarks[0].steps)
    assert summary[0].agents_lost == [1] and capacity(summary) is None
    from perflab.report.http_table import agents_records, step_records

    rows = agents_records(back, sweep, step_records(summary))  # CSV: merged, then each agent
    assert [(r["agent"], r["step"]) for r in rows] == [("all", 1), (1, 1), (2, 1)]
    assert rows[1]["verdict"] in ("ok", "generator-limited") and rows[2]["verdict"] == "lost"
    assert rows[0]["agent"] == "all" and rows[1]["host"] == "h<1>"
    assert rows[1]["latency_p99_s"] > 0 and rows[2]["error"] == "died during the step"


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--rate", "100", "--agents", "0"], "between 1 and"),
        (["--rate", "100", "--cluster", "auto"], "go with --agents"),
        (["--agents", "2", "--rate", "100", "--connections", "1"], "one connection per agent"),
        (["--rate", "100", "--agents", "2", "--agents-per-node", "0"], "at least 1"),
        (["--rate", "100", "--agents", "3", "--split", "3,1"], "2 weights for --agents 3"),
        (["--rate", "100", "--agents", "2", "--split", "fast"], "use even, capacity"),
        (["--rate", "100", "--agents", "2", "--split", "1,-1"], "one positive weight"),
        (["--rate", "100", "--split", "capacity"], "go with --agents"),
    ],
)
def test_bad_distributed_options_are_one_line_before_ray_starts(
    argv: list[str], message: str, capsys: Any, monkeypatch: Any
) -> None:
    # before Ray: with `import ray` failing, reaching for it would say how to install it
    monkeypatch.setitem(sys.modules, "ray", None)
    code = cli.main(["http", "http://127.0.0.1:9/", *argv, "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err, err
    assert "pip install" not in err


def test_without_ray_agents_says_how_to_get_it(monkeypatch: Any, capsys: Any) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray → ImportError
    code = cli.main(["http", "http://127.0.0.1:9/", "--rate", "100", "--agents", "2", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "pip install 'perflab[cluster]'" in err, err
