"""The runner with a fake worker backend: interleaving, stopping rules, failures."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from perflab.measure.runner import Outcome, Runner, Settings
from perflab.measure.suite import BenchFile, BenchSpec, expand


def _noop() -> None:
    """A benchmark body (never called by the fake backend)."""


class FakeBackend:
    """Emits synthetic events: each case's time per op is lognormal around its ``medians``."""

    def __init__(self, medians: dict[int, float], sigma: float = 0.01,
                 fail: dict[int, dict[str, Any]] | None = None, seconds: float = 0.5) -> None:
        self.medians, self.sigma, self.fail = medians, sigma, fail or {}
        self.rng = np.random.default_rng(0)
        self.calls: list[int] = []
        self.seconds = seconds

    def run(self, plan: dict[str, Any], timeout_s: float,
            on_event: Callable[[dict[str, Any]], None]) -> Outcome:
        index = plan["index"]
        self.calls.append(index)
        events: list[dict[str, Any]] = [{"event": "start", "pid": 1},
                                        {"event": "cold", "ns": 1000, "metrics": {}},
                                        {"event": "calibrated", "iterations": 10},
                                        {"event": "warmup", "samples": 10, "converged": True},
                                        {"event": "overhead", "ns_per_op": 20.0}]
        if index in self.fail:
            events.append(self.fail[index])
            outcome = Outcome(events=events, returncode=3, wall_s=self.seconds)
        else:
            centre = self.medians[index] * np.exp(self.rng.normal(0, self.sigma / 2))
            for v in centre * np.exp(self.rng.normal(0, self.sigma, 30)):
                events.append({"event": "sample", "n": 10, "wall": int(v * 10e9), "cpu": 1,
                               "gc": 0, "gc_ns": 0})
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
    rounds = [tuple(backend.calls[i:i + 3]) for i in range(0, 18, 3)]
    assert all(sorted(r) == [0, 1, 2] for r in rounds)  # every round runs each case once
    assert len(set(rounds)) > 1  # and the order changes between rounds


def test_groups_run_one_after_another() -> None:
    backend = FakeBackend({0: 1e-6, 1: 1e-6, 2: 1e-6}, sigma=0.2)
    cases = _cases(3, ["a", "a", "b"])
    _runner(cases, backend, precision=1e-9, min_processes=1, max_processes=3).run()
    assert backend.calls[-3:] == [2, 2, 2]


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


def test_process_records_carry_calibration_and_samples() -> None:
    backend = FakeBackend({0: 2e-6}, sigma=0.001)
    (bench,) = _runner(_cases(1), backend, min_processes=2).run()
    proc = bench.processes[0]
    assert proc.iterations == 10 and proc.loop_overhead_ns == 20.0 and len(proc.samples) == 30
    assert proc.timer_error_ns == 50.0 and proc.warmup_converged
