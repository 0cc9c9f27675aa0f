"""Counted workers run at once (one per CPU), yet each process gets the layout the
serial order would give it, whatever order the workers finish in."""

from __future__ import annotations

import random
import threading
import time
from typing import Any

from perflab.engines.run.backend import Outcome
from perflab.engines.run.runner import Runner, Settings
from perflab.engines.run.suite import BenchSpec, Case


def _noop() -> None:
    pass


class ShuffledBackend:
    """A counted worker that finishes after a random pause: the finish order varies."""

    def __init__(self, seed: int) -> None:
        self.rng, self.lock, self.plans = random.Random(seed), threading.Lock(), []

    def run(self, plan: dict[str, Any], timeout_s: float, on_event: Any) -> Outcome:
        with self.lock:
            self.plans.append(plan)
            pause = self.rng.random() * 0.02
        time.sleep(pause)
        return Outcome()


def _layouts(backend_seed: int) -> tuple[dict[str, list[dict]], Any]:
    cases = [Case(BenchSpec(_noop, name, ""), {}, i) for i, name in enumerate("abcd")]
    backend = ShuffledBackend(backend_seed)
    runner = Runner("x.py", cases, Settings(count="instructions", seed=7), 1e6, 50, backend)
    benches = runner.run()
    return {b.id: [p.layout for p in b.processes] for b in benches}, backend


def test_counted_layouts_do_not_depend_on_the_finish_order() -> None:
    first, backend = _layouts(1)
    second, _ = _layouts(2)
    assert first == second
    assert all(len(v) == Settings().count_processes for v in first.values())
    seeds = [lay["hash_seed"] for v in first.values() for lay in v]
    assert len(set(seeds)) == len(seeds)  # every process its own layout
    assert len(backend.plans) == 4 * Settings().count_processes


def _layouts_of(names: str, seed: int | None) -> dict[str, list[dict]]:
    cases = [Case(BenchSpec(_noop, name, ""), {}, i) for i, name in enumerate(names)]
    runner = Runner(
        "x.py", cases, Settings(count="instructions", seed=seed), 1e6, 50, ShuffledBackend(0)
    )
    return {b.id: [p.layout for p in b.processes] for b in runner.run()}


def test_a_counted_benchmark_gets_its_own_layouts_whatever_else_the_run_counts() -> None:
    """Without --seed (counted runs then draw from seed 0) the run's shuffled order of
    preparation is random; each benchmark's layouts are not: two runs, and runs with other
    benchmarks added or filtered out, count a benchmark in the same layouts."""
    alone = _layouts_of("b", None)
    assert _layouts_of("abcd", None)["b"] == _layouts_of("dcba", None)["b"] == alone["b"]
    assert _layouts_of("abcd", None) == _layouts_of("abcd", None)
    assert _layouts_of("b", 0) == alone  # no seed counts as seed 0
    assert _layouts_of("b", 1)["b"] != alone["b"]


class StoppingBackend:
    """The first counted worker is interrupted; the others wait for the stop signal."""

    def __init__(self) -> None:
        self.stop: Any = None
        self.started = 0
        self.lock = threading.Lock()
        self.saw_stop: list[bool] = []

    def run(self, plan: dict[str, Any], timeout_s: float, on_event: Any) -> Outcome:
        with self.lock:
            self.started += 1
            first = self.started == 1
        if first:
            time.sleep(0.05)  # the other CPU's worker has started by now, or soon will
            raise KeyboardInterrupt
        self.saw_stop.append(self.stop.wait(20))
        raise KeyboardInterrupt  # as SubprocessBackend does once it has killed its worker


def test_an_interrupt_stops_running_counted_workers_and_starts_no_more() -> None:
    cases = [Case(BenchSpec(_noop, name, ""), {}, i) for i, name in enumerate("abcd")]
    backend = StoppingBackend()
    runner = Runner("x.py", cases, Settings(count="instructions"), 1e6, 50, backend)
    runner.run()
    assert runner.interrupted
    assert all(backend.saw_stop)  # every worker still running was told to stop
    assert backend.started < 4 * Settings().count_processes  # the queued ones never ran


def test_a_benchmarks_layouts_all_run_at_once_even_on_fewer_cpus() -> None:
    from perflab.engines.run.counted import concurrency

    assert concurrency(3, 3, cpus=2) == 3  # one benchmark's 3 layouts at once on 2 CPUs
    assert concurrency(12, 3, cpus=2) == 3  # never more than the layouts beyond the CPUs
    assert concurrency(12, 3, cpus=8) == 8  # one per CPU where there are more CPUs
    assert concurrency(2, 3, cpus=8) == 2  # never more than the jobs
    assert concurrency(0, 3, cpus=2) == 1
