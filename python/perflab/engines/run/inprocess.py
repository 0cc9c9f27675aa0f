"""Measuring a callable in this process, with the harness of ``perflab run``.

The pytest plugin (and any caller that holds a live callable: a closure, a fixture's
object) can't hand its function to a fresh worker, which finds benchmarks by importing
a file. :class:`InProcessBackend` is a :class:`perflab.engines.run.backend.WorkerBackend`
that runs the worker's sequence (:func:`perflab.engines.run.worker.measure_call`: cold call,
calibration, warmup, loop overhead, samples with CPU and GC, allocation pass, clock
check) here instead, so the runner's rounds, stopping rule and records are unchanged.
Each "process" of the runner is then one repetition of that sequence in this same
process: repetitions share its memory layout, imports and warmed caches, so their
spread (and the CI built on it) leaves out the between-process variation that fresh
workers include. Reports say which mode produced a number.

Limits: a repetition can't be killed at the timeout (a hang hangs the caller), and a
crash of the interpreter ends the caller.

Ctrl-C: Python raises KeyboardInterrupt wherever the main thread is when the signal's
handler runs, and during measuring that is often inside a GC callback (the sampler's
``GcMonitor``), where an exception is "unraisable" and dropped: pytest went on and
exited 0. :class:`CtrlC` notes every SIGINT, and each event of the sequence (every
sample) raises KeyboardInterrupt once one was noted, so a Ctrl-C always stops it.
"""

from __future__ import annotations

import gc
import signal
import threading
import time
from collections.abc import Callable, Sequence
from types import FrameType, TracebackType
from typing import Any

from perflab.engines.run.backend import Event, Outcome
from perflab.engines.run.worker import PhaseError, error_fields, measure_call


class CtrlC:
    """Context manager: every SIGINT is noted (and handed to the handler that was there,
    which raises KeyboardInterrupt), so that :meth:`check` can raise it again where it
    cannot be dropped. Does nothing outside the main thread, or where SIGINT is ignored
    or handled by something that is not Python's default (the caller's choice stands).

    Attributes:
        noted: True once a SIGINT came.
    """

    def __init__(self) -> None:
        self.noted = False
        self._previous: Any = None

    def __enter__(self) -> CtrlC:
        if threading.current_thread() is threading.main_thread():
            previous = signal.getsignal(signal.SIGINT)
            if previous is signal.default_int_handler:
                self._previous = previous
                signal.signal(signal.SIGINT, self._handle)
        return self

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.noted = True
        self._previous(signum, frame)

    def check(self) -> None:
        """Raise KeyboardInterrupt when a SIGINT was noted."""
        if self.noted:
            raise KeyboardInterrupt

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None


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

        ctrl_c = CtrlC()

        def emit(event: str, **fields: Any) -> None:
            if event == "cold" and self.repetitions:  # only the first call is the first
                fields["ns"] = None
            record = {"event": event, **fields}
            outcome.events.append(record)
            on_event(record)
            ctrl_c.check()  # a Ctrl-C dropped inside a GC callback stops here

        start = time.monotonic()
        # The calling process's heap (pytest, its plugins, every test module so far) out of
        # the collector's way, as a fresh worker's is: the allocation pass's gc.collect()
        # walked it whole, ~120 ms a time, 7 of 10 s for three tiny tests (issue 29 §7).
        frozen = gc.get_freeze_count() == 0
        if frozen:
            gc.freeze()
        try:
            with ctrl_c:
                self._sequence(plan, emit)
                ctrl_c.check()
        except PhaseError as err:
            self.error = err.exc
            emit("error", **error_fields(err.phase, err.exc))
        except KeyboardInterrupt:
            outcome.interrupted = True
            raise
        finally:
            if frozen:
                gc.unfreeze()
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
