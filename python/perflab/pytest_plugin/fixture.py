"""The object behind the ``perflab_bench`` fixture (and the pytest-benchmark-compatible
``benchmark`` fixture): measures one callable per test with ``perflab run``'s harness.

``bench(func, *args, **kwargs)`` runs the runner (:class:`perflab.engines.run.runner.Runner`)
over one case with an :class:`perflab.engines.run.inprocess.InProcessBackend`: repetitions
of the worker sequence in the pytest process until the median's CI meets the precision
or the budget is spent. ``bench.pedantic(...)`` fixes rounds, iterations and warmup as
pytest-benchmark's pedantic mode does (one repetition of exactly ``rounds`` samples).
"""

from __future__ import annotations

import functools
import os
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from perflab.errors import UsageError


@dataclass
class BenchOptions:
    """What the session decided for every benchmark of the run.

    Attributes:
        settings: :class:`perflab.engines.run.runner.Settings` of the runner.
        sample_target_ns: calibration target of one sample, ns.
        timer_error_ns: the timer's error, ns, recorded with each repetition.
        disabled: True to call the function once without timing (xdist, --perflab-disable).
        event_loop: the event loop of async benchmarks: "asyncio" or "uvloop".
        processes: N > 0: re-measure each (non-pedantic) benchmark in N fresh child
            pytest processes instead of in this one (``--perflab-processes``).
        child_argv: the child pytest's command, less the test's node id.
        rootdir: the folder children run in (node ids are relative to it).
        profile_s: ``--perflab-profile``: seconds each benchmark is profiled in fresh
            child pytests after its timing (0: not profiled).
        baseline: ``--perflab-compare REF``'s checkout
            (:class:`perflab.engines.run.checkout.Baseline`) when REF is code to measure
            now (a git ref or a folder): each benchmark is then measured paired with the
            baseline's same test; None otherwise.
    """

    settings: Any
    sample_target_ns: float
    timer_error_ns: float
    disabled: bool = False
    event_loop: str = "asyncio"
    processes: int = 0
    child_argv: list[str] | None = None
    rootdir: str | None = None
    profile_s: float = 0.0
    baseline: Any = None


class PerflabBench:
    """Measures the callable a test hands it; one measurement per test.

    Args:
        name: the benchmark's name (the test's name, without its parametrization id
            when ``params`` hold the parameters).
        group: its group (tables and comparisons are per group).
        baseline: True for the group's "× baseline" reference.
        options: the session's :class:`BenchOptions`.
        record: called with the finished :class:`perflab.model.Benchmark`.
        nodeid: the test's node id (fresh processes re-run it).
        params: the test's parameters (JSON scalars), the benchmark's params.

    Attributes:
        extra_info: free JSON-able data stored with the benchmark (pytest-benchmark's
            ``benchmark.extra_info``); saved in the results file's settings.
        group: may be set by the test before measuring (pytest-benchmark's
            ``benchmark.group``).
        result: the :class:`perflab.model.Benchmark` once measured, else None.

    Raises (from calls):
        UsageError: measuring twice in one test; pedantic arguments out of range.
        Whatever the callable raises (its own exception and traceback).
    """

    def __init__(
        self,
        name: str,
        group: str,
        baseline: bool,
        options: BenchOptions,
        record: Callable[[Any, dict[str, Any]], None],
        nodeid: str = "",
        params: dict[str, Any] | None = None,
    ) -> None:
        self.name, self.group, self.baseline = name, group, baseline
        self.nodeid, self.params = nodeid, params or {}
        self.options = options
        self.extra_info: dict[str, Any] = {}
        self.result: Any = None
        self._record = record

    @property
    def disabled(self) -> bool:
        """True when this session doesn't time benchmarks (the function runs once)."""
        return self.options.disabled

    def __call__(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Measure ``func(*args, **kwargs)`` adaptively; return its result (first call's).

        An ``async def`` function is run to completion on an event loop created once per
        repetition (:mod:`perflab.engines.run.aio`); its result is the coroutine's.
        """
        return self._measure(func, args, kwargs, {}, None)

    def pedantic(
        self,
        target: Callable[..., Any],
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
        setup: Callable[[], Any] | None = None,
        rounds: int = 1,
        warmup_rounds: int = 0,
        iterations: int = 1,
    ) -> Any:
        """pytest-benchmark's pedantic mode: exactly ``rounds`` samples of ``iterations``
        calls each, after ``warmup_rounds`` untimed samples, in one repetition.

        ``setup`` (optional) runs untimed before every sample and returns ``None`` or
        ``(args, kwargs)`` for that sample; it requires ``iterations == 1`` and no
        ``args``/``kwargs`` (as in pytest-benchmark). Returns the first call's result.
        The CI of a pedantic benchmark spans its samples only (one repetition).

        Raises:
            UsageError: rounds or iterations < 1, warmup_rounds < 0, setup with
                iterations > 1 or with args.
        """
        if rounds < 1 or iterations < 1 or warmup_rounds < 0:
            raise UsageError(
                f"pedantic(rounds={rounds}, iterations={iterations}, "
                f"warmup_rounds={warmup_rounds}): rounds and iterations must "
                "be ≥ 1 and warmup_rounds ≥ 0"
            )
        kwargs = dict(kwargs or {})
        extra: dict[str, Any] = {
            "iterations": iterations,
            "warmup_samples": warmup_rounds,
            "min_samples": rounds,
            "max_samples": rounds,
            "sample_seconds": 0.0,
        }
        if setup is not None:
            if iterations > 1 or args or kwargs:
                raise UsageError(
                    "pedantic(setup=...) needs iterations=1 and no args/kwargs: "
                    "setup returns each round's (args, kwargs)"
                )
            args, kwargs = _setup_call(setup)
            extra["before_sample"] = _fresh_calls(target, setup)
        return self._measure(target, tuple(args), kwargs, extra, 1)

    def _measure(
        self,
        func: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        extra: dict[str, Any],
        processes: int | None,
    ) -> Any:
        """Run the harness over ``func`` (or just call it when disabled)."""
        if self.result is not None:
            raise UsageError(
                f"{self.name}: the benchmark fixture can measure only one "
                "function per test; split the test in two"
            )
        from perflab.engines.run.suite import MetricSpec
        from perflab.pytest_plugin import children

        first: list[Any] = []
        keep = MetricSpec(lambda value: first.append(value), "__result__")
        extra = {"event_loop": self.options.event_loop, **extra}
        if self.disabled:
            return children.call_once(func, args, kwargs)
        if os.environ.get(children.PROFILE_ENV):  # a profile child: no timing
            return children.profile_here(func, args, kwargs)
        if children.child_plan() is not None:  # a child pytest: one repetition, then exit
            children.measure_here(func, args, kwargs, extra, keep)
            return first[0] if first else None
        counting = bool(self.options.settings.count)  # --perflab-count: always children
        if self.options.baseline is not None and not counting:  # --perflab-compare REF
            return self._measure_paired(func, args, kwargs, bool(extra.get("iterations")))
        fresh = (self.options.processes > 0 or counting) and processes is None
        if fresh:  # the parent: the result for the test's asserts, timings from children
            value = children.call_once(func, args, kwargs)
            backend: Any = children.backend(self.options, self.nodeid)
            processes = None if counting else self.options.processes
        else:
            from perflab.engines.run.inprocess import InProcessBackend

            backend = InProcessBackend(func, args, kwargs, extra, [keep])
        bench, interrupted = self._run(func, backend, processes)
        if self.options.profile_s and not bench.error and not interrupted:
            bench.profile = children.profile(self.options, self.nodeid)
        self.result = bench
        self._record(
            bench,
            {
                "extra_info": self.extra_info,
                "pedantic": bool(extra.get("iterations")),
                "mode": "fresh processes" if fresh else "in-process",
            },
        )
        if interrupted:  # what was measured is recorded (and saved at the session's end)
            raise KeyboardInterrupt
        if getattr(backend, "error", None) is not None:
            raise backend.error
        if fresh and bench.error:
            raise RuntimeError(bench.error)
        return value if fresh else (first[0] if first else None)

    def _measure_paired(
        self,
        func: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        pedantic: bool,
    ) -> Any:
        """``--perflab-compare REF``: the test's result from one call here; the timings
        from pairs of child pytests in lock-step, this checkout's test and the
        baseline's (:class:`perflab.pytest_plugin.children.PairedChildren`), as
        ``perflab run --compare-to REF`` measures them (:class:`perflab.engines.run.
        pairs.PairedRunner`). Records this benchmark and the baseline's."""
        from dataclasses import replace

        from perflab.engines.run.pairs import BaselineCode, PairedRunner
        from perflab.pytest_plugin import children

        value = children.call_once(func, args, kwargs)
        base = self.options.baseline
        settings = replace(self.options.settings, pairing="lockstep")
        if self.options.processes > 0:
            n = self.options.processes
            settings = replace(settings, min_processes=n, max_processes=n, budget_s=1e9)
        case = self._case(func)
        code = BaselineCode(str(base.file), str(base.root), str(base.current_root), [case])
        runner = PairedRunner(
            f"<pytest {self.name}>",
            [case],
            settings,
            self.options.sample_target_ns,
            self.options.timer_error_ns,
            backend=children.PairedChildren(self.options, self.nodeid, base),
            advice=_advice(),
            baseline=code,
        )
        [bench] = runner.run()
        if runner.interrupted:
            raise KeyboardInterrupt
        self.result = bench
        [baseline] = [s.bench for s in runner.baseline_states]
        self._record(
            bench,
            {
                "extra_info": self.extra_info,
                "pedantic": pedantic,
                "mode": "paired",
                "baseline": baseline,
            },
        )
        for failed in (bench, baseline):
            if failed.error:
                raise RuntimeError(failed.error)
        return value

    def _case(self, func: Callable[..., Any]) -> Any:
        """This benchmark as the harness's one :class:`perflab.engines.run.suite.Case`."""
        from perflab.engines.run.suite import BenchSpec, Case

        spec = BenchSpec(func, self.name, self.group, baseline=self.baseline)
        return Case(spec, dict(self.params), 0)

    def _run(
        self, func: Callable[..., Any], backend: Any, processes: int | None
    ) -> tuple[Any, bool]:
        """The harness runner over this one benchmark: its Benchmark record, and whether
        a Ctrl-C stopped it."""
        from dataclasses import replace

        from perflab.engines.run.runner import Runner

        settings = self.options.settings
        if processes is not None:
            settings = replace(
                settings, min_processes=processes, max_processes=processes, budget_s=1e9
            )
        runner = Runner(
            f"<pytest {self.name}>",
            [self._case(func)],
            settings,
            self.options.sample_target_ns,
            self.options.timer_error_ns,
            backend=backend,
            advice=_advice(),
        )
        [bench] = runner.run()
        return bench, runner.interrupted

    @property
    def stats(self) -> Stats | None:
        """Per-call figures of the samples (seconds), pytest-benchmark style; None before
        measuring. perflab's own estimates (median with its CI) are in the session's table."""
        if self.result is None:
            return None
        return Stats.of(self.result)


def _advice() -> Any:
    """What a failed benchmark's message tells a pytest user to do."""
    from perflab.engines.run.runner import FailureAdvice

    return FailureAdvice(skip="deselect it (pytest -k, or --perflab-skip)", timeout="")


def _setup_call(setup: Callable[[], Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """(args, kwargs) from a pedantic ``setup()`` (None means no arguments)."""
    made = setup()
    if made is None:
        return (), {}
    try:
        args, kwargs = made
        return tuple(args), dict(kwargs or {})
    except (TypeError, ValueError):
        raise UsageError(
            f"pedantic setup() must return None or (args, kwargs), got {type(made).__name__}"
        ) from None


def _fresh_calls(target: Callable[..., Any], setup: Callable[[], Any]) -> Callable[[], Any]:
    """The ``before_sample`` hook: run ``setup`` and bind its arguments to ``target``."""

    def fresh() -> Callable[[], Any]:
        args, kwargs = _setup_call(setup)
        return functools.partial(target, *args, **kwargs)

    return fresh


@dataclass
class Stats:
    """pytest-benchmark's ``benchmark.stats`` figures, per call, in seconds.

    Computed from every timed sample (wall time per call, loop overhead not removed);
    ``stats.stats`` is the object itself so that ``benchmark.stats.stats.mean`` (the
    form pytest-benchmark's docs use) works too.

    Attributes: min, max, mean, median, stddev (s per call), rounds (samples),
    iterations (calls per sample, first repetition).
    """

    min: float
    max: float
    mean: float
    median: float
    stddev: float
    rounds: int
    iterations: int

    @property
    def stats(self) -> Stats:
        """Itself (pytest-benchmark nests the figures one level down)."""
        return self

    @classmethod
    def of(cls, bench: Any) -> Stats | None:
        """From a measured :class:`perflab.model.Benchmark`; None when it has no sample."""
        per_call = [s.wall_ns / s.iterations / 1e9 for p in bench.processes for s in p.samples]
        if not per_call:
            return None
        return cls(
            min(per_call),
            max(per_call),
            statistics.fmean(per_call),
            statistics.median(per_call),
            statistics.stdev(per_call) if len(per_call) > 1 else 0.0,
            len(per_call),
            bench.processes[0].iterations,
        )
