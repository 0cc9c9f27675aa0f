"""Measuring a callable in this process, with the harness of ``perflab run``.

The pytest plugin (and any caller that holds a live callable: a closure, a fixture's
object) can't hand its function to a fresh worker, which finds benchmarks by importing
a file. :class:`InProcessBackend` is a :class:`perflab.engines.run.runner.WorkerBackend`
that runs the worker's sequence (:func:`perflab.engines.run.worker.measure_call`: cold call,
calibration, warmup, loop overhead, samples with CPU and GC, allocation pass, clock
check) here instead, so the runner's rounds, stopping rule and records are unchanged.
Each "process" of the runner is then one repetition of that sequence in this same
process: repetitions share its memory layout, imports and warmed caches, so their
spread (and the CI built on it) leaves out the between-process variation that fresh
workers include. Reports say which mode produced a number.

Limits: a repetition can't be killed at the timeout (a hang hangs the caller), and a
crash of the interpreter ends the caller.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from perflab.engines.run.runner import Event, Outcome
from perflab.engines.run.worker import PhaseError, error_fields, measure_call


class InProcessBackend:
    """Runs the worker sequence for one callable in this process.

    Args:
        func: the callable to time.
        args / kwargs: its bound arguments (any objects: nothing is serialized).
        plan_extra: plan entries that override the runner's (e.g. ``iterations``,
            ``warmup_samples``, ``before_sample``; see :func:`measure_call`).
        metrics: :class:`perflab.engines.run.suite.MetricSpec` applied to the first result.

    Attributes:
        repetitions: repetitions run so far. Only the first one's first call is this
            process's first call of the callable: later repetitions record no cold time
            (``Process.cold_ns`` is None), so the "first call" figure is that one call.
        error: the exception the callable raised (its original object, traceback
            included), or None; the runner records the failure as text, callers that
            want the exception (a pytest test failing with its own traceback) read it here.
    """

    def __init__(
        self,
        func: Callable[..., Any],
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
        plan_extra: dict[str, Any] | None = None,
        metrics: Sequence[Any] = (),
    ) -> None:
        self.func, self.args, self.kwargs = func, args, kwargs or {}
        self.plan_extra = plan_extra or {}
        self.metrics = metrics
        self.error: BaseException | None = None
        self.repetitions = 0

    def run(
        self, plan: dict[str, Any], timeout_s: float, on_event: Callable[[Event], None]
    ) -> Outcome:
        """One repetition of the worker sequence; events go to ``on_event`` as they come.

        ``timeout_s`` is not enforced (the callable runs on this thread). Ctrl-C is
        re-raised after marking the outcome interrupted, as the subprocess backend does.
        """
        outcome = Outcome()

        def emit(event: str, **fields: Any) -> None:
            if event == "cold" and self.repetitions:  # only the first call is the first
                fields["ns"] = None
            record = {"event": event, **fields}
            outcome.events.append(record)
            on_event(record)

        start = time.monotonic()
        try:
            self._sequence(plan, emit)
        except PhaseError as err:
            self.error = err.exc
            emit("error", **error_fields(err.phase, err.exc))
        except KeyboardInterrupt:
            outcome.interrupted = True
            raise
        finally:
            outcome.wall_s = time.monotonic() - start
            self.repetitions += 1
        return outcome

    def _sequence(self, plan: dict[str, Any], emit: Callable[..., None]) -> None:
        """The measuring sequence of one repetition. Raises PhaseError."""
        measure_call(
            self.func, self.args, self.kwargs, {**plan, **self.plan_extra}, emit, self.metrics
        )


class InProcessPairBackend(InProcessBackend):
    """Runs the paired sequence (:func:`perflab.engines.run.pair_worker.measure_sides`)
    for two live callables in this process: the pair backend of
    :class:`perflab.engines.run.pairs.PairedRunner` for ``perflab.measure(func,
    baseline=...)`` in-process. Each "process" is one repetition of the paired sequence
    here (events carry ``side``); only the first repetition's first calls are cold.

    Args:
        baseline / func: side A's and side B's callables.
        args / kwargs: the arguments both are called with.

    Attributes:
        repetitions / error: as :class:`InProcessBackend`'s.
    """

    def __init__(
        self,
        baseline: Callable[..., Any],
        func: Callable[..., Any],
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(func, args, kwargs)
        self.baseline = baseline

    def _sequence(self, plan: dict[str, Any], emit: Callable[..., None]) -> None:
        """The paired sequence of one repetition. Raises PhaseError."""
        from perflab.engines.run.pair_worker import Side, measure_sides

        a, b = (
            Side(n, f, self.args, self.kwargs, [])
            for n, f in (("a", self.baseline), ("b", self.func))
        )
        measure_sides(a, b, plan, emit)
