"""Which cases of a run are measured in pairs, and how a pair's worker processes run.

A verdict compares A with B; wherever a run draws one, A and B are measured side by
side (:mod:`perflab.engines.run.pairing`):

* in a group with a baseline (``@perflab.bench(baseline=True)``), each other case is
  paired with its baseline case (the one with the same parameter values, as the
  summary's × baseline matches them: :func:`perflab.analyze.run.ratios.baseline_of`);
  the baseline case is measured in each of its pairs;
* with ``--compare-to REF``, each case of this checkout is paired with the same case of
  the baseline's checkout.

Not paired: staged groups and threads mode (their tables have no verdict), ``--memory``
(a worker's resident memory would mix two benchmarks), ``--pairing off``.

A pair runs in one worker process (:mod:`perflab.engines.run.pair_worker`, alternating
samples), or, when the two cannot share a process, in two worker processes in
lock-step (:class:`LockstepBackend`).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perflab.analyze.run.counters import flag_preempted
from perflab.engines.run import counted
from perflab.engines.run.backend import Outcome, SubprocessBackend
from perflab.engines.run.pair_worker import SIDE_BY_SIDE
from perflab.engines.run.pairing import PAIR_SAMPLE_NS
from perflab.engines.run.runner import CaseState, Runner, _apply_event, _failure
from perflab.engines.run.suite import Case
from perflab.model import Process

#: how a run pairs: "auto" (one process, else lock-step), "lockstep" (two processes
#: always), "off" (no pairing: verdicts from the ratio of the medians)
PAIRING_MODES = ("auto", "lockstep", "off")


@dataclass
class PairLink:
    """Two cases measured together: A (the baseline) and B.

    Attributes:
        a / b: the cases' states in the runner (A's may be shared by several pairs).
        a_file / b_file: the benchmark files their workers import (the same file for a
            group's baseline; two checkouts with ``--compare-to REF``).
        roots: (A's checkout, B's checkout) with ``--compare-to REF``, else None.
        lockstep: measure in two processes in lock-step.
        processes: processes this pair ran.
        spent_s: worker wall time spent on it, s.
        done: stopped.
    """

    a: CaseState
    b: CaseState
    a_file: str
    b_file: str
    roots: tuple[str, str] | None = None
    lockstep: bool = False
    processes: int = 0
    spent_s: float = 0.0
    done: bool = False


def group_pairs(benchmarks: Sequence[Any]) -> list[tuple[int, int]]:
    """(baseline index, case index) of every verdict inside groups: each case of a group
    with a baseline, paired with its baseline case; not in staged groups nor threads
    mode, not a baseline with itself, not a case no baseline matches.

    Args:
        benchmarks: empty :class:`perflab.model.Benchmark` records of the run's cases,
            in case order (``Case.to_benchmark()``).
    """
    from perflab.analyze.run.ratios import baseline_of

    groups: dict[str, list[int]] = {}
    for i, bench in enumerate(benchmarks):
        groups.setdefault(bench.group, []).append(i)
    out = []
    for members in groups.values():
        if any(benchmarks[i].stage for i in members):
            continue
        for i in members:
            bench = benchmarks[i]
            if bench.baseline or bench.threads is not None:
                continue
            baselines = [
                j for j in members if benchmarks[j].baseline and benchmarks[j].threads is None
            ]
            j = baseline_of(benchmarks, i, baselines)
            if j is not None:
                out.append((j, i))
    return out


def route(
    event: dict[str, Any], on_a: Callable[[dict], None], on_b: Callable[[dict], None]
) -> None:
    """Send a paired worker's event to the side it names (``side``), or to both."""
    side = event.get("side")
    if side != "b":
        on_a(event)
    if side != "a":
        on_b(event)


class LockstepBackend:
    """Runs a pair as two worker processes at once, each timing its own side, meeting at
    a two-party barrier before every sample (:class:`perflab.engines.run.pairing.PipeBarrier`).

    Args:
        backend: runs one worker (the runner's :class:`SubprocessBackend`); it must pass
            the plan's ``barrier_fds`` to the child.
    """

    def __init__(self, backend: Any) -> None:
        self.backend = backend

    def run(
        self,
        plans: tuple[dict[str, Any], dict[str, Any]],
        timeout_s: float,
        on_events: tuple[Callable[[dict], None], Callable[[dict], None]],
        cpus: list[int] | None = None,
    ) -> tuple[Any, Any]:
        """Run both plans concurrently; returns their two outcomes (A's, B's).

        Args:
            cpus: (A's CPU on even samples, on odd samples): the two sides swap CPUs
                sample by sample (:class:`perflab.engines.run.pairing.CpuSwap`; B gets
                them the other way round); None: not pinned.

        Ctrl-C: re-raised once both workers have been reaped."""
        from perflab.engines.run.pairing import barrier_pipes

        ends = barrier_pipes()
        outcomes: list[Any] = [None, None]
        errors: list[BaseException] = []
        swaps = (list(cpus), list(cpus)[::-1]) if cpus else (None, None)

        def one(k: int) -> None:
            try:
                plan = {
                    **plans[k],
                    "barrier_fds": list(ends[k]),
                    "barrier_timeout_s": timeout_s,
                    **({"swap_cpus": swaps[k]} if swaps[k] else {}),
                }
                outcomes[k] = self.backend.run(plan, timeout_s, on_events[k])
            except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
                errors.append(exc)
            finally:
                for fd in ends[k]:  # the other side's barrier then breaks instead of waiting
                    os.close(fd)

        threads = [threading.Thread(target=one, args=(k,), daemon=True) for k in (0, 1)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
        return outcomes[0], outcomes[1]


@dataclass(frozen=True)
class BaselineCode:
    """``--compare-to REF``'s baseline to measure in the run (see
    :mod:`perflab.engines.run.checkout`).

    Attributes:
        file: the baseline's benchmark file.
        root / current_root: the baseline's checkout and this one.
        cases: the baseline file's cases (loaded with
            :func:`perflab.engines.run.pair_worker.load_isolated`).
    """

    file: str
    root: str
    current_root: str
    cases: list[Case]


class PairedRunner(Runner):
    """The runner of ``perflab run``: cases a verdict compares are measured in pairs
    (:func:`group_pairs`, and with ``baseline`` each case against the same case of the
    baseline's code); every other case alone, as :class:`Runner` does. All units (a case
    alone, a pair) take part in every round, in a fresh random order.

    Args:
        (those of :class:`Runner`), and:
        baseline: ``--compare-to REF``'s code, or None.
        pair_backend: runs a paired worker (default: ``python -m
            perflab.engines.run.pair_worker``).

    Attributes:
        links: the pairs measured.
        baseline_states: the baseline's cases (their benchmarks: the measured baseline).
    """

    def __init__(
        self,
        *args: Any,
        baseline: BaselineCode | None = None,
        pair_backend: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.pair_backend = pair_backend or SubprocessBackend(
            [sys.executable, "-P", "-m", "perflab.engines.run.pair_worker"]
        )
        self.pair_target_ns = max(PAIR_SAMPLE_NS, (self.timer_error_ns or 0) * 1000)
        self.baseline_states = (
            [CaseState(c, c.to_benchmark()) for c in baseline.cases] if baseline else []
        )
        self.baseline = baseline
        self.links: list[PairLink] = []
        if self.settings.pairing == "off" or self.settings.memory_interval_s:
            return
        if self.settings.count:  # counted: instruction counts don't move with the machine
            return
        lockstep = self.settings.pairing == "lockstep"
        for j, i in group_pairs([s.bench for s in self.states]):
            self.links.append(
                PairLink(self.states[j], self.states[i], self.file, self.file, None, lockstep)
            )
        if baseline is not None:
            by_id = {s.bench.id: s for s in self.baseline_states}
            for state in self.states:
                base = by_id.get(state.bench.id)
                if base is not None and state.case.threads is None:
                    roots = (baseline.root, baseline.current_root)
                    self.links.append(
                        PairLink(
                            base,
                            state,
                            str(Path(baseline.file).resolve()),
                            self.file,
                            roots,
                            lockstep,
                        )
                    )

    def _label(self, state: CaseState) -> str:
        """The case's name in the progress display (a baseline's: "ID (baseline)")."""
        baseline = any(state is s for s in self.baseline_states)
        return f"{state.bench.id} (baseline)" if baseline else state.bench.id

    def _run_rounds(self, states: list[CaseState]) -> None:
        """Rounds of one process per active unit (a case alone, or a pair); counted, the
        runner's counted workers (never paired)."""
        if self.settings.count:  # the baseline's cases too, each with its twin's layouts
            by_id = {s.bench.id: s for s in self.baseline_states}
            twins = {id(s): by_id[s.bench.id] for s in states if s.bench.id in by_id}
            for state in [*twins.values(), *states]:
                self.progress.start_case(self._label(state), self.settings.budget_s)
            return counted.run_all(self, states, twins)
        paired = {id(x) for link in self.links for x in (link.a, link.b)}
        for state in [*self.baseline_states, *states]:
            self.progress.start_case(self._label(state), self.settings.budget_s)
        units: list[Any] = [s for s in states if id(s) not in paired] + list(self.links)
        while active := [u for u in units if not u.done]:
            self.rng.shuffle(active)
            for unit in active:
                if isinstance(unit, PairLink):
                    self._run_pair(unit)
                    self._decide_pair(unit)
                else:
                    self._run_process(unit)
                    self._decide(unit)

    def run(self) -> list[Any]:
        """Measure every unit; Ctrl-C keeps what was measured (see :meth:`Runner.run`)."""
        out = super().run()
        if self.interrupted:
            for state in self.baseline_states:
                state.bench.stop_reason = state.bench.stop_reason or "interrupted"
        return out

    def _plan(self, state: CaseState, layout: dict[str, int]) -> dict[str, Any]:
        """A worker's plan (:meth:`Runner._plan`); a counted worker of the baseline's code
        (``--count`` with ``--compare-to REF``) imports the baseline's file, its checkout's
        folders in place of this one's on ``sys.path``; the case's counted workers get a
        redirect to this checkout, so that both sides' paths go through an alias of the
        same length (:func:`perflab.engines.run.counted.alias_paths`)."""
        plan = super()._plan(state, layout)
        if self.settings.count and self.baseline is not None:
            current = str(self.baseline.current_root)
            if any(state is s for s in self.baseline_states):
                plan.update(
                    file=str(Path(self.baseline.file).resolve()),
                    redirect=[current, str(self.baseline.root)],
                )
            else:  # the same plan's shape: its paths through an alias of its own checkout
                plan.update(redirect=[current, current])
        return plan

    def _pair_plan(
        self, link: PairLink, layout: dict[str, int]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """The plans of A's and B's sides (each a worker's plan, paired samples' target)."""
        plans = []
        for state, file in ((link.a, link.a_file), (link.b, link.b_file)):
            plan = self._plan(state, layout)
            plan.update(file=file, sample_target_ns=self.pair_target_ns)
            plans.append(plan)
        if link.roots is not None:  # A's worker imports from the baseline's checkout
            plans[0]["redirect"] = [link.roots[1], link.roots[0]]
        return plans[0], plans[1]

    def _run_pair(self, link: PairLink) -> None:
        """Run one paired process (or two in lock-step) and fold its events into a Process
        record of each side."""
        layout = self.layouts.next().to_dict() if self.layouts else {}
        mode = "lockstep" if link.lockstep else "alternating"
        cpus = swap_cpus(self.rng) if link.lockstep else None
        procs = []
        for state, other in ((link.a, link.b), (link.b, link.a)):
            proc = self._new_process(
                layout,
                pair={
                    "with": other.bench.id,
                    "side": "a" if state is link.a else "b",
                    "mode": mode,
                    "order": "",
                    **({"cpus": cpus} if cpus else {}),
                },
            )
            state.bench.processes.append(proc)
            procs.append(proc)
        self._next_index += 1
        proc_a, proc_b = procs
        plan_a, plan_b = self._pair_plan(link, layout)

        def on(proc: Process, state: CaseState) -> Callable[[dict], None]:
            def apply(event: dict) -> None:
                if event["event"] == "sample" and "first" in event:
                    lead = "A" if event["first"] == (event["side"] == "a") else "B"
                    proc.pair["order"] += lead  # type: ignore[index]
                _apply_event(proc, state, event)

            return apply

        outcomes: tuple[Outcome, Outcome] = (Outcome(), Outcome())
        start = self.clock()
        try:
            if link.lockstep:
                outcomes = LockstepBackend(self.backend).run(
                    (plan_a, plan_b),
                    self.settings.timeout_s,
                    (on(proc_a, link.a), on(proc_b, link.b)),
                    cpus,
                )
            else:
                plan = {
                    **plan_a,
                    "pair": {
                        **{k: plan_b[k] for k in ("file", "index", "params", "iterations")},
                        **_roots(link),
                    },
                    "pair_seed": self.rng.getrandbits(63),
                }
                one = self.pair_backend.run(
                    plan,
                    self.settings.timeout_s,
                    lambda ev: route(ev, on(proc_a, link.a), on(proc_b, link.b)),
                )
                outcomes = (one, one)
        finally:
            spent = max(o.wall_s for o in outcomes) or (self.clock() - start)
            link.spent_s += spent
            link.processes += 1
            for state in (link.a, link.b):
                state.spent_s += spent
        if not link.lockstep and _side_by_side(outcomes[0]):
            for state, proc in ((link.a, proc_a), (link.b, proc_b)):
                state.bench.processes.remove(proc)
            link.processes -= 1
            for other in self.links:  # two checkouts can't share a process: lock-step
                other.lockstep = other.lockstep or other.roots is not None
            return
        for state, proc, outcome in ((link.a, proc_a, outcomes[0]), (link.b, proc_b, outcomes[1])):
            flag_preempted(proc)  # a preempted sample drops its pair (process_pairs)
            state.counter_names = []
            proc.error = _failure(outcome, self.settings.timeout_s, self.advice)
            if proc.error:
                state.bench.error = f"{state.bench.id!r} {proc.error}"

    def _decide_pair(self, link: PairLink) -> None:
        """Stop the pair when a side failed, the paired ratio's CI settled the verdict
        (after the minimum processes: :func:`perflab.analyze.paired.settles`: within the
        precision and wholly beyond or within the threshold), or the two cases' budgets
        or the process cap ran out."""
        from perflab.analyze.paired import benchmark_ratio, settles

        s = self.settings
        a, b = link.a.bench, link.b.bench
        ratio = benchmark_ratio(a, b, s.confidence)
        half = ratio.ratio.relative_half_width if ratio is not None else None
        self.progress.update_case(b.id, link.processes, link.spent_s, half)
        reason = (
            "failed"
            if a.error or b.error
            else "precision"
            if link.processes >= s.min_processes and settles(ratio, s.threshold, s.precision)
            else "budget"
            if link.spent_s >= 2 * s.budget_s
            else "max-processes"
            if link.processes >= s.max_processes
            else None
        )
        if reason is None:
            return
        link.done = True
        for state in (link.a, link.b):
            if all(o.done for o in self.links if state is o.a or state is o.b):
                state.done, state.bench.stop_reason = True, reason
                self.progress.finish_case(self._label(state), reason)


def swap_cpus(rng: Any) -> list[int] | None:
    """Two CPUs of this process's allowed set, drawn with ``rng`` (a ``random.Random``),
    for a lock-step process's sides to swap between (A's CPU on even samples, on odd
    ones); None with fewer than two CPUs or no affinity control (not Linux)."""
    if not hasattr(os, "sched_getaffinity"):
        return None
    allowed = sorted(os.sched_getaffinity(0))
    return rng.sample(allowed, 2) if len(allowed) >= 2 else None


def _roots(link: PairLink) -> dict[str, str]:
    """The paired worker's ``a_root`` and ``b_root`` for two checkouts ({} for one)."""
    return {} if link.roots is None else {"a_root": link.roots[0], "b_root": link.roots[1]}


def _side_by_side(outcome: Outcome) -> bool:
    """Whether a paired worker found that A and B cannot share its process."""
    return any(e["event"] == "error" and e.get("phase") == SIDE_BY_SIDE for e in outcome.events)
