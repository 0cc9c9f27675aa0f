"""The runner with a fake worker backend: interleaving, stopping rules, failures."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from perflab.engines.run.backend import Outcome
from perflab.engines.run.runner import FailureAdvice, Runner, Settings, _failure
from perflab.engines.run.suite import BenchFile, BenchSpec, expand


def _noop() -> None:
    """A benchmark body (never called by the fake backend)."""


def worker_start() -> list[dict[str, Any]]:
    """The events a worker sends before its first sample: 10 calls a sample."""
    return [
        {"event": "start", "pid": 1},
        {"event": "cold", "ns": 1000, "metrics": {}},
        {"event": "calibrated", "iterations": 10},
        {"event": "warmup", "samples": 10, "converged": True},
        {"event": "overhead", "ns_per_op": 20.0},
    ]


class FakeBackend:
    """Emits synthetic events: each case's time per op is lognormal around its ``medians``."""

    def __init__(
        self,
        medians: dict[int, float],
        sigma: float = 0.01,
        fail: dict[int, dict[str, Any]] | None = None,
        seconds: float = 0.5,
    ) -> None:
        self.medians, self.sigma, self.fail = medians, sigma, fail or {}
        self.rng = np.random.default_rng(0)
        self.calls: list[int] = []
        self.seconds = seconds

    def run(
        self, plan: dict[str, Any], timeout_s: float, on_event: Callable[[dict[str, Any]], None]
    ) -> Outcome:
        index = plan["index"]
        self.calls.append(index)
        events = worker_start()
        if index in self.fail:
            events.append(self.fail[index])
            outcome = Outcome(events=events, returncode=3, wall_s=self.seconds)
        else:
            centre = self.medians[index] * np.exp(self.rng.normal(0, self.sigma / 2))
            for v in centre * np.exp(self.rng.normal(0, self.sigma, 30)):
                events.append(
                    {
                        "event": "sample",
                        "n": 10,
                        "wall": int(v * 10e9),
                        "cpu": 1,
                        "gc": 0,
                        "gc_ns": 0,
                    }
                )
            events.append({"event": "done"})
            outcome = Outcome(events=events, returncode=0, wall_s=self.seconds)
        for ev in events:
            on_event(ev)
        return outcome


def _cases(n: int, groups: list[str] | None = None) -> list[Any]:
    specs = [BenchSpec(_noop, f"b{i}", (groups or ["g"] * n)[i]) for i in range(n)]
    return expand(BenchFile(__file__, specs, []))  # type: ignore[arg-type]


def _runner(cases: list[Any], backend: FakeBackend, **settings: Any) -> Runner:
    return Runner(__file__, cases, Settings(seed=1, **settings), 2e6, 50.0, backend=backend)


def test_cases_of_a_group_are_interleaved_in_random_order() -> None:
    backend = FakeBackend({0: 1e-6, 1: 2e-6, 2: 3e-6}, sigma=0.2)
    _runner(_cases(3), backend, precision=1e-9, min_processes=1, max_processes=6).run()
    rounds = [tuple(backend.calls[i : i + 3]) for i in range(0, 18, 3)]
    assert all(sorted(r) == [0, 1, 2] for r in rounds)  # every round runs each case once
    assert len(set(rounds)) > 1  # and the order changes between rounds


def test_cases_of_every_group_are_interleaved_over_the_whole_run() -> None:
    """issue 11: a group measured during a slow stretch of the host was biased as a whole;
    interleaving every case spreads each one's processes over the run."""
    backend = FakeBackend({0: 1e-6, 1: 1e-6, 2: 1e-6}, sigma=0.2)
    cases = _cases(3, ["a", "a", "b"])
    _runner(cases, backend, precision=1e-9, min_processes=1, max_processes=3).run()
    rounds = [sorted(backend.calls[i : i + 3]) for i in range(0, 9, 3)]
    assert rounds == [[0, 1, 2]] * 3


def test_quiet_benchmark_stops_at_precision_after_min_processes() -> None:
    backend = FakeBackend({0: 1e-6}, sigma=0.001)
    (bench,) = _runner(_cases(1), backend, min_processes=4).run()
    assert bench.stop_reason == "precision" and len(bench.processes) == 4


def test_noisy_benchmark_stops_on_budget() -> None:
    backend = FakeBackend({0: 1e-6}, sigma=0.5, seconds=1.0)
    (bench,) = _runner(_cases(1), backend, precision=0.001, budget_s=5.0).run()
    assert bench.stop_reason == "budget" and len(bench.processes) == 5


def test_a_failing_benchmark_does_not_stop_the_others() -> None:
    error = {"event": "error", "phase": "warmup", "type": "ValueError", "message": "boom"}
    backend = FakeBackend({0: 1e-6, 1: 1e-6}, sigma=0.001, fail={0: error})
    failed, ok = _runner(_cases(2), backend, min_processes=3).run()
    assert failed.stop_reason == "failed" and "ValueError in warmup: boom" in failed.error
    assert ok.stop_reason == "precision" and ok.error is None


def test_a_failure_offers_the_ways_out_of_its_caller() -> None:
    """perflab run's message names --filter and --timeout; the pytest plugin and the API
    have neither option, so they give their own advice (or none)."""
    error = {"event": "error", "phase": "warmup", "type": "ValueError", "message": "boom"}
    [run] = _runner(_cases(1), FakeBackend({0: 1e-6}, fail={0: error})).run()
    assert run.error.endswith("Fix the benchmark or skip it with --filter")
    advice = FailureAdvice(skip="deselect it (pytest -k, or --perflab-skip)", timeout="")
    [plugin] = Runner(
        __file__,
        _cases(1),
        Settings(seed=1),
        2e6,
        50.0,
        backend=FakeBackend({0: 1e-6}, fail={0: error}),
        advice=advice,
    ).run()
    assert (
        plugin.error.endswith("Fix the benchmark or deselect it (pytest -k, or --perflab-skip)")
        and "--filter" not in plugin.error
    )
    [api] = Runner(
        __file__,
        _cases(1),
        Settings(seed=1),
        2e6,
        50.0,
        backend=FakeBackend({0: 1e-6}, fail={0: error}),
        advice=FailureAdvice(skip="", timeout=""),
    ).run()
    assert api.error.endswith("boom. Fix the benchmark")
    hung = Outcome(events=[], returncode=None, wall_s=1.0, timed_out=True)
    assert _failure(hung, 60, FailureAdvice()) == (
        "timed out after 60 s (hung?); make it faster, raise --timeout or skip it with --filter"
    )
    assert _failure(hung, 60, advice).endswith(
        "make it faster or deselect it (pytest -k, or --perflab-skip)"
    )


def test_process_records_carry_calibration_and_samples() -> None:
    backend = FakeBackend({0: 2e-6}, sigma=0.001)
    (bench,) = _runner(_cases(1), backend, min_processes=2).run()
    proc = bench.processes[0]
    assert proc.iterations == 10 and proc.loop_overhead_ns == 20.0 and len(proc.samples) == 30
    assert proc.timer_error_ns == 50.0 and proc.warmup_converged


def test_the_stop_reason_and_the_summary_use_the_same_ci() -> None:
    """issue 11: notes said "max processes" while the footnote said "budget hit before
    precision: ±0.7% reached, ±1.0% asked": the stopping rule and the summary computed
    different CIs. One estimate serves both now."""
    from perflab.analyze.run.summary import median_estimate, summarize

    for sigma, precision in ((0.05, 0.011), (0.05, 0.02), (0.2, 0.01)):
        backend = FakeBackend({0: 1e-6}, sigma=sigma)
        (bench,) = _runner(
            _cases(1), backend, precision=precision, min_processes=3, max_processes=8
        ).run()
        summary = summarize(bench, precision=precision, min_processes=3)
        half = median_estimate(bench).relative_half_width
        assert summary.median.relative_half_width == half
        if bench.stop_reason == "precision":
            assert half <= precision
            assert "precision not reached" not in [c.kind for c in summary.warnings]
        else:
            assert bench.stop_reason == "max-processes" and half > precision
            (caveat,) = [c for c in summary.warnings if c.kind == "precision not reached"]
            assert f"stopped at --max-processes with ±{half:.1%}" in caveat.text


def test_a_budget_spent_before_the_minimum_processes_says_so() -> None:
    backend = FakeBackend({0: 1e-6}, sigma=0.001, seconds=2.0)
    (bench,) = _runner(_cases(1), backend, budget_s=3.0, min_processes=5).run()
    from perflab.analyze.run.summary import summarize

    assert bench.stop_reason == "budget" and len(bench.processes) == 2
    (caveat,) = [
        c
        for c in summarize(bench, precision=0.01, min_processes=5).warnings
        if c.kind == "precision not reached"
    ]
    assert "after 2 processes, fewer than --min-processes 5" in caveat.text


def test_layouts_are_drawn_per_process_and_repeat_with_the_seed() -> None:
    plans: list[dict[str, Any]] = []

    class Recording(FakeBackend):
        def run(self, plan: dict[str, Any], timeout_s: float, on_event: Any) -> Outcome:
            plans.append(plan)
            return super().run(plan, timeout_s, on_event)

    def layouts(**settings: Any) -> list[dict[str, int]]:
        plans.clear()
        (bench,) = _runner(
            _cases(1),
            Recording({0: 1e-6}),
            min_processes=4,
            max_processes=4,
            precision=1e-9,
            **settings,
        ).run()
        assert [p["layout"] for p in plans] == [p.layout for p in bench.processes]
        return [p.layout for p in bench.processes]

    first = layouts()
    assert len({tuple(x.values()) for x in first}) == 4
    assert layouts() == first
    assert layouts(randomize=False) == [{}] * 4


def test_only_the_first_processes_run_the_allocation_pass() -> None:
    from perflab.engines.run.runner import ALLOCATION_PROCESSES

    flags: list[bool] = []

    class Tracing(FakeBackend):
        def run(self, plan: dict[str, Any], timeout_s: float, on_event: Any) -> Outcome:
            flags.append(plan["allocations"])
            if plan["allocations"]:
                on_event({"event": "alloc", "peak_bytes": 100.0, "blocks": 1.0})
            return super().run(plan, timeout_s, on_event)

    _runner(_cases(1), Tracing({0: 1e-6}), min_processes=6, max_processes=6, precision=1e-9).run()
    assert flags == [True] * ALLOCATION_PROCESSES + [False] * (6 - ALLOCATION_PROCESSES)


def test_reference_timings_are_recorded_per_process_and_summarized() -> None:
    class WithReference(FakeBackend):
        def run(self, plan, timeout_s, on_event):  # type: ignore[no-untyped-def]
            assert plan["reference"] is True
            for ns in (200_000, 210_000, 190_000):
                on_event({"event": "reference", "ns": ns})
            return super().run(plan, timeout_s, on_event)

    from perflab.analyze.run.summary import summarize

    (bench,) = _runner(
        _cases(1), WithReference({0: 2e-6}, sigma=0.01), min_processes=3, max_processes=3
    ).run()
    assert all(p.reference_ns == [200_000, 210_000, 190_000] for p in bench.processes)
    s = summarize(bench)
    assert s.reference_s == 200e-6 and abs(s.reference_spread) < 1e-9  # same in every process
