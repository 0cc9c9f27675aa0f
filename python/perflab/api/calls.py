"""The Python API for scripts and notebooks (docs/api.md).

* :func:`measure`: measure one callable now with ``perflab run``'s harness, in this
  process (the in-process mode of the pytest plugin) or in N fresh worker processes
  (:mod:`perflab.api.child`), and get its estimate back;
* :class:`Runner`: a script that registers several functions and is then run with
  ``perflab run``'s options (``python bench.py --json out.json``), like pyperf's Runner:
  fresh worker processes import the script again and find the functions it registered;
* :func:`load`: a results file as the typed results model, with ``to_records()`` and
  ``to_pandas()``.
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perflab.errors import UsageError


@dataclass
class Result:
    """What :func:`measure` returns.

    Attributes:
        benchmark: the raw data (:class:`perflab.model.Benchmark`: repetitions, samples).
        summary: the statistics (:class:`perflab.analyze.run.summary.Summary`): ``median_s``,
            ``ci_low_s``, ``ci_high_s`` (s per call, 95% CI), ``cpu_wall``, allocations,
            ``warnings``…
        mode: "in-process" (the repetitions shared this process; the CI leaves out
            between-process variation), "fresh processes" (``processes=N``) or "counted"
            (``count="instructions"``: ``summary`` is then a
            :class:`perflab.analyze.counts.CountSummary`, see :attr:`ir_per_op`).
        value: the first call's return value.
        baseline: with ``measure(..., baseline=g)``: g's raw data (its
            :class:`perflab.model.Benchmark`, measured paired with ``benchmark``), else None.
        ratio: with a baseline: the paired ratio func/baseline
            (:class:`perflab.analyze.paired.PairedRatio`: ``ratio.ratio.value`` and its
            CI ``ci_low``/``ci_high``, below 1 when func is faster), or None when too few
            pairs were usable; without a baseline, None.
        verdict: with a baseline: "faster", "slower", "same", "inconclusive" or
            "failed" (:func:`perflab.analyze.paired.paired_verdict` against
            ``threshold``); else None.
    """

    benchmark: Any
    summary: Any
    mode: str
    value: Any = None
    baseline: Any = None
    ratio: Any = None
    verdict: str | None = None

    @property
    def profile(self) -> Any:
        """``profile=True``: the :class:`perflab.model.profile.Profile` of the calls (its
        ``stacks`` are collapsed stacks with sample counts); None otherwise."""
        return self.benchmark.profile

    @property
    def median_s(self) -> float:
        """Median time per call, s."""
        return float(self.summary.median_s)

    @property
    def ir_per_op(self) -> float:
        """``count="instructions"``: instructions per call (Ir, median over the layouts).

        Raises:
            AttributeError: the result was timed, not counted."""
        if self.mode != "counted":
            raise AttributeError("ir_per_op: this result was timed; measure with count=")
        return float(self.summary.ir_per_op)

    @property
    def ci_s(self) -> tuple[float, float]:
        """The 95% CI of the median, s per call (low, high)."""
        return float(self.summary.ci_low_s), float(self.summary.ci_high_s)

    def __str__(self) -> str:
        from perflab.units import format_time

        if self.mode == "counted":
            s = self.summary
            return (
                f"{self.benchmark.name}: {s.ir_per_op:,.0f} instructions per call (counted, "
                f"{len(s.process_ir_per_op)} layouts, band ±{s.band_spread / 2:.2%}"
                f"{', layout-sensitive' if s.layout_sensitive else ''})"
            )
        low, high = self.ci_s
        text = (
            f"{self.benchmark.name}: {format_time(self.median_s)} per call "
            f"(95% CI {format_time(low)} – {format_time(high)}, {self.mode}, "
            f"{self.summary.processes} "
            f"{'repetitions' if self.mode == 'in-process' else 'processes'}, "
            f"{self.summary.samples} samples)"
        )
        if self.baseline is None:
            return text
        if self.ratio is None:
            return f"{text}; against the baseline: {self.verdict} (too few pairs)"
        r = self.ratio.ratio
        return (
            f"{text}; {r.value:.3f}× the baseline (95% CI {r.ci_low:.3f}–{r.ci_high:.3f}, "
            f"paired, {self.ratio.pairs:,} pairs): {self.verdict}"
        )


def measure(
    func: Callable[..., Any],
    *args: Any,
    precision: float = 0.02,
    budget: float = 2.0,
    processes: int = 0,
    name: str | None = None,
    count: str | None = None,
    profile: bool | float = False,
    baseline: Callable[..., Any] | None = None,
    threshold: float = 0.02,
    **kwargs: Any,
) -> Result:
    """Measure ``func(*args, **kwargs)`` now, in this process or in fresh ones.

    The harness of ``perflab run`` (calibration, warmup until stable, loop overhead,
    samples with CPU and GC, allocation pass, clock check). ``processes=0`` (default):
    repetitions in this process until the median's 95% CI half-width is within
    ``precision`` or ``budget`` is spent (any callable, closures too; the CI leaves out
    between-process variation). ``processes=N``: N fresh worker processes, each
    importing the function again (fewer when ``budget`` runs out first), so the CI is
    comparable with ``perflab run``'s; the function must be importable (a module-level
    ``def`` in a module or in the running script, whose ``measure`` call then sits under
    ``if __name__ == "__main__"``) and its arguments picklable. ``async def`` functions
    run to completion on one event loop per repetition or process.

    Args:
        func: the callable; ``args``/``kwargs`` are passed to it.
        precision: target relative CI half-width (0.02 = 2%), in (0, 1).
        budget: time budget, s (> 0).
        processes: 0 (this process) or the number of fresh worker processes (1–1000).
        name: the benchmark's name (default: ``func.__name__``).
        count: "instructions": count instead of time (docs/count.md): ``processes`` (3
            by default) fresh workers under Valgrind's Callgrind, one memory layout each;
            the result's ``ir_per_op`` and ``summary`` (a ``CountSummary``). Needs Valgrind
            and an importable function, as ``processes`` does.
        profile: True (1 s) or seconds: after timing, sample where the calls spend their
            time with py-spy, in 2 fresh processes of their own (docs/profile.md): the
            result's ``profile``. Needs py-spy and an importable function, as
            ``processes`` does.
        baseline: a callable to compare ``func`` with, called with the same arguments:
            the two are measured **paired** (docs/compare.md), alternately sample by
            sample in each repetition (or fresh process), so the machine's speed
            swings cancel in each pair; the result's ``ratio`` (func/baseline, with
            its CI) and ``verdict`` come from the pairs, its ``baseline`` holds the
            baseline's data. Not with ``count``.
        threshold: with ``baseline``: the verdict's noise threshold (0.02 = ±2%), in
            [0, 1).

    Returns:
        :class:`Result` (median and CI per call in seconds, raw data, and the value of a
        call made in this process: the first measured one, or with ``processes`` one
        untimed call before the workers start).

    Raises:
        UsageError: precision, budget, processes or threshold out of range; ``baseline``
            not callable, or with ``count``; with ``processes``, a
            call that can't be sent to a fresh process, or a script without the
            ``__main__`` guard.
        Whatever ``func`` raises (its own exception; from a worker, a RuntimeError with
            the worker's message).
    """
    import os

    from perflab.api import child

    if (
        not 0 < precision < 1
        or not budget > 0
        or isinstance(processes, bool)
        or not isinstance(processes, int)
        or not 0 <= processes <= 1000
    ):
        raise UsageError(
            f"measure(precision={precision!r}, budget={budget!r}, processes="
            f"{processes!r}): precision must be in (0, 1), e.g. 0.02, budget > 0 "
            "seconds, processes an integer from 0 (this process) to 1000"
        )
    if os.environ.get(child.LOADING_ENV):
        raise UsageError(
            "measure(processes=…) ran again while a worker imported the script: "
            "put the script's measure() calls under "
            '`if __name__ == "__main__":`'
        )
    label = name or getattr(func, "__name__", type(func).__name__)
    if profile:
        _profile(func, args, kwargs, profile, check_only=True)  # before anything is timed
        result = measure(func, *args, precision=precision, budget=budget, processes=processes,
                         name=name, count=count, baseline=baseline, threshold=threshold,
                         **kwargs)  # fmt: skip
        result.benchmark.profile = _profile(func, args, kwargs, profile)
        return result
    if baseline is not None:
        _check_baseline(baseline, count, threshold)
        return _measure_paired(
            func, baseline, args, kwargs, (precision, budget, threshold), processes, label
        )
    if count is not None:
        _check_count(count)
        return _measure_fresh(func, args, kwargs, precision, budget, processes or 3, label, count)
    if processes:
        return _measure_fresh(func, args, kwargs, precision, budget, processes, label)
    from perflab.engines.run.inprocess import InProcessBackend
    from perflab.engines.run.suite import MetricSpec

    first: list[Any] = []
    backend = InProcessBackend(func, args, kwargs, metrics=[MetricSpec(first.append, "__result__")])
    bench, summary = _run_harness(func, label, backend, precision, budget, None)
    if backend.error is not None:
        raise backend.error
    return Result(bench, summary, "in-process", first[0] if first else None)


def _measure_fresh(
    func: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    precision: float,
    budget: float,
    processes: int,
    label: str,
    count: str | None = None,
) -> Result:
    """:func:`measure` in ``processes`` fresh workers (:mod:`perflab.api.child`), counted
    when ``count`` says so."""
    import tempfile

    from perflab.api import child
    from perflab.engines.run.aio import call_once

    with tempfile.TemporaryDirectory(prefix="perflab-measure-") as folder:
        backend = child.ChildBackend(child.call_file(func, args, kwargs, folder))
        value = call_once(func, args, kwargs)
        bench, summary = _run_harness(func, label, backend, precision, budget, processes, count)
    if bench.error:
        raise RuntimeError(f"{label} failed in a worker process: {bench.error}")
    return Result(bench, summary, "counted" if count else "fresh processes", value)


def _profile(
    func: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    seconds: bool | float,
    check_only: bool = False,
) -> Any:
    """``measure(profile=…)``: the call profiled in fresh processes
    (:func:`perflab.api.child.profile`); with ``check_only``, only the checks (py-spy,
    a call a fresh process can re-create, the time). Raises UsageError."""
    import tempfile

    from perflab.api import child
    from perflab.engines.profiler import find_sampler

    if isinstance(seconds, bool):
        seconds = 1.0
    if not seconds > 0:
        raise UsageError(f"measure(profile={seconds!r}): True, or a number of seconds > 0")
    with tempfile.TemporaryDirectory(prefix="perflab-profile-") as folder:
        path = child.call_file(func, args, kwargs, folder)
        if check_only:
            find_sampler()
            return None
        return child.profile(path, float(seconds))


def _check_baseline(baseline: Any, count: str | None, threshold: float) -> None:
    """``baseline=`` is a callable, without ``count``, and ``threshold`` in [0, 1).
    Raises UsageError."""
    if not callable(baseline):
        raise UsageError(
            f"measure(baseline={baseline!r}): pass the callable to compare with, "
            "e.g. baseline=old_version"
        )
    if count is not None:
        raise UsageError(
            "measure(count=..., baseline=...): instruction counts don't move with the "
            "machine, so they need no pairing: count each with measure(f, count=...) "
            "and compare their ir_per_op"
        )
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
        raise UsageError(f"measure(threshold={threshold!r}): a fraction, e.g. 0.02 for ±2%")
    if not 0 <= threshold < 1:
        raise UsageError(f"measure(threshold={threshold!r}): a fraction in [0, 1), e.g. 0.02")


def _measure_paired(
    func: Callable[..., Any],
    baseline: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    limits: tuple[float, float, float],
    processes: int,
    label: str,
) -> Result:
    """:func:`measure` with a baseline: the two measured paired by
    :class:`perflab.engines.run.pairs.PairedRunner`, in this process
    (:class:`perflab.engines.run.inprocess.InProcessPairBackend`) or in ``processes``
    fresh ones (:mod:`perflab.api.child`); ``limits``: (precision, budget, threshold)."""
    import tempfile
    from dataclasses import replace

    from perflab.analyze.paired import benchmark_ratio, paired_verdict
    from perflab.analyze.run.ratios import summarize_benchmarks
    from perflab.api import child
    from perflab.engines import clocks
    from perflab.engines.run.aio import call_once
    from perflab.engines.run.inprocess import InProcessPairBackend
    from perflab.engines.run.pairs import PairedRunner
    from perflab.engines.run.runner import FailureAdvice, Settings
    from perflab.engines.run.suite import BenchSpec, Case

    precision, budget, threshold = limits
    settings = Settings(precision=precision, budget_s=budget, threshold=threshold)
    if processes:
        settings = replace(settings, min_processes=processes, max_processes=processes)
    base_name = getattr(baseline, "__name__", "baseline")
    base_name = f"{base_name} (baseline)" if base_name == label else base_name
    cases = [
        Case(BenchSpec(baseline, base_name, "", baseline=True), {}, 0),
        Case(BenchSpec(func, label, ""), {}, 1),
    ]
    timer = clocks.measure_timer()
    value = call_once(func, args, kwargs)  # the result returned; untimed
    with tempfile.TemporaryDirectory(prefix="perflab-measure-") as folder:
        if processes:
            pair_backend: Any = child.ChildBackend(
                child.call_file(func, args, kwargs, folder, baseline)
            )
        else:
            pair_backend = InProcessPairBackend(baseline, func, args, kwargs)
        runner = PairedRunner(
            f"<api {label}>",
            cases,
            settings,
            max(timer.min_sample_ns, settings.min_sample_ns),
            timer.error_ns,
            advice=FailureAdvice(skip="", timeout=""),
            pair_backend=pair_backend,
        )
        base, bench = runner.run()
    if runner.interrupted:
        raise KeyboardInterrupt
    if getattr(pair_backend, "error", None) is not None:
        raise pair_backend.error
    for failed in (bench, base):
        if failed.error:
            raise RuntimeError(f"{failed.name} failed in a worker process: {failed.error}")
    summary = next(
        s
        for group in summarize_benchmarks([base, bench], precision).values()
        for s in group
        if s.id == bench.id
    )
    ratio = benchmark_ratio(base, bench, settings.confidence)
    mode = "fresh processes" if processes else "in-process"
    return Result(bench, summary, mode, value, base, ratio, paired_verdict(ratio, threshold))


def _check_count(count: str) -> None:
    """``count=`` is "instructions" and Valgrind is installed. Raises UsageError."""
    import shutil

    from perflab.engines.callgrind import MISSING

    if count != "instructions":
        raise UsageError(f'measure(count={count!r}): the one count is "instructions"')
    if not shutil.which("valgrind"):
        raise UsageError(MISSING.replace("--count", "count="))


def _run_harness(
    func: Callable[..., Any],
    label: str,
    backend: Any,
    precision: float,
    budget: float,
    processes: int | None,
    count: str | None = None,
) -> tuple[Any, Any]:
    """The harness runner over one benchmark with ``backend``: (Benchmark, Summary).
    ``processes``: exactly that many (fewer when the budget runs out), else adaptive;
    with ``count`` that many counted layouts, and the summary a ``CountSummary``."""
    from dataclasses import replace

    from perflab.analyze.run.ratios import summarize_benchmarks
    from perflab.engines import clocks
    from perflab.engines.run.runner import FailureAdvice, Settings
    from perflab.engines.run.runner import Runner as HarnessRunner
    from perflab.engines.run.suite import BenchSpec, Case

    settings = Settings(
        precision=precision, budget_s=budget, count=count, count_processes=processes or 3
    )
    if processes is not None:
        settings = replace(settings, min_processes=processes, max_processes=processes)
    timer = clocks.measure_timer()
    runner = HarnessRunner(
        f"<api {label}>",
        [Case(BenchSpec(func, label, ""), {}, 0)],
        settings,
        max(timer.min_sample_ns, settings.min_sample_ns),
        timer.error_ns,
        backend=backend,
        advice=FailureAdvice(skip="", timeout=""),
    )
    [bench] = runner.run()
    if runner.interrupted:
        raise KeyboardInterrupt
    if count:
        from perflab.analyze.counts import summarize_counts

        return bench, summarize_counts(bench)
    [[summary]] = summarize_benchmarks([bench], precision=precision).values()
    return bench, summary


class Runner:
    """pyperf-style benchmark scripts: register functions, then run them with ``perflab
    run``'s command line (``python bench.py --json out.json --budget 5s``)::

        runner = perflab.Runner()
        runner.bench_func("sort 1k", sorted, data)
        if __name__ == "__main__":
            raise SystemExit(runner.run())

    Every function is measured in fresh worker processes, as ``perflab run`` does: each
    worker imports the script again (under another module name, so the ``__main__``
    guard keeps it from running again) and finds the registered functions.

    Raises (from methods):
        UsageError: a bad name or argument list; see :meth:`bench_func`.
    """

    def __init__(self) -> None:
        self.names: list[str] = []

    def bench_func(
        self,
        name: str,
        func: Callable[..., Any],
        *args: Any,
        group: str = "",
        baseline: bool = False,
        **kwargs: Any,
    ) -> None:
        """Register ``func(*args, **kwargs)`` under ``name`` (sync or ``async def``).

        The arguments are bound once (``functools.partial``): the loop overhead is then
        measured on an empty function without them, a few tens of ns less than the
        binding costs. Raises UsageError for an empty or repeated name.
        """
        from perflab.engines.run.suite import bench

        if not name or name in self.names:
            raise UsageError(
                f"Runner.bench_func({name!r}): each benchmark needs its own non-empty name"
            )
        self.names.append(name)
        bound = functools.partial(func, *args, **kwargs) if (args or kwargs) else func
        bench(bound, name=name, group=group, baseline=baseline)

    #: pyperf's name for async functions; here the same call
    bench_async_func = bench_func

    def run(self, argv: Sequence[str] | None = None, script: str | None = None) -> int:
        """Measure the registered functions with ``perflab run SCRIPT ARGV`` (a child
        process, whose table and messages go to our stdout and stderr); returns its exit
        code (0, 1 when a benchmark failed, 2 on bad input, 128 + the signal when
        interrupted: 130 Ctrl-C, 143 SIGTERM).

        ``argv`` defaults to ``sys.argv[1:]``; ``script`` to the ``__main__`` module's
        file. Inside a worker (the script imported, not run) there is nothing to do and
        0 is returned: the guard ``if __name__ == "__main__"`` makes that case rare.
        """
        main = sys.modules.get("__main__")
        path = script or getattr(main, "__file__", None)
        caller = inspect.currentframe()
        called_from = (
            caller.f_back.f_globals.get("__name__") if caller and caller.f_back else "__main__"
        )
        if script is None and called_from != "__main__":
            return 0
        if not path or not Path(path).is_file():
            raise UsageError(
                "Runner.run() needs the script's file: run it as `python bench.py`, or pass script="
            )
        import subprocess

        command = [
            sys.executable,
            "-m",
            "perflab",
            "run",
            str(path),
            *(sys.argv[1:] if argv is None else argv),
        ]
        proc = subprocess.Popen(command)
        try:
            return proc.wait()
        except KeyboardInterrupt:  # perflab run got the Ctrl-C too: it saves, then exits
            return proc.wait()


def load(path: str | Path) -> Any:
    """A results file (any kind) as :class:`LoadedResults`: the typed model
    (:class:`perflab.model.Results`) plus ``to_records()`` and ``to_pandas()``.

    Raises:
        ResultsFileError: missing, damaged or foreign file (see :func:`perflab.model.load`).
    """
    from perflab import model

    results = model.load(path)
    return _loaded_class()(**vars(results))


@functools.cache
def _loaded_class() -> type:
    """:class:`LoadedResults`, built on first use so that importing the API stays cheap."""
    from perflab.model import Results

    class LoadedResults(Results):
        """:class:`perflab.model.Results` with flat views of its statistics."""

        def to_records(self) -> list[dict[str, Any]]:
            """One flat dict per row of ``perflab show FILE --format csv``, figures in
            base units: per benchmark of a ``run`` file (``median_s``, ``ci_low_s``, …),
            per command of a ``cmd`` file (``median_s``, ``user_s``, ``ratio``, …), per
            step of an ``http`` file (``offered_rate``, ``p99_ms``, …).

            Raises:
                UsageError: a ``trace`` file (its figures are in ``benchmarks[].span``).
            """
            if self.kind == "run":
                from perflab.analyze.run.ratios import summarize_benchmarks
                from perflab.report.run_table import summary_records

                grouped = summarize_benchmarks(
                    self.benchmarks, precision=self.settings.get("precision")
                )
                return summary_records(grouped)
            from perflab.analyze.results_figures import results_figures

            if self.kind == "cmd":
                from perflab.report.cmd_table import summary_records as command_records

                return command_records(results_figures(self).commands)
            if self.kind == "http":
                from perflab.report.http_table import http_records

                return http_records(self, results_figures(self).sweep)
            raise UsageError(
                f"to_records() reads run, cmd and http files; this one is {self.kind!r}"
            )

        def to_pandas(self) -> Any:
            """:meth:`to_records` as a pandas DataFrame. Raises UsageError without pandas."""
            try:
                import pandas as pd
            except ImportError:
                raise UsageError("to_pandas() needs pandas: pip install pandas") from None
            return pd.DataFrame(self.to_records())

    return LoadedResults
