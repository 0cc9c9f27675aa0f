"""Paired runs with fake workers: which cases pair, the records, stopping, lock-step fallback."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from perflab.analyze.decisions import SLOWER
from perflab.analyze.run.ratios import summarize_benchmarks
from perflab.engines.run import pairs
from perflab.engines.run.backend import Outcome
from perflab.engines.run.pairing import pair_order
from perflab.engines.run.runner import Settings
from perflab.engines.run.suite import BenchFile, BenchSpec, expand
from tests.speed_states import SpeedStates

WORK_S = {"base": 100e-6, "same": 100e-6, "slow": 103e-6}


def _noop(**params: Any) -> None:
    """A benchmark body (never called by the fake backends)."""


def _cases(specs: list[BenchSpec]) -> list[Any]:
    return expand(BenchFile(__file__, specs, []))  # type: ignore[arg-type]


def _head(side: str | None = None) -> list[dict[str, Any]]:
    extra = {"side": side} if side else {}
    return [
        {"event": "cold", "ns": 1000, "metrics": {}, **extra},
        {"event": "calibrated", "iterations": 1, **extra},
        {"event": "warmup", "samples": 5, "converged": True, **extra},
        {"event": "overhead", "ns_per_op": 20.0, **extra},
    ]


class Machine:
    """One synthetic machine with 2× slow states; every fake process runs on it in turn,
    each meeting a different slow share (10% to 70%)."""

    def __init__(self) -> None:
        self.rng = np.random.default_rng(5)
        self.t = 0.0
        self.processes = 0

    def states(self) -> SpeedStates:
        share = 0.1 + 0.6 * (self.processes % 7) / 6
        self.processes += 1
        return SpeedStates(self.rng, share, horizon_s=0.2)


def _name(plan: dict[str, Any], cases: list[Any]) -> str:
    return next(c.spec.name for c in cases if c.index == plan["index"])


class FakePairBackend:
    """A paired worker: 60 pairs in the drawn order on a speed-switching machine."""

    def __init__(
        self,
        cases: list[Any],
        machine: Machine,
        side_by_side: bool = False,
        stray: dict[int, float] | None = None,
    ) -> None:
        self.cases, self.machine, self.side_by_side = cases, machine, side_by_side
        self.stray = stray or {}  # process number → a factor on B's work in it alone
        self.plans: list[dict[str, Any]] = []

    def run(
        self, plan: dict[str, Any], timeout_s: float, on_event: Callable[[dict], None]
    ) -> Outcome:
        self.plans.append(plan)
        events: list[dict[str, Any]] = [{"event": "start", "pid": 7}]
        if self.side_by_side:
            events.append(
                {
                    "event": "error",
                    "phase": "side by side",
                    "type": "ImportError",
                    "message": "x",
                    "traceback": "",
                }
            )
            for ev in events:
                on_event(ev)
            return Outcome(events=events, returncode=3, wall_s=0.1)
        events += _head("a") + _head("b")
        order = pair_order(60, __import__("random").Random(plan["pair_seed"]))
        work_a = WORK_S[_name(plan, self.cases)]
        work_b = WORK_S[_name(plan["pair"], self.cases)] * self.stray.get(len(self.plans) - 1, 1)
        a, b, _ = self.machine.states().paired(0.0, work_a, work_b, order)
        for k, first in enumerate(order):
            for side, wall in (("a", a[k]), ("b", b[k])):
                events.append(
                    {
                        "event": "sample",
                        "n": 1,
                        "wall": int(wall * 1e9),
                        "cpu": 1,
                        "gc": 0,
                        "gc_ns": 0,
                        "side": side,
                        "pair": k,
                        "first": first == (side == "a"),
                    }
                )
        events.append({"event": "done"})
        for ev in events:
            on_event(ev)
        return Outcome(events=events, returncode=0, wall_s=0.5)


class FakeBackend:
    """A single-case worker (and one side of a lock-step pair) on the same machine."""

    def __init__(self, cases: list[Any], machine: Machine) -> None:
        self.cases, self.machine = cases, machine
        self.plans: list[dict[str, Any]] = []

    def run(
        self, plan: dict[str, Any], timeout_s: float, on_event: Callable[[dict], None]
    ) -> Outcome:
        self.plans.append(plan)
        walls, _ = self.machine.states().alone(0.0, WORK_S[_name(plan, self.cases)], 60)
        events = [{"event": "start", "pid": 9}, *_head()]
        events += [
            {"event": "sample", "n": 1, "wall": int(w * 1e9), "cpu": 1, "gc": 0, "gc_ns": 0}
            for w in walls
        ]
        events.append({"event": "done"})
        for ev in events:
            on_event(ev)
        return Outcome(events=events, returncode=0, wall_s=0.5)


def _runner(
    cases: list[Any],
    side_by_side: bool = False,
    stray: dict[int, float] | None = None,
    **settings: Any,
) -> tuple[pairs.PairedRunner, FakeBackend, FakePairBackend]:
    machine = Machine()
    single = FakeBackend(cases, machine)
    paired = FakePairBackend(cases, machine, side_by_side, stray)
    runner = pairs.PairedRunner(
        __file__,
        cases,
        Settings(**{"seed": 3, "min_processes": 4, "max_processes": 8, **settings}),
        2e6,
        50.0,
        backend=single,
        pair_backend=paired,
    )
    return runner, single, paired


def _group() -> list[Any]:
    return _cases(
        [
            BenchSpec(_noop, "base", "g", baseline=True),
            BenchSpec(_noop, "same", "g"),
            BenchSpec(_noop, "slow", "g"),
            BenchSpec(_noop, "base", "alone"),
        ]
    )


def test_a_group_pairs_each_case_with_its_baseline_and_nothing_else() -> None:
    benches = [c.to_benchmark() for c in _group()]
    assert pairs.group_pairs(benches) == [(0, 1), (0, 2)]
    staged = _cases(
        [
            BenchSpec(_noop, "x", "s", stage="one", baseline=True),
            BenchSpec(_noop, "x", "s", stage="two"),
        ]
    )
    assert pairs.group_pairs([c.to_benchmark() for c in staged]) == []
    sized = _cases(
        [
            BenchSpec(_noop, "base", "p", params={"n": [1, 2]}, baseline=True),
            BenchSpec(_noop, "other", "p", params={"n": [2, 3]}),
            BenchSpec(_noop, "t", "p", threads=[1, 2]),
        ]
    )
    assert pairs.group_pairs([c.to_benchmark() for c in sized]) == [(1, 2)]  # n=3: no baseline


def test_paired_processes_are_recorded_and_give_the_right_verdict() -> None:
    cases = _group()
    runner, single, paired = _runner(cases, precision=1e-9)
    benches = runner.run()
    assert {p["index"] for p in single.plans} == {3}  # only the case in no pair runs alone
    assert paired.plans and all(p["sample_target_ns"] == 100_000 for p in paired.plans)
    base, same, slow = benches[:3]
    assert len(base.processes) == len(same.processes) + len(slow.processes) == 16
    for proc in same.processes:
        partner = next(p for p in base.processes if p.index == proc.index)
        assert proc.pair["with"] == "g/base" and proc.pair["side"] == "b"
        assert partner.pair == {**proc.pair, "with": "g/same", "side": "a"}
        assert len(proc.pair["order"]) == 60 and set(proc.pair["order"]) == {"A", "B"}
    grouped = summarize_benchmarks(benches, threshold=0.02)
    by_id = {s.id: s for s in grouped["g"]}
    assert by_id["g/slow"].baseline_pairs == 8 * 60 and by_id["g/slow"].verdict == SLOWER
    assert by_id["g/slow"].ratio_baseline.contains(1.03)
    assert by_id["g/same"].verdict == "same"
    assert {b.stop_reason for b in benches} == {"max-processes"}


def test_a_pair_stops_when_its_paired_ratio_is_precise() -> None:
    runner, _, paired = _runner(_group()[:2], precision=0.01)
    runner.run()
    assert len(paired.plans) == 4  # the minimum: the paired CI is far inside ±1%
    assert runner.states[1].bench.stop_reason == "precision"


def _slow_pair() -> list[Any]:
    return _cases([BenchSpec(_noop, "base", "g", baseline=True), BenchSpec(_noop, "slow", "g")])


def test_a_pair_goes_on_until_its_ratio_settles_the_verdict() -> None:
    # 3% slower, but in the first process B ran as fast as A (its layout, say): after
    # the 4 minimum processes the paired CI is within the 5% precision but straddles
    # +2% (inconclusive); the pair goes on until the CI clears the threshold
    stray = {0: 1 / 1.03}
    runner, _, paired = _runner(_slow_pair(), stray=stray, precision=0.05, max_processes=30)
    benches = runner.run()
    assert 4 < len(paired.plans) < 30
    assert benches[1].stop_reason == "precision"
    by_id = {s.id: s for s in summarize_benchmarks(benches, threshold=0.02)["g"]}
    assert by_id["g/slow"].verdict == SLOWER
    # with an automatic threshold (chosen after the run) the precision alone stops it,
    # after the minimum, inconclusive
    runner, _, paired = _runner(
        _slow_pair(), stray=stray, precision=0.05, max_processes=30, threshold=float("nan")
    )
    benches = runner.run()
    assert len(paired.plans) == 4
    by_id = {s.id: s for s in summarize_benchmarks(benches, threshold=0.02)["g"]}
    assert by_id["g/slow"].verdict == "inconclusive"


def test_identical_code_stops_at_the_minimum_as_the_same() -> None:
    cases = _cases([BenchSpec(_noop, "base", "g", baseline=True), BenchSpec(_noop, "same", "g")])
    runner, _, paired = _runner(cases, max_processes=30)
    benches = runner.run()
    assert len(paired.plans) == 4 and benches[1].stop_reason == "precision"
    assert summarize_benchmarks(benches, threshold=0.02)["g"][1].verdict == "same"


def test_pairs_that_cannot_share_a_process_go_lockstep(monkeypatch) -> None:
    monkeypatch.setattr(pairs.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    cases = _group()[:2]
    runner, single, paired = _runner(cases, side_by_side=True, precision=1e-9)
    link = runner.links[0]
    link.roots = ("/baseline", "/current")  # as --compare-to REF makes it
    runner.run()
    assert len(paired.plans) == 1 and link.lockstep
    fds = [tuple(p["barrier_fds"]) for p in single.plans]
    assert len(fds) == 2 * 8 and all(len(set(f)) == 2 for f in fds)
    assert single.plans[0]["redirect"] == ["/current", "/baseline"]
    assert all(p.pair["mode"] == "lockstep" for p in runner.states[1].bench.processes)
    # the two sides swap two CPUs sample by sample, the other way round; recorded
    plans = [sorted(single.plans[k : k + 2], key=lambda p: "redirect" not in p) for k in (0, 2)]
    for (a_plan, b_plan), proc in zip(plans, runner.states[1].bench.processes):
        assert len(set(a_plan["swap_cpus"])) == 2 and set(a_plan["swap_cpus"]) <= {0, 1, 2, 3}
        assert b_plan["swap_cpus"] == a_plan["swap_cpus"][::-1]
        assert proc.pair["cpus"] == a_plan["swap_cpus"]  # A's CPU on even, odd samples
    assert len(runner.states[0].bench.processes) == 8  # the side-by-side try left no record


def test_pairing_off_measures_every_case_alone() -> None:
    runner, single, paired = _runner(_group(), pairing="off", precision=1e-9)
    benches = runner.run()
    assert not paired.plans and not runner.links
    assert all(p.pair is None for b in benches for p in b.processes)
