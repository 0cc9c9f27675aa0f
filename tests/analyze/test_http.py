"""perflab.analyze.http: per-step figures, verdicts and the capacity estimate, on
synthetic steps (deterministic: nothing is timed)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perflab.analyze import http as ah
from perflab.analyze import http_slo
from perflab.model import Histogram, HttpStep


def hist(p99_us: float, count: int = 1000, p50_us: float | None = None) -> Histogram:
    p50 = p99_us / 4 if p50_us is None else p50_us
    return Histogram(
        encoded="",
        count=count,
        min_us=p50 / 2,
        mean_us=p50,
        p50_us=p50,
        p90_us=p50 * 2,
        p99_us=p99_us,
        p999_us=p99_us * 1.5,
        max_us=p99_us * 2,
    )


def step(
    rate: float | None = 1000.0,
    achieved: float | None = None,
    failures: int = 0,
    p99_us: float = 2000.0,
    lag_us: float = 100.0,
    cpu: float = 0.2,
    mode: str = "open",
    connections: int = 64,
    dispatch: bool = True,
    pool_waits: int = 0,
    **extra: object,
) -> HttpStep:
    """A 10 s step: achieved req/s of successes (default: the offered rate); ``extra``
    sets or overrides any other field."""
    ok = int(10 * (achieved if achieved is not None else rate or 1000.0))
    fields: dict[str, object] = dict(
        offered_rate=rate,
        connections=connections,
        mode=mode,
        duration_s=11.0,
        warmup_s=1.0,
        elapsed_s=10.0,
        requests_sent=ok + failures,
        ok_responses=ok,
        failures=failures,
        latency=hist(p99_us),
        service_time=hist(p99_us * 0.9),
        send_lag=hist(lag_us) if mode != "closed" else Histogram(),
        dispatch_lag=hist(lag_us) if dispatch and mode != "closed" else Histogram(),
        thread_cpu_s=[cpu * 10.0],
        connections_opened=10,
        pool_waits=pool_waits,
    )
    return HttpStep(**{**fields, **extra})  # type: ignore[arg-type]


def verdicts(steps: list[HttpStep], slo_s: float | None = None) -> list[str]:
    return [s.verdict for s in ah.summarize_steps(steps, slo_s)]


def test_figures_of_one_step() -> None:
    s = ah.summarize_step(
        step(
            1000.0,
            achieved=900.0,
            failures=100,
            connection_errors=2,
            connect_failures=2,
            status_counts={"200": 9000, "503": 100},
            errors={"reset": 0},
        ),
        ok="200-299",
    )
    assert s.achieved_rate == pytest.approx(900.0)
    assert s.error_fraction == pytest.approx(100 / 9100)
    assert s.connection_error_fraction == pytest.approx(2 / 12)
    assert s.latency_s["p99"] == pytest.approx(2e-3) and s.send_lag_p99_s == pytest.approx(1e-4)
    assert s.cpu_share == pytest.approx(0.2) and s.label == "1,000/s"
    assert s.failed_statuses == {"503": 100}
    assert ah.summarize_step(step(status_counts={"304": 5}), ok="200-299,304").failed_statuses == {}


def test_empty_histograms_give_nan_not_zero() -> None:
    s = ah.summarize_step(
        HttpStep(
            offered_rate=10.0,
            connections=1,
            mode="open",
            duration_s=1.0,
            warmup_s=0.0,
            elapsed_s=0.0,
        )
    )
    assert math.isnan(s.achieved_rate) and math.isnan(s.latency_s["p50"])
    assert math.isnan(s.error_fraction)


def test_saturation_rules() -> None:
    assert verdicts([step(1000.0)]) == ["ok"]
    assert verdicts([step(1000.0, achieved=949.0)]) == ["saturated"]
    assert verdicts([step(1000.0, achieved=951.0)]) == ["ok"]
    assert verdicts([step(1000.0, failures=150)]) == ["errors"]  # 1.5%, server kept up
    assert verdicts([step(1000.0, failures=50)]) == ["ok"]  # 0.5% errors
    assert verdicts([step(1000.0, p99_us=150_000)], slo_s=0.1) == ["saturated"]
    assert verdicts([step(1000.0, p99_us=150_000)]) == ["ok"]


def test_achieved_counts_the_window_only_and_a_backlog_saturates() -> None:
    # The repro of issue 11: 2,905 responses, but only 1,450 completed inside the 1.6 s
    # window; the rest came while the step drained for 1.7 s.
    repro = step(
        1500.0,
        achieved=0.0,
        elapsed_s=1.6,
        thread_cpu_s=[0.1],
        ok_responses=1450,
        ok_from_warmup=250,
        drained=1455,
        drain_s=1.7,
        requests_sent=2655,
    )
    (s,) = ah.summarize_steps([repro])
    assert s.achieved_rate == pytest.approx(1450 / 1.6)
    assert s.completed == 2655 and s.drained == 1455
    assert s.verdict == "saturated" and any("drained for 1.70 s" in r for r in s.reasons)
    assert ah.capacity([s]) is None
    # A drain of up to 5% of the window is a server answering its last requests.
    assert verdicts([step(1000.0, drained=20, drain_s=0.5)]) == ["ok"]
    assert verdicts([step(1000.0, drained=20, drain_s=0.51)]) == ["saturated"]
    assert verdicts([step(1000.0, unsent=1)]) == ["saturated"]
    assert verdicts([step(1000.0, unfinished=1)]) == ["saturated"]
    # Requests a Ctrl-C cut off say nothing about the server.
    assert verdicts([step(1000.0, unfinished=5, interrupted=True)]) == ["ok"]


def test_closed_loop_backlogs_saturate_too() -> None:
    closed = {"mode": "closed", "rate": None, "connections": 8}
    assert verdicts([step(**closed, drain_s=0.01)]) == ["ok"]
    assert verdicts([step(**closed, drain_s=0.9)]) == ["saturated"]
    assert verdicts([step(**closed, unfinished=8)]) == ["saturated"]


def test_a_schema_1_step_is_read_as_it_was_counted() -> None:
    # ok_responses then held the drained responses too: the rate is what it was, and
    # the drain estimated from the wall time still marks the step saturated.
    old = step(
        1500.0,
        achieved=0.0,
        elapsed_s=1.6,
        thread_cpu_s=[0.1],
        ok_responses=2905,
        drained=None,
        ok_from_warmup=None,
        drain_s=1.7,
    )
    (s,) = ah.summarize_steps([old])
    assert s.completed == 2905 and s.drained is None
    assert s.verdict == "saturated"


def test_a_server_far_behind_is_saturated_even_when_perflab_was_late() -> None:
    # perflab 2.5 ms late at p99 cannot explain a 1.2 s backlog.
    (s,) = ah.summarize_steps([step(1000.0, lag_us=2500.0, unsent=40, drain_s=1.2)])
    assert s.verdict == "saturated" and ah.server_bound(s)
    # ... but it can explain a backlog of the same size as its lateness,
    assert verdicts([step(1000.0, lag_us=2500.0, unsent=1, drain_s=0.003)]) == ["generator-limited"]
    # and a CPU-bound engine thread says nothing about the server.
    assert verdicts([step(1000.0, cpu=0.95, unsent=40, drain_s=1.2)]) == ["generator-limited"]


def test_generator_limits_take_precedence_and_say_why() -> None:
    (cpu,) = ah.summarize_steps([step(1000.0, achieved=500.0, cpu=0.95)])
    assert cpu.verdict == "generator-limited" and "busy" in cpu.reasons[0]
    (late,) = ah.summarize_steps([step(1000.0, lag_us=2500.0)])
    assert late.verdict == "generator-limited" and "2.50 ms" in late.reasons[0]


def test_send_lag_from_busy_connections_is_the_servers() -> None:
    # Without a dispatch-lag histogram (an older file) a large send lag counts as
    # perflab's only when requests did not wait for a busy connection.
    assert verdicts([step(lag_us=5000.0, dispatch=False)]) == ["generator-limited"]
    assert verdicts([step(lag_us=5000.0, dispatch=False, pool_waits=5000)]) == ["ok"]


def test_every_heavier_step_after_the_knee_is_saturated() -> None:
    steps = [step(1000.0), step(2000.0, achieved=1800.0), step(3000.0), step(4000.0, cpu=0.99)]
    summaries = ah.summarize_steps(steps)
    assert [s.verdict for s in summaries] == ["ok", "saturated", "saturated", "generator-limited"]
    assert "already saturated" in summaries[2].reasons[0]
    cap = ah.capacity(summaries)
    assert cap is not None and cap.step.label == "1,000/s" and not cap.at_least


def test_knee_follows_load_not_run_order() -> None:
    steps = [step(3000.0), step(1000.0), step(2000.0, achieved=1000.0)]
    assert verdicts(steps) == ["saturated", "ok", "saturated"]


def test_capacity_variants() -> None:
    assert ah.capacity(ah.summarize_steps([step(1000.0, achieved=10.0)])) is None
    cap = ah.capacity(ah.summarize_steps([step(1000.0), step(2000.0)]))
    assert cap is not None and cap.at_least and not cap.limited_by_perflab
    assert cap.step.offered_rate == 2000.0
    cap = ah.capacity(ah.summarize_steps([step(1000.0), step(2000.0, cpu=0.95)]))
    assert cap is not None and cap.at_least and cap.limited_by_perflab


def test_closed_loop_uses_connections_errors_and_slo() -> None:
    steps = [
        step(None, achieved=500.0 * n, mode="closed", connections=n, p99_us=1000.0 * n)
        for n in (1, 8, 64)
    ]
    summaries = ah.summarize_steps(steps, slo_s=0.01)
    assert [s.label for s in summaries] == ["1 conn", "8 conn", "64 conn"]
    assert [s.verdict for s in summaries] == ["ok", "ok", "saturated"]
    assert math.isnan(summaries[0].send_lag_p99_s)


def closed(n: int, achieved: float, **extra: object) -> HttpStep:
    return step(None, achieved=achieved, mode="closed", connections=n, **extra)


def test_closed_loop_past_the_throughput_knee_is_saturated() -> None:
    # The repro: a CPU-bound endpoint under uvicorn (one worker) gave 340/s at 1 connection,
    # 254/s at 4 and 373/s at 16, with p99 11 → 36 → 96 ms, and every step read "ok"
    # ("no step saturated the server: sweep higher").
    summaries = ah.summarize_steps([closed(1, 340.0), closed(4, 254.0), closed(16, 373.0)])
    assert [s.verdict for s in summaries] == ["ok", "saturated", "saturated"]
    assert summaries[1].reasons == ["4× the conns of 1 conn, -25% throughput"]
    cap = ah.capacity(summaries)
    assert cap is not None and cap.step.connections == 1 and not cap.at_least
    # A server that scales stays ok, however many connections (≥ 10% more per 1.5×)...
    assert verdicts([closed(n, 100.0 * n) for n in (1, 4, 16, 64)]) == ["ok"] * 4
    assert verdicts([closed(2, 200.0), closed(3, 221.0)]) == ["ok", "ok"]  # +10.5%
    assert verdicts([closed(2, 200.0), closed(3, 219.0)]) == ["ok", "saturated"]  # +9.5%
    # ... steps closer than 1.5× the connections are not compared (noise, not a knee) ...
    assert verdicts([closed(10, 500.0), closed(14, 480.0)]) == ["ok", "ok"]
    # ... the best lighter step is the reference, in whatever order the sweep ran ...
    assert verdicts([closed(16, 400.0), closed(1, 300.0), closed(4, 420.0)]) == [
        "saturated",
        "ok",
        "ok",
    ]
    # ... a generator-limited lighter step is no reference (its figures are perflab's) ...
    assert verdicts([closed(1, 300.0, thread_cpu_s=[9.5]), closed(4, 310.0)]) == [
        "generator-limited",
        "ok",
    ]
    # ... and open-loop steps never count.
    assert verdicts([step(1000.0), closed(64, 1000.0)]) == ["ok", "ok"]


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(1, 50), st.floats(0.5, 1.0), st.integers(0, 300), st.floats(0.0, 1.0)
        ),
        min_size=1,
        max_size=8,
        unique_by=lambda t: t[0],
    )
)
def test_capacity_is_ok_and_below_every_saturated_step(rows: list[tuple]) -> None:
    steps = [
        step(1000.0 * r, achieved=1000.0 * r * share, failures=f, cpu=cpu)
        for r, share, f, cpu in rows
    ]
    summaries = ah.summarize_steps(steps)
    cap = ah.capacity(summaries)
    saturated = [s.load for s in summaries if s.verdict == "saturated"]
    if cap is None:
        assert all(s.verdict != "ok" for s in summaries)
        return
    assert cap.step.verdict == "ok"
    assert all(cap.step.load < load for load in saturated)
    assert all(s.load <= cap.step.load for s in summaries if s.verdict == "ok")


def test_slo_limits_each_saturate_and_name_themselves() -> None:
    s = ah.summarize_step(
        step(1000.0, p99_us=2000.0, failures=20, status_counts={"200": 10000, "503": 20})
    )
    slo = {"p50": 1.0, "p99": 1e-3, "p99.9": 1.0, "error": 0.001}
    assert http_slo.slo_misses(s, slo) == ["p99 over the 1 ms SLO", "errors over the 0.1% SLO"]
    assert http_slo.slo_misses(s, {"p99": 5e-3, "error": 0.01}) == []
    assert http_slo.slo_thresholds(0.02) == {"p99": 0.02} and http_slo.slo_thresholds(None) == {}
    assert "p99.9 over the 1 ms SLO" in ah.saturation_reasons(s, {"p99.9": 1e-3})
    assert http_slo.slo_text({"p99": 0.01, "error": 0.001}) == "p99 ≤ 10 ms, errors ≤ 0.1%"
    assert verdicts([step(1000.0, p99_us=2000.0)], {"p99": 1e-3}) == ["saturated"]
