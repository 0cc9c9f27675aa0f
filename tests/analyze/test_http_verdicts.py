"""The "errors" verdict (a server that kept up but failed requests) beside "saturated"
(one that could not keep up), and the live verdict of ``perflab http``'s progress, which
must never contradict the final table. Synthetic steps only: nothing is timed."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from perflab.analyze import http as ah
from perflab.analyze import http_rules
from perflab.model import HttpStep
from perflab.report.http_table import PENDING, step_line, sweep_table
from tests.analyze.test_http import step


def one(s: HttpStep, slo: Any = None) -> ah.StepSummary:
    (summary,) = ah.summarize_steps([s], slo)
    return summary


def erring(rate: float, share: float, code: str = "500", **extra: object) -> HttpStep:
    """A 10 s step whose server answered every request on time, ``share`` of them with
    ``code``."""
    total = int(10 * rate)
    failures = round(total * share)
    return step(
        rate,
        achieved=(total - failures) / 10,
        failures=failures,
        status_counts={"200": total - failures, code: failures},
        **extra,
    )


def test_a_server_answering_5_percent_errors_is_errors_not_saturated() -> None:
    # The repro of issue 29: perflab serve --error-rate 0.05 read "saturated".
    s = one(erring(1000.0, 0.05))
    assert s.verdict == "errors"
    assert s.reasons == ["5.0% failed (status 500)"]
    assert http_rules.saturation_reasons(s) == []
    # successes alone are 95% of offered: answered (successes + error responses) counts
    assert one(erring(1000.0, 0.20)).verdict == "errors"
    assert one(erring(1000.0, 0.009)).verdict == "ok"  # under the 1% limit


def test_a_server_that_could_not_keep_up_stays_saturated() -> None:
    # timeouts are no answer: the server fell behind
    timeouts = one(
        step(1000.0, achieved=950.0, failures=500, errors={"read_timeout": 500}),
    )
    assert timeouts.verdict == "saturated"
    assert "5.0% unanswered (read timeout)" in timeouts.reasons
    # errors and a backlog: saturated, and the errors said too
    behind = one(erring(1000.0, 0.05, drain_s=1.0))
    assert behind.verdict == "saturated"
    assert behind.reasons == ["drained for 1.00 s after the step", "5.0% failed (status 500)"]
    # errors and an answered rate well under the offered one
    slow = one(step(1000.0, achieved=800.0, failures=500, status_counts={"500": 500}))
    assert slow.verdict == "saturated" and slow.reasons[0] == "answered 85% of offered"
    # a latency SLO missed is saturation; the error SLO is errors
    assert one(erring(1000.0, 0.05), {"p99": 1e-3}).verdict == "saturated"
    small = one(erring(1000.0, 0.005, code="503"), {"p99": 1.0, "error": 0.001})
    assert small.verdict == "errors"
    assert small.reasons == ["0.5% failed (status 503)", "errors over the 0.1% SLO"]


def test_errors_win_over_perflab_lateness_but_say_it() -> None:
    s = one(erring(1000.0, 0.05, lag_us=2500.0))
    assert s.verdict == "errors"
    assert s.reasons == ["5.0% failed (status 500)", "also perflab sent late (p99 2.50 ms)"]


def test_errors_are_not_capacity_and_the_knee_rules_still_apply() -> None:
    summaries = ah.summarize_steps([step(1000.0), erring(2000.0, 0.05)])
    assert [s.verdict for s in summaries] == ["ok", "errors"]
    cap = ah.capacity(summaries)
    assert cap is not None and cap.step.label == "1,000/s"
    assert cap.errors_above and not cap.at_least and not cap.limited_by_perflab
    line = sweep_table(ah.Sweep("t", summaries, cap)).footnotes[0]
    assert line.endswith(
        "heavier steps failed > 1% of requests while the server kept up (errors): not ok capacity"
    )
    assert ah.capacity(ah.summarize_steps([erring(1000.0, 0.05)])) is None
    # heavier than a saturated step: saturated, with the errors kept in the reasons
    knee = ah.summarize_steps([step(1000.0, achieved=500.0), erring(2000.0, 0.05)])
    assert [s.verdict for s in knee] == ["saturated", "saturated"]
    assert knee[1].reasons == [
        "heavier than 1,000/s, already saturated",
        "5.0% failed (status 500)",
    ]
    # closed loop: past the throughput knee is saturated, errors or not
    closed = [
        step(None, achieved=1000.0, mode="closed", connections=4),
        step(
            None,
            achieved=950.0,
            failures=500,
            status_counts={"500": 500},
            mode="closed",
            connections=16,
        ),
    ]
    assert [s.verdict for s in ah.summarize_steps(closed)] == ["ok", "saturated"]


# --- the live verdict ----------------------------------------------------------------

#: one step of each verdict, at a given load: ok, errors, saturated (three ways) and
#: generator-limited
KINDS = {
    "ok": lambda r: step(r),
    "errors": lambda r: erring(r, 0.05),
    "saturated": lambda r: step(r, achieved=0.5 * r),
    "backlog": lambda r: step(r, drain_s=1.0),
    "timeouts": lambda r: step(r, failures=int(r), errors={"read_timeout": int(r)}),
    "generator-limited": lambda r: step(r, cpu=0.97),
}
CLOSED_KINDS = {
    "ok": lambda n: step(None, achieved=100.0 * n, mode="closed", connections=n),
    "flat": lambda n: step(None, achieved=105.0, mode="closed", connections=n),
    "errors": lambda n: step(
        None,
        achieved=100.0 * n,
        failures=10 * n,
        status_counts={"500": 10 * n},
        mode="closed",
        connections=n,
    ),
    "generator-limited": lambda n: step(
        None, achieved=100.0 * n, mode="closed", connections=n, cpu=0.97
    ),
}
RESULTS = SimpleNamespace(settings={"slo": None, "ok": "200-299"})


def live_and_final(steps: list[HttpStep]) -> list[tuple[str, str, bool]]:
    """(live line, final table's line, whether the live verdict was final) per step, as
    ``perflab http`` would have shown them one step at a time."""
    final = ah.summarize_steps(steps)
    loads = [s.load for s in final]
    out = []
    for i in range(len(steps)):
        so_far = ah.live_steps(RESULTS, steps[: i + 1], loads[i + 1 :])  # type: ignore[arg-type]
        live, settled = so_far[-1]
        # an earlier step's verdict, once final, is the table's too
        for j, (earlier, known) in enumerate(so_far[:-1]):
            assert not known or step_line(earlier) == step_line(final[j])
        out.append((step_line(live, settled), step_line(final[i]), settled))
    return out


def assert_agrees(steps: list[HttpStep]) -> None:
    for live, table, settled in live_and_final(steps):
        assert live == table if settled else live.endswith(PENDING), (live, table)


def test_every_verdict_live_is_the_tables() -> None:
    # ascending loads, the usual sweep: every verdict is final at once and equal
    finals = set()
    for kinds in (
        ["ok", "errors", "ok", "saturated", "errors", "ok"],
        ["generator-limited", "ok", "backlog", "timeouts", "generator-limited"],
        ["errors", "errors", "saturated", "ok"],
    ):
        steps = [KINDS[k](1000.0 * (i + 1)) for i, k in enumerate(kinds)]
        rows = live_and_final(steps)
        assert all(settled and live == table for live, table, settled in rows)
        finals |= {s.verdict for s in ah.summarize_steps(steps)}
    assert finals == {"errors", "saturated", "ok", "generator-limited"}
    closed = [CLOSED_KINDS[k](n) for k, n in (("ok", 1), ("flat", 4), ("errors", 16))]
    assert [s.verdict for s in ah.summarize_steps(closed)] == ["ok", "saturated", "saturated"]
    assert all(settled and live == table for live, table, settled in live_and_final(closed))


def test_a_lighter_step_to_come_leaves_the_verdict_pending() -> None:
    # 3,000/s looks ok alone; the lighter 2,000/s run after it saturates, so the table
    # says saturated: the live line must not have said ok
    steps = [step(3000.0), step(1000.0), step(2000.0, achieved=1000.0)]
    rows = live_and_final(steps)
    assert [s.verdict for s in ah.summarize_steps(steps)] == ["saturated", "ok", "saturated"]
    assert rows[0][0] == "3,000/s: achieved 3,000/s, drained 0, errors 0, p99 2.00 ms, " + PENDING
    assert [settled for _, _, settled in rows] == [False, True, True]
    assert_agrees(steps)
    # a saturated or generator-limited verdict is final whatever comes
    for own in (step(3000.0, achieved=10.0), step(3000.0, cpu=0.97)):
        (s,) = ah.summarize_steps([own])
        assert http_rules.settled(s, [1.0], lambda s=s: s.verdict)
    # ... but one the knee made saturated may name another knee later
    steps = [step(1000.0, drain_s=1.0), step(3000.0), step(500.0, drain_s=1.0)]
    assert [settled for _, _, settled in live_and_final(steps)] == [True, False, True]
    assert_agrees(steps)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(1, 40), st.sampled_from(sorted(KINDS))),
        min_size=1,
        max_size=7,
        unique_by=lambda t: t[0],
    ),
    st.lists(
        st.tuples(st.integers(1, 64), st.sampled_from(sorted(CLOSED_KINDS))),
        min_size=1,
        max_size=6,
        unique_by=lambda t: t[0],
    ),
)
def test_the_live_verdict_never_contradicts_the_table(
    open_rows: list[tuple[int, str]], closed_rows: list[tuple[int, str]]
) -> None:
    # any run order, any mix of verdicts, open and closed loop
    assert_agrees([KINDS[k](250.0 * r) for r, k in open_rows])
    assert_agrees([CLOSED_KINDS[k](n) for n, k in closed_rows])
    # in ascending order (how a sweep runs) the live line always gives the verdict
    ascending = [KINDS[k](250.0 * r) for r, k in sorted(open_rows)]
    assert all(settled for _, _, settled in live_and_final(ascending))


def test_a_generator_limited_step_still_names_its_failures() -> None:
    # perflab late and the server behind by as little as perflab's lateness: the row is
    # perflab's, but the 5% status 500 are the server's and are said
    s = one(erring(1000.0, 0.05, lag_us=2500.0, unsent=3))
    assert s.verdict == "generator-limited"
    assert s.reasons == ["perflab sent late (p99 2.50 ms)", "also 5.0% failed (status 500)"]
