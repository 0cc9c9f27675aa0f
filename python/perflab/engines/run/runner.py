"""The harness runner: spawns worker processes, interleaves them, decides when to stop.

Design (README, "How perflab measures"):
    * the process is the unit of replication: every case runs in several fresh
      worker processes (pyperf does the same to average out ASLR and hash
      randomisation), each with its own memory layout (:mod:`perflab.engines.layout`),
      so that layout bias becomes variation the CI includes;
    * all cases of a run are interleaved in randomised order, round after
      round, so that machine drift hits them all alike (Abedi & Brecht 2017,
      "Conducting Repeatable Experiments in Highly Variable Cloud Computing
      Environments", randomized multiple interleaved trials);
    * adaptive stopping: after each round a case stops when the 95% CI of its
      median is within ``precision`` (after ``min_processes``), when its
      ``budget`` is spent, or at ``max_processes``; the reason is recorded.

Workers are reached through the small :class:`WorkerBackend` interface; the
real one spawns ``python -m perflab.engines.run.worker``, tests use a fake.
"""

from __future__ import annotations

import random
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perflab.analyze.run.counters import flag_preempted
from perflab.engines import callgrind
from perflab.engines.layout import from_environment
from perflab.engines.progress import NullProgress, Progress
from perflab.engines.run import counted
from perflab.engines.run.backend import Event, Outcome, SubprocessBackend, WorkerBackend
from perflab.engines.run.counters import by_name
from perflab.engines.run.suite import Case
from perflab.model import Benchmark, Process, Sample

#: processes of a case that run the tracemalloc pass: it is untimed but slow (tracing
#: slows allocation several-fold), and a few processes give a steady median
ALLOCATION_PROCESSES = 3


@dataclass
class Settings:
    """Measurement settings of ``perflab run``.

    Attributes:
        precision: target relative CI half-width of the median (0.01 = 1%).
        budget_s: per-benchmark time budget, seconds of worker wall time.
        min_processes / max_processes: bounds on processes per benchmark.
        process_seconds: sampling time per process, s.
        min_samples / max_samples: bounds on samples per process.
        min_sample_ns: floor on one sample's duration, ns (≥ the timer floor).
        warmup_max_s: time bound of warmup per process, s.
        timeout_s: a process running longer is killed and the benchmark fails.
        allocations: run the tracemalloc pass (in the first ALLOCATION_PROCESSES
            processes of each case; the summary takes the median over processes).
        confidence: CI level.
        seed: seed for interleaving order and layout draws (None: random).
        randomize: give each worker process its own memory layout (:mod:`perflab.engines.layout`).
        event_loop: the event loop ``async def`` benchmarks run on: "asyncio" or
            "uvloop" (:func:`perflab.engines.run.aio.new_loop`).
        memory_interval_s: ``--memory``: sample each worker's resident set from
            outside this often, s (None: off; see :mod:`perflab.engines.memory`).
        count: "instructions": count instead of time (docs/count.md): each case runs in
            exactly ``count_processes`` workers under Callgrind, one layout each (drawn
            from ``seed``, 0 when None), and stops with reason "counted"; None: timed.
        cache_sim: with ``count``: also simulate the caches (``--cache-sim``).
        count_processes: with ``count``: counted processes (layouts) per case (≥ 1).
        count_profile: with ``count``: also each case's instructions per function
            (``--profile``; :func:`perflab.engines.run.counted.keep_profile`).
        pairing / threshold: how cases a verdict compares are measured (:data:`perflab.
            engines.run.pairs.PAIRING_MODES`); the noise threshold t (0.02 = 2%) a pair's
            CI must settle against (:func:`perflab.analyze.paired.settles`; NaN: precision).
    """

    precision: float = 0.01
    budget_s: float = 10.0
    min_processes: int = 10
    max_processes: int = 60
    process_seconds: float = 0.1
    min_samples: int = 3
    max_samples: int = 2000
    min_sample_ns: float = 2e6
    warmup_max_s: float = 0.25
    timeout_s: float = 60.0
    allocations: bool = True
    confidence: float = 0.95
    seed: int | None = None
    randomize: bool = True
    event_loop: str = "asyncio"
    memory_interval_s: float | None = None
    count: str | None = None
    cache_sim: bool = False
    count_processes: int = counted.COUNT_PROCESSES
    count_profile: bool = False
    pairing: str = "auto"
    threshold: float = 0.02

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return dict(self.__dict__)


@dataclass
class CaseState:
    """The runner's bookkeeping for one case (``counter_names``: the names of the
    current process's per-sample counters, from its ``counters`` event)."""

    case: Case
    bench: Benchmark
    spent_s: float = 0.0
    iterations: int | None = None
    done: bool = False
    counter_names: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class FailureAdvice:
    """The ways out a failed benchmark's message offers, in its caller's words.

    Attributes:
        skip: how to leave the benchmark out ("" for none), e.g. ``perflab run``'s
            "skip it with --filter", pytest's "deselect it (-k, --perflab-skip)".
        timeout: how to allow a slower benchmark ("" for none), e.g. "raise --timeout".
    """

    skip: str = "skip it with --filter"
    timeout: str = "raise --timeout"


class Runner:
    """Measures cases in interleaved rounds of worker processes until each stops.

    Args:
        file: the benchmark file (workers import it again).
        cases: the cases to measure.
        settings: measurement settings.
        sample_target_ns: calibration target for one sample, ns.
        timer_error_ns: the timer error recorded with each process, ns.
        backend: how workers run (default: real subprocesses).
        progress: progress sink.
        clock: monotonic seconds (injectable for tests).
        advice: what a failed benchmark's message tells the user to do, in the words of
            the caller (:class:`FailureAdvice`; default ``perflab run``'s options).
    """

    def __init__(
        self,
        file: str,
        cases: list[Case],
        settings: Settings,
        sample_target_ns: float,
        timer_error_ns: float,
        backend: WorkerBackend | None = None,
        progress: Progress | None = None,
        clock: Callable[[], float] = time.monotonic,
        advice: FailureAdvice | None = None,
    ) -> None:
        self.file = str(Path(file).resolve())
        self.advice = advice or FailureAdvice()
        self.settings = settings
        self.sample_target_ns = sample_target_ns
        self.timer_error_ns = timer_error_ns
        self.backend = backend or SubprocessBackend()
        self.progress = progress or NullProgress()
        self.clock = clock
        self.rng = random.Random(settings.seed)
        seed = 0 if settings.count and settings.seed is None else settings.seed
        self.layouts = from_environment(seed) if settings.randomize else None
        self.valgrind = callgrind.valgrind_version() if settings.count else ""
        self.states = [CaseState(c, c.to_benchmark()) for c in cases]
        self._t0 = clock()
        self._next_index = 0
        self.interrupted = False

    def run(self) -> list[Benchmark]:
        """Measure every case, all interleaved. Ctrl-C stops early and keeps what was measured.

        Returns:
            One Benchmark per case, in case order, failed ones with ``error`` set.
        """
        try:
            self._run_rounds(self.states)
        except KeyboardInterrupt:
            self.interrupted = True
            for state in self.states:
                if not state.done:
                    state.bench.stop_reason = "interrupted"
        return [s.bench for s in self.states]

    def _run_rounds(self, states: list[CaseState]) -> None:
        """Rounds of one process per active case, in a fresh random order each round. Every
        case of the run takes part in every round (not group after group), so each one's
        processes meet the machine over the whole run: a host whose speed swings over tens
        of seconds then shows in every benchmark's process spread, hence in its CI,
        instead of biasing whichever group ran during a slow stretch."""
        for state in states:
            self.progress.start_case(state.bench.id, self.settings.budget_s)
        if self.settings.count:  # counts don't move with the machine: run them at once
            return counted.run_all(self, states)
        while active := [s for s in states if not s.done]:
            self.rng.shuffle(active)
            for state in active:
                self._run_process(state)
                self._decide(state)

    def _plan(self, state: CaseState, layout: dict[str, int]) -> dict[str, Any]:
        """The JSON plan a worker receives (``layout``: its randomization, {} for none)."""
        s = self.settings
        traced = sum(1 for p in state.bench.processes if p.alloc_peak_bytes is not None)
        return {
            "file": self.file,
            "index": state.case.index,
            "params": state.case.params,
            "threads": state.case.threads,
            "iterations": state.iterations,
            "sample_target_ns": self.sample_target_ns,
            "warmup_max_s": s.warmup_max_s,
            "sample_seconds": s.process_seconds,
            "min_samples": s.min_samples,
            "max_samples": s.max_samples,
            "allocations": s.allocations and traced < ALLOCATION_PROCESSES,
            "layout": layout,
            "reference": True,
            "event_loop": s.event_loop,
            "memory_interval_s": s.memory_interval_s,
            "count": counted.plan_entry(s.cache_sim, profile=s.count_profile) if s.count else None,
        }

    def _new_process(self, layout: dict[str, int], **fields: Any) -> Process:
        """The record of the worker process about to start (index: the run's next; a
        paired process's two records share it, so the caller advances the index)."""
        return Process(
            index=self._next_index,
            pid=0,
            started_s=self.clock() - self._t0,
            timer_error_ns=self.timer_error_ns,
            layout=layout,
            **fields,
        )

    def _prepare(self, state: CaseState, layout: dict | None = None) -> tuple[Process, dict]:
        """The next worker of ``state``: its layout drawn (or ``layout``, another process's:
        a counted baseline's twin), its record appended, its plan."""
        drawn = self.layouts.next().to_dict() if self.layouts and layout is None else {}
        layout = layout or drawn or (counted.fixed_layout() if self.settings.count else {})
        proc = self._new_process(layout)
        self._next_index += 1
        state.bench.processes.append(proc)
        return proc, self._plan(state, layout)

    def _run_process(
        self, state: CaseState, prepared: tuple[Process, dict[str, Any]] | None = None
    ) -> None:
        """Run one worker for ``state`` (``prepared`` by :meth:`_prepare`, else now) and
        fold its events into its Process record."""
        proc, plan = prepared or self._prepare(state)
        outcome = Outcome()
        try:
            outcome = self.backend.run(
                plan, self._timeout_s(), lambda ev: _apply_event(proc, state, ev)
            )
        finally:
            state.spent_s += outcome.wall_s or (self.clock() - self._t0 - proc.started_s)
            state.counter_names = []
        flag_preempted(proc)  # before the stopping rule sees the samples
        if outcome.memory is not None:
            proc.memory = outcome.memory
            proc.rss_peak_bytes = max([proc.rss_peak_bytes or 0, *outcome.memory["rss_bytes"]])
        if outcome.counts:
            proc.counts = counted.counts_record(outcome.counts, outcome.events, self.valgrind)
            counted.keep_profile(state.bench, proc, outcome.counts, outcome.wall_s)
        proc.error = _failure(outcome, self._timeout_s(), self.advice)
        if proc.error:
            state.bench.error = f"{state.bench.id!r} {proc.error}"

    def _timeout_s(self) -> float:
        """A worker's timeout: ``timeout_s``, times counted.TIMEOUT_FACTOR when counting."""
        return self.settings.timeout_s * (counted.TIMEOUT_FACTOR if self.settings.count else 1)

    def _decide(self, state: CaseState) -> None:
        """Stop the case when it failed, met the precision, or ran out of budget/processes;
        counted, when it has its ``count_processes`` layouts."""
        from perflab.analyze.run.summary import median_estimate

        s, bench = self.settings, state.bench
        if s.count:
            done = len(bench.processes) >= s.count_processes
            self.progress.update_case(bench.id, len(bench.processes), state.spent_s, None)
            reason = "failed" if bench.error else "counted" if done else None
            if reason:
                state.done, bench.stop_reason = True, reason
                self.progress.finish_case(bench.id, reason)
            return
        est = median_estimate(bench, s.confidence)
        half = est.relative_half_width if est is not None else None
        self.progress.update_case(bench.id, len(bench.processes), state.spent_s, half)
        reason = _stop_reason(bench, half, state.spent_s, s)
        if reason:
            state.done, bench.stop_reason = True, reason
            self.progress.finish_case(bench.id, reason)


def _stop_reason(bench: Benchmark, half: float | None, spent_s: float, s: Settings) -> str | None:
    """Why the case should stop now, or None to keep going."""
    n = len(bench.processes)
    if bench.error:
        return "failed"
    if half is not None and n >= s.min_processes and half <= s.precision:
        return "precision"
    if spent_s >= s.budget_s:
        return "budget"
    if n >= s.max_processes:
        return "max-processes"
    return None


def _apply_event(proc: Process, state: CaseState, event: Event) -> None:
    """Fold one worker event into the Process record (and the case's calibration)."""
    kind = event["event"]
    if kind == "start":
        proc.pid = event["pid"]
    elif kind == "cold":
        proc.cold_ns = event["ns"]
        proc.metrics = event["metrics"]
    elif kind == "spans":  # spans per call (the worker's span pass), beside the metrics
        proc.metrics = {**proc.metrics, **event["metrics"]}
    elif kind == "calibrated":
        proc.iterations = state.iterations = event["iterations"]
    elif kind == "warmup":
        proc.warmup_samples, proc.warmup_converged = event["samples"], event["converged"]
    elif kind == "overhead":
        proc.loop_overhead_ns = event["ns_per_op"]
    elif kind == "sample":
        proc.samples.append(
            Sample(
                event["n"],
                event["wall"],
                event["cpu"],
                event["gc"],
                event["gc_ns"],
                event.get("skew"),
                event.get("flag"),
                by_name(state.counter_names, event.get("counters")),
            )
        )
        if event.get("rss_bytes") is not None:  # --memory: growth from the first to the last
            if proc.rss_start_bytes is None:
                proc.rss_start_bytes, proc.rss_calls = event["rss_bytes"], 0
            else:
                proc.rss_calls = (proc.rss_calls or 0) + event["n"]
            proc.rss_end_bytes = event["rss_bytes"]
    elif kind == "counters":
        state.counter_names = list(event["names"])
        proc.software_note, proc.hardware_note = event["software_note"], event["hardware_note"]
    elif kind == "reference":
        proc.reference_ns.append(event["ns"])
    elif kind == "alloc":
        proc.alloc_peak_bytes, proc.alloc_blocks = event["peak_bytes"], event["blocks"]
        proc.alloc_total_bytes = event.get("total_bytes")
        proc.alloc_total_blocks = event.get("total_blocks")
    elif kind == "heap":  # --memory: the heap pass (perflab.engines.run.heap)
        proc.heap = {k: event[k] for k in ("calls", "t_s", "traced_bytes", "peak_bytes")}
    elif kind == "threads":
        proc.thread_ops, proc.latency_ns = event["ops"], event["latency_ns"]
        proc.gil_enabled = event["gil_enabled"]
    elif kind == "counted":  # --count: calls per counted sample
        proc.iterations = state.iterations = event["iterations"]
    elif kind == "done":
        proc.rss_peak_bytes = event.get("rss_hwm_bytes")
        proc.steal_ns = event.get("steal_ns")
        proc.involuntary_switches = event.get("involuntary_switches")
        proc.clock_skew_ns, proc.clock_flag = event.get("clock_skew"), event.get("clock_flag")


def _failure(outcome: Outcome, timeout_s: float, advice: FailureAdvice) -> str | None:
    """The failure message of a finished worker, or None when it ended cleanly."""
    skip = f" or {advice.skip}" if advice.skip else ""
    if outcome.interrupted:
        return "was interrupted (Ctrl-C or a stop signal: SIGTERM, SIGHUP)"
    errors = [e for e in outcome.events if e["event"] == "error"]
    if errors:
        e = errors[-1]
        if e["type"] == "SystemExit":
            return (
                f"called sys.exit({e['message']}) in {e['phase']}: a benchmark must "
                "return, not end its process. Remove the call (or move it under "
                "if __name__ == '__main__':)"
            )
        return f"raised {e['type']} in {e['phase']}: {e['message']}. Fix the benchmark{skip}"
    if outcome.timed_out:
        slower = f", {advice.timeout}" if advice.timeout else ""
        return f"timed out after {timeout_s:g} s (hung?); make it faster{slower}{skip}"
    if outcome.returncode is not None and outcome.returncode < 0:
        name = signal.Signals(-outcome.returncode).name
        return (
            f"killed its worker with {name}; the benchmark crashed the interpreter "
            f"(abort or segfault). Fix it{skip}"
        )
    if outcome.returncode or not any(e["event"] == "done" for e in outcome.events):
        tail = outcome.stderr.strip().splitlines()[-1:]
        said = f"; its last words: {tail[0]}" if tail else ""
        return (
            f"ended its worker process (exit status {outcome.returncode}) before the "
            f"measurement finished, without raising{said}. A benchmark must return: "
            f"look for os._exit(), os.kill() or exec in it{skip}"
        )
    return None
