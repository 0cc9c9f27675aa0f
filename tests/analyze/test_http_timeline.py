"""perflab.analyze.http_timeline: the capacity of a ramp read off a synthetic timeline."""

from __future__ import annotations

from perflab.analyze.http_timeline import ramp_capacity
from perflab.model import HttpStep
from perflab.model.http_timeline import Timeline

RAMP = {"kind": "ramp", "from": 1000.0, "to": 10000.0, "over_s": 20.0}


def _step(capacity: float, shape: dict | None = RAMP, warmup_s: float = 1.0) -> HttpStep:
    """A 20 s ramp 1k→10k/s against a server that serves at most ``capacity``/s, whose
    p99 is 1 ms below it and grows by 100 ms a second past it."""
    tl = Timeline(interval_s=1.0)
    for j in range(21):
        offered = 1000 + 450 * (j + 0.5) if j < 20 else 10000.0
        over = offered > capacity
        tl.t_s.append(float(j))
        tl.offered_rate.append(offered)
        tl.sent.append(round(offered))
        tl.ok.append(round(min(offered, capacity)))
        tl.errors.append(0)
        p99 = 1000.0 + (1e5 * (offered - capacity) / 450 if over else 0)
        for column in (tl.p50_us, tl.p99_us, tl.p999_us, tl.send_lag_p99_us):
            column.append(p99)
        tl.latency_encoded.append("")
        tl.send_lag_encoded.append("")
    return HttpStep(
        offered_rate=5500.0,
        connections=64,
        mode="open",
        duration_s=20.0,
        warmup_s=warmup_s,
        elapsed_s=19.0,
        shape=shape,
        timeline=tl,
    )


def test_the_knee_and_the_plateau_are_the_servers_capacity() -> None:
    cap = ramp_capacity(_step(5000.0), 0.95)
    assert cap is not None and not cap.at_least
    assert cap.estimate_rate == cap.plateau_rate == 5000.0
    # A server the backlog drags down later: the estimate keeps its sustained top.
    step = _step(5000.0)
    assert step.timeline is not None
    for j in range(13, 21):
        step.timeline.ok[j] = 2000
    dragged = ramp_capacity(step, 0.95)
    assert dragged is not None and dragged.estimate_rate == 5000.0
    assert dragged.plateau_rate == 2000.0
    # A faster spell later (the machine's other load paused) does not raise it either:
    # the estimate is the server's first fall, as a stepped sweep's is.
    for j in range(14, 17):
        step.timeline.ok[j] = 6000
    spell = ramp_capacity(step, 0.95)
    assert spell is not None and spell.estimate_rate == 5000.0 and spell.knee_t_s == 9.0
    # The last interval whose offered rate (1000 + 450·(j + ½)) was served in full.
    assert cap.tracked_rate == 4825.0 and cap.knee_t_s == 9.0
    assert cap.p99_before_us == 1000.0 and cap.p99_after_us > 100 * cap.p99_before_us


def test_a_server_that_kept_up_gives_a_lower_bound_and_other_steps_none() -> None:
    cap = ramp_capacity(_step(1e9), 0.95)
    assert cap is not None and cap.at_least and cap.knee_t_s is None
    assert cap.estimate_rate == 1000 + 450 * 19.5  # the last full interval of the ramp
    assert ramp_capacity(_step(5000.0, shape=None), 0.95) is None
    sine = {"kind": "sine", "mean": 5.0, "amplitude": 1.0, "period_s": 2.0}
    assert ramp_capacity(_step(5000.0, shape=sine), 0.95) is None


def test_the_estimate_is_the_median_of_the_intervals_from_the_knee() -> None:
    step = _step(5000.0)
    assert step.timeline is not None
    step.timeline.ok[9:12] = [4700, 5200, 4100]  # the knee at 9 s, then a noisy server
    cap = ramp_capacity(step, 0.95)
    assert cap is not None and cap.knee_t_s == 9.0 and cap.estimate_rate == 4700.0
    # a knee near the end has fewer intervals after it: the median of those
    late = _step(8800.0)
    assert late.timeline is not None
    late.timeline.ok[19] = 8600
    cap = ramp_capacity(late, 0.95)
    assert cap is not None and cap.knee_t_s == 18.0 and cap.estimate_rate == 8700.0


def test_one_slow_interval_is_not_a_knee() -> None:
    step = _step(1e9)
    assert step.timeline is not None
    step.timeline.ok[5] = 10  # one hiccup, then back on track
    cap = ramp_capacity(step, 0.95)
    assert cap is not None and cap.at_least
