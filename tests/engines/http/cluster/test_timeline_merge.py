"""The agents' timelines of one step merged on the common start (``merge_timelines``),
from synthetic agent shares: known latencies per interval, recorded into HdrHistograms
with perflab's bucket layout by the ``hdrhistogram`` package. Deterministic."""

from __future__ import annotations

import math
import random

import pytest
from hdrh.histogram import HdrHistogram

from perflab import _core
from perflab.analyze.http import summarize_step
from perflab.engines.http.cluster.merge import merge_steps, merge_timelines
from perflab.model import HttpStep
from perflab.model.http_timeline import Timeline


def _encoded(values_us: list[int]) -> str:
    """A V2-deflate base64 HdrHistogram (lowest 1 µs, 3 digits, as the engine's) of values."""
    h = HdrHistogram(1, 3_600_000_000, 3)
    for v in values_us:
        h.record_value(v)
    return h.encode().decode()


def _agent(seed: int, rows: int, rate: float | None = 100.0) -> tuple[Timeline, list[list[int]]]:
    """One agent's timeline of ``rows`` 1 s intervals, and the latencies (µs) it recorded
    per interval."""
    rng = random.Random(seed)
    tl = Timeline(interval_s=1.0)
    recorded = []
    for j in range(rows):
        values = [rng.randint(100, 50_000) for _ in range(rng.randint(0, 40))]
        lags = [rng.randint(1, 900) for _ in values]
        recorded.append(values)
        tl.t_s.append(float(j))
        tl.offered_rate.append(rate)
        tl.sent.append(len(values) + rng.randint(0, 3))
        tl.ok.append(len(values))
        tl.errors.append(rng.randint(0, 2))
        for name in ("p50_us", "p99_us", "p999_us", "send_lag_p99_us"):
            getattr(tl, name).append(None)
        tl.latency_encoded.append(_encoded(values))
        tl.send_lag_encoded.append(_encoded(lags))
    return tl, recorded


def _nearest_rank(values: list[int], q: float) -> float:
    """HdrHistogram's value at quantile q of raw values (its bucket's highest equivalent)."""
    h = HdrHistogram(1, 3_600_000_000, 3)
    for v in values:
        h.record_value(v)
    d = _core.hdr_decode(h.encode().decode())
    return float(d[{0.5: "p50_us", 0.99: "p99_us", 0.999: "p999_us"}[q]])


def test_counts_are_the_sums_and_percentiles_those_of_every_request() -> None:
    agents = [_agent(1, 6), _agent(2, 6), _agent(3, 7)]  # the last drained one interval more
    merged = merge_timelines([tl for tl, _ in agents])
    assert merged is not None and len(merged) == 7 and merged.interval_s == 1.0
    assert merged.t_s == [float(j) for j in range(7)]
    for name in ("sent", "ok", "errors"):
        assert sum(getattr(merged, name)) == sum(sum(getattr(tl, name)) for tl, _ in agents)
        for j in range(6):
            assert getattr(merged, name)[j] == sum(getattr(tl, name)[j] for tl, _ in agents)
    assert merged.offered_rate[:6] == [300.0] * 6 and merged.offered_rate[6] == 100.0
    for j in range(7):
        union = [v for _, rec in agents if j < len(rec) for v in rec[j]]
        d = _core.hdr_decode(merged.latency_encoded[j])
        assert d["count"] == len(union)
        for q, column in ((0.5, merged.p50_us), (0.99, merged.p99_us), (0.999, merged.p999_us)):
            assert column[j] == (_nearest_rank(union, q) if union else None)
    assert merged.achieved_rate() == [float(n) for n in merged.ok]


def test_shifted_parts_land_on_the_common_start() -> None:
    (a, _), (b, _) = _agent(4, 5), _agent(5, 5)
    # b's intervals began 1 s (give or take its offset's few ms) after the common start
    merged = merge_timelines([a, b], [0.0, 1.004])
    assert merged is not None and len(merged) == 6
    assert merged.ok[0] == a.ok[0] and merged.ok[5] == b.ok[4]
    assert merged.ok[3] == a.ok[3] + b.ok[2]
    assert sum(merged.sent) == sum(a.sent) + sum(b.sent)
    # an interval starting before the common start folds into the first
    early = merge_timelines([a, b], [0.0, -1.0])
    assert early is not None and early.ok[0] == a.ok[0] + b.ok[0] + b.ok[1]
    assert sum(early.ok) == sum(a.ok) + sum(b.ok)


def test_closed_loop_and_missing_timelines() -> None:
    (a, _), (b, _) = _agent(6, 3, rate=None), _agent(7, 3, rate=None)
    merged = merge_timelines([a, b])
    assert merged is not None and merged.offered_rate == [None] * 3
    assert merge_timelines([a, None]) is None and merge_timelines([]) is None
    b.interval_s = 0.5
    with pytest.raises(ValueError, match="different intervals"):
        merge_timelines([a, b])
    with pytest.raises(ValueError, match="shifts"):
        merge_timelines([a], [0.0, 0.0])


def test_a_merged_step_carries_the_merged_timeline() -> None:
    parts = []
    for seed in (8, 9):
        tl, _ = _agent(seed, 4)
        parts.append(
            HttpStep(
                offered_rate=100.0,
                connections=4,
                mode="open",
                duration_s=4.0,
                warmup_s=0.0,
                elapsed_s=4.0,
                ok_responses=sum(tl.ok),
                requests_sent=sum(tl.sent),
                timeline=tl,
            )
        )
    merged = merge_steps(parts)
    assert merged.timeline is not None
    assert sum(merged.timeline.ok) == merged.ok_responses == sum(p.ok_responses for p in parts)
    assert sum(merged.timeline.sent) == merged.requests_sent
    assert merged.timeline.offered_rate == [200.0] * 4
    assert not math.isnan(summarize_step(merged).achieved_rate)
    parts[1].timeline = None  # --interval 0 on one agent: no partial timeline
    assert merge_steps(parts).timeline is None


# --- load shapes on agents (Poisson) --------------------------------------------------

RAMP = {"kind": "ramp", "from": 100.0, "to": 500.0, "over_s": 1.0}


def test_a_shape_is_split_by_weight_and_merges_back() -> None:
    from perflab.engines.http.cluster.merge import merge_shapes
    from perflab.engines.http.cluster.split import split_step
    from perflab.errors import UsageError

    config = {"mode": "open", "shape": RAMP, "arrival": "poisson", "connections": None}
    parts = split_step(config, 2, [3.0, 1.0])
    assert [p["shape"] for p in parts if p] == [
        {"kind": "ramp", "from": 75.0, "to": 375.0, "over_s": 1.0},
        {"kind": "ramp", "from": 25.0, "to": 125.0, "over_s": 1.0},
    ]
    assert all(p is not None and "rate" not in p for p in parts)
    assert len({p["seed"] for p in parts if p}) == 2
    assert merge_shapes([p["shape"] for p in parts if p]) == RAMP
    sine = {"kind": "sine", "mean": 300.0, "amplitude": 100.0, "period_s": 2.0}
    halves = [p["shape"] for p in split_step({**config, "shape": sine}, 2) if p]
    assert halves[0]["mean"] == 150.0 and merge_shapes(halves) == sine
    assert merge_shapes([RAMP, None]) is None and merge_shapes([RAMP, sine]) is None
    with pytest.raises(UsageError, match="--poisson"):
        split_step({**config, "arrival": "constant"}, 2)


def test_the_command_refuses_an_evenly_spaced_shape_on_agents() -> None:
    from perflab.commands.options import http_plan
    from perflab.errors import UsageError
    from tests.conftest import http_args

    argv = ["http://127.0.0.1:9/", "--rate", "1k..2k/10s", "--agents", "2"]
    with pytest.raises(UsageError, match="needs --poisson"):
        http_plan(http_args(*argv), check=False)
    plan = http_plan(http_args(*argv, "--poisson"), check=False)
    assert plan.shape is not None and plan.shape["kind"] == "ramp"


def _poisson_ramp_steps() -> list[HttpStep]:
    """Two load agents (threads, as Ray would run them in processes) on the Poisson
    :data:`RAMP` against `perflab serve`, 0.25 s intervals: each agent's step."""
    import threading
    import time

    from perflab.engines.http.cluster.agent import LoadAgent
    from perflab.engines.http.cluster.split import split_step
    from perflab.engines.http.engine import make_plan
    from perflab.engines.http.steps import step_from_raw

    with _core.serve({"host": "127.0.0.1", "port": 0}) as server:
        plan = make_plan(f"http://127.0.0.1:{server.port}/", 1.0, 0.0, [500.0], threads=1)
        plan.shape = RAMP
        config = {**plan.step_config(0), "arrival": "poisson", "interval_s": 0.25}
        start = time.time_ns() + 200_000_000
        configs = [{**c, "start_unix_ns": start} for c in split_step(config, 2) if c]
        answers: list[dict] = [{}, {}]

        def one(k: int) -> None:
            answers[k] = LoadAgent(k).run_step(configs[k])

        threads = [threading.Thread(target=one, args=(k,)) for k in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    return [step_from_raw(a["raw"]["steps"][0]) for a in answers]


def test_agents_on_a_poisson_ramp_merge_into_the_whole_ramp() -> None:
    from perflab.analyze.http import summarize_results
    from perflab.model.cluster import AgentInfo, AgentShare
    from perflab.report.http_agents import agents_table
    from tests.conftest import agents_results

    steps = _poisson_ramp_steps()
    merged = merge_steps(steps)
    assert merged.shape == RAMP
    assert merged.offered_rate == pytest.approx(300.0)  # the ramp's mean over its 1 s
    tl = merged.timeline
    assert tl is not None and tl.interval_s == 0.25
    for name in ("sent", "ok", "errors"):
        assert sum(getattr(tl, name)) == sum(sum(getattr(s.timeline, name)) for s in steps)  # type: ignore[union-attr]
    # each interval offers the whole ramp's mean rate over it: 100 + 400·(j + ½)/4
    assert tl.offered_rate[:4] == pytest.approx([150.0, 250.0, 350.0, 450.0])
    assert summarize_step(merged).ramp is not None
    # the per-agent table shows each agent's offered rate (Poisson steps too)
    merged.agents = [AgentShare(k, 0, 0, 0.2, 0.01, step=s) for k, s in enumerate(steps)]
    results = agents_results(
        "GET /", merged, [AgentInfo(0, "a", same_clock=True), AgentInfo(1, "b", same_clock=True)]
    )
    table = agents_table(results, summarize_results(results))
    assert [r[2] for r in table.rows] == ["150/s", "150/s"]
