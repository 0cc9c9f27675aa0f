"""The pytest hooks, options and fixtures of perflab's plugin (entry point ``pytest11``:
``perflab = perflab.pytest_plugin.plugin``; ``-p no:perflab`` disables it).

Fixtures:
    ``perflab_bench``: measures one callable per test with ``perflab run``'s harness
    (:class:`perflab.pytest_plugin.fixture.PerflabBench`).
    ``benchmark``: the same object under pytest-benchmark's name, defined only when
    pytest-benchmark is not installed (its own fixture wins otherwise).

Markers: ``@pytest.mark.perflab(group="…", baseline=True)``; and, when pytest-benchmark
is absent, ``@pytest.mark.benchmark(group="…", max_time=…)`` (other keys are accepted and
ignored, see docs/pytest.md).

This module is imported by every pytest run in an environment where perflab is
installed: it imports nothing heavy until a benchmark runs.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

from perflab.pytest_plugin.compat import HAS_PYTEST_BENCHMARK
from perflab.report.notice import tell

FIXTURES = ("perflab_bench",) if HAS_PYTEST_BENCHMARK else ("perflab_bench", "benchmark")
_KEY = pytest.StashKey[Any]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """perflab's options (and pytest-benchmark's mapped ones when it is absent)."""
    group = parser.getgroup("perflab", "perflab benchmarks (docs/pytest.md)")
    group.addoption(
        "--perflab-only",
        action="store_true",
        help="run only the tests that use a benchmark fixture",
    )
    group.addoption(
        "--perflab-skip", action="store_true", help="skip the tests that use a benchmark fixture"
    )
    group.addoption(
        "--perflab-disable",
        action="store_true",
        help="call each benchmarked function once, without timing it",
    )
    group.addoption(
        "--perflab-precision",
        default="2%",
        metavar="PCT",
        help="target 95%% CI half-width of each median (2%%)",
    )
    group.addoption(
        "--perflab-budget", default="2s", metavar="TIME", help="time budget per benchmark (2s)"
    )
    group.addoption(
        "--perflab-processes",
        type=int,
        default=0,
        metavar="N",
        help="re-measure each benchmark in N fresh child pytest processes "
        "(0: in the pytest process)",
    )
    group.addoption(
        "--perflab-event-loop",
        default="asyncio",
        choices=["asyncio", "uvloop"],
        help="event loop of async benchmarks (asyncio)",
    )
    group.addoption(
        "--perflab-count",
        choices=["instructions"],
        help="count instead of time: each benchmark in 3 fresh child processes under "
        "Valgrind's Callgrind (instructions per op, the layout band; docs/count.md)",
    )
    group.addoption("--perflab-json", metavar="FILE", help="write the results file here")
    group.addoption(
        "--perflab-save",
        action="store_true",
        help="write the results file to .perflab/pytest-<time>.json (saved "
        "results are also recorded in the history database)",
    )
    group.addoption(
        "--perflab-compare",
        nargs="?",
        const="last",
        metavar="last|FILE|REF",
        help="compare with a git ref or a folder holding the baseline's code (measured "
        "now, paired with this checkout: docs/compare.md), a results file, a run id "
        "recorded in the history database, or 'last' (default: the newest recorded "
        "run, else the newest file in .perflab/)",
    )
    group.addoption(
        "--perflab-history",
        metavar="PATH",
        help="the history database (default: $PERFLAB_HISTORY or .perflab/history.sqlite)",
    )
    group.addoption(
        "--perflab-no-history",
        action="store_true",
        help="don't record saved results in the history database",
    )
    group.addoption(
        "--perflab-fail-on",
        default="",
        metavar="VERDICTS",
        help="with --perflab-compare: fail the session on these verdicts, e.g. slower; "
        "memory: a test allocates more per op than the baseline (allocated/op, allocs/op, "
        "alloc peak/op)",
    )
    group.addoption(
        "--perflab-max-rss",
        metavar="SIZE",
        help="a memory limit gate: fail the session naming each test whose child "
        "pytest's RSS peak is above SIZE, e.g. 200MB; needs --perflab-processes N (each "
        "test's RSS is read from its own fresh processes) and turns the RSS reading on",
    )
    group.addoption(
        "--perflab-profile",
        action="store_true",
        help="after timing each benchmark, sample where its calls spend their time with "
        "py-spy in 2 fresh child pytests (1 s); perflab show FILE --profile prints it",
    )
    group.addoption(
        "--perflab-threshold",
        default="2%",
        metavar="PCT",
        help="with --perflab-compare: the verdicts' noise threshold (2%%)",
    )
    if not HAS_PYTEST_BENCHMARK:
        from perflab.pytest_plugin.compat import add_benchmark_options

        add_benchmark_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    """Register the markers; build the session's options (bad values: one clear error)."""
    config.addinivalue_line(
        "markers",
        "perflab(group=None, baseline=False): group and baseline of the test's perflab benchmark",
    )
    if not HAS_PYTEST_BENCHMARK:
        config.addinivalue_line(
            "markers",
            "benchmark(group=None, max_time=None, ...): pytest-benchmark's marker, read by perflab",
        )
    from perflab.pytest_plugin.children import child_plan
    from perflab.pytest_plugin.compat import merged_options

    try:
        config.stash[_KEY] = merged_options(config)
    except Exception as exc:  # UsageError: shown as pytest's usage error
        raise pytest.UsageError(f"perflab: {exc}") from None
    if config.getoption("perflab_processes") < 0:
        raise pytest.UsageError("perflab: --perflab-processes must be ≥ 0")
    config.stash[_KEY]["child"] = child_plan() is not None
    if config.getoption("perflab_profile"):
        from perflab.engines.profiler import find_sampler

        try:  # before anything is measured
            find_sampler()
        except Exception as exc:  # UsageError: shown as pytest's usage error
            raise pytest.UsageError(f"perflab: {exc}") from None
    _check_out_baseline(config)
    if config.stash[_KEY].get("json") and not config.stash[_KEY]["child"]:
        from perflab.files import results_destination

        try:  # before anything is measured: a user's file, a folder, a device
            results_destination(config.stash[_KEY]["json"], "pytest")
        except Exception as exc:  # UsageError: shown as pytest's usage error
            raise pytest.UsageError(f"perflab: {exc}") from None


def _check_out_baseline(config: pytest.Config) -> None:
    """``--perflab-compare REF`` naming code (a git ref, a folder): check it out now
    (:func:`perflab.engines.run.checkout.measured_baseline`, a temporary git worktree
    removed at the end of the session) so each benchmark is measured paired with it."""
    options = config.stash[_KEY]
    spec = options["gate"].compare
    if not spec or options["child"] or options["disable"] or _xdist_active(config):
        return
    import contextlib
    from pathlib import Path

    from perflab.engines.run.checkout import measured_baseline
    from perflab.errors import UsageError

    stack = contextlib.ExitStack()
    try:
        manager = measured_baseline(spec, Path(config.rootpath))
        if manager is not None and options["settings"].count:
            raise UsageError(
                f"--perflab-compare {spec} measures the baseline's times paired; with "
                "--perflab-count compare with a results file of the baseline's counts"
            )
        if manager is not None:
            options["baseline"] = stack.enter_context(manager)
    except Exception as exc:  # UsageError: shown as pytest's usage error
        stack.close()
        raise pytest.UsageError(f"perflab: {exc}") from None
    options["checkout"] = stack


def pytest_unconfigure(config: pytest.Config) -> None:
    """Remove ``--perflab-compare REF``'s temporary checkout."""
    options = config.stash.get(_KEY, None)
    if options is not None and options.get("checkout") is not None:
        options.pop("checkout").close()


def _xdist_active(config: pytest.Config) -> bool:
    """True in an xdist worker, or when xdist distributes tests (``-n N``, N > 0)."""
    if hasattr(config, "workerinput"):
        return True
    numprocesses = config.getoption("numprocesses", default=None)
    return bool(numprocesses) and numprocesses != 0


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``--perflab-only`` / ``--perflab-skip``: skip by whether a test uses a fixture."""
    options = config.stash[_KEY]
    if not (options["only"] or options["skip"]):
        return
    for item in items:
        uses = any(name in FIXTURES for name in getattr(item, "fixturenames", ()))
        if options["only"] and not uses:
            item.add_marker(pytest.mark.skip(reason="not a benchmark (--perflab-only)"))
        elif options["skip"] and uses:
            item.add_marker(pytest.mark.skip(reason="a benchmark (--perflab-skip)"))


def _session(config: pytest.Config) -> Any:
    """The session's results (built, with the timer measured, on first use)."""
    options = config.stash[_KEY]
    if options.get("session") is None:
        from perflab.engines import clocks
        from perflab.pytest_plugin.fixture import BenchOptions
        from perflab.pytest_plugin.session import SessionResults

        timer = clocks.measure_timer()
        settings = options["settings"]
        disabled = options["disable"] or _xdist_active(config)
        rootdir = str(config.rootpath)
        options["bench_options"] = BenchOptions(
            settings,
            max(timer.min_sample_ns, settings.min_sample_ns),
            timer.error_ns,
            disabled,
            config.getoption("perflab_event_loop"),
            config.getoption("perflab_processes"),
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", rootdir],
            rootdir,
            1.0 if config.getoption("perflab_profile") else 0.0,
            options.get("baseline"),
        )
        options["session"] = SessionResults(
            settings,
            timer.to_dict(),
            options["json"],
            options["save"],
            options["gate"],
            ["pytest", *config.invocation_params.args],
            history_db=_history_db(config),
            verbose=config.get_verbosity() > 0,
            measured=options.get("baseline"),
        )
    return options["session"]


def _history_db(config: pytest.Config) -> Any:
    """The history database of ``--perflab-history`` and ``--perflab-no-history``, or
    None when recording is off (:func:`perflab.history.record.database`)."""
    from perflab.history import record

    return record.database(
        config.getoption("perflab_history"), config.getoption("perflab_no_history")
    )


def _make_bench(request: pytest.FixtureRequest) -> Any:
    """The fixture object for the requesting test, its group and baseline from markers."""
    from perflab.pytest_plugin.compat import marker_settings
    from perflab.pytest_plugin.fixture import PerflabBench

    session = _session(request.config)
    options = request.config.stash[_KEY]["bench_options"]
    group, baseline, budget = marker_settings(request.node)
    if budget is not None:
        from dataclasses import replace

        options = replace(options, settings=replace(options.settings, budget_s=budget))
    from perflab.interop.pytest_benchmark import name_and_params

    callspec = getattr(request.node, "callspec", None)  # a parametrized test's parameters
    values = callspec.params if callspec else {}
    if all(v is None or isinstance(v, (str, int, float, bool)) for v in values.values()):
        name, params = name_and_params({"name": request.node.name, "params": values})
    else:  # an object's text may change from run to run (its address): pytest's id stays
        name, params = request.node.name, {}
    return PerflabBench(name, group, baseline, options, session.record, request.node.nodeid, params)


@pytest.fixture
def perflab_bench(request: pytest.FixtureRequest) -> Any:
    """Measure one callable: ``perflab_bench(func, *args, **kwargs)`` returns its result;
    ``perflab_bench.pedantic(func, args=, kwargs=, setup=, rounds=, iterations=,
    warmup_rounds=)`` fixes the rounds (see :class:`PerflabBench`)."""
    return _make_bench(request)


if not HAS_PYTEST_BENCHMARK:

    @pytest.fixture
    def benchmark(request: pytest.FixtureRequest) -> Any:
        """pytest-benchmark's ``benchmark`` fixture, measured by perflab (installed only
        when pytest-benchmark is not): ``benchmark(fn, *args, **kwargs)``,
        ``benchmark.pedantic(...)``, ``benchmark.extra_info``, ``benchmark.group``."""
        return _make_bench(request)


def pytest_report_header(config: pytest.Config) -> list[str]:
    """One header line when benchmarks won't be timed because of xdist."""
    options = config.stash.get(_KEY, None)
    if options is not None and _xdist_active(config) and not options["disable"]:
        return [
            "perflab: benchmarks are not timed with pytest-xdist (-n); they run once "
            "each. Time them with -n 0"
        ]
    return []


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """The tables, the results file and the comparison, after pytest's own summary."""
    _finish(config)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Save the results first (before any plugin's terminal summary, where a Ctrl-C or a
    failing plugin would lose them); without a terminal reporter (``-p no:terminal``),
    finish here too."""
    options = session.config.stash.get(_KEY, None)
    results = None if options is None else options.get("session")
    if results is not None and not (options["bench_options"].disabled or options["child"]):
        from perflab.errors import PerflabError

        try:
            results.write()
        except PerflabError:
            pass  # said once, by the finish below
        except KeyboardInterrupt:
            _interrupted(options, results)
    if session.config.pluginmanager.get_plugin("terminalreporter") is None:
        _finish(session.config)


def _interrupted(options: dict[str, Any], session: Any) -> None:
    """A Ctrl-C while finishing: say where the results are, end the session as pytest's
    own interrupt does (exit status 2), print no tables."""
    options["finished"] = True
    saved = ", ".join(str(d) for d in session.saved)
    tell(f"perflab: interrupted; results saved to {saved}" if saved else "perflab: interrupted")
    pytest_session = options.get("pytest_session")
    if pytest_session is not None:
        pytest_session.exitstatus = pytest.ExitCode.INTERRUPTED


def _finish(config: pytest.Config) -> None:
    """Run the session's finish once; a tripped gate fails the session (exit status 1)."""
    options = config.stash.get(_KEY, None)
    if options is None or options.get("session") is None or options.get("finished"):
        return
    options["finished"] = True
    session = options["session"]
    if options["bench_options"].disabled or options["child"]:
        return
    from perflab.errors import PerflabError

    try:
        tripped = session.finish()
    except PerflabError as exc:
        tell(f"error: {exc}")
        tripped = 2
    except KeyboardInterrupt:  # Ctrl-C after the tests: what was measured is kept
        _interrupted(options, session)
        return
    pytest_session = options.get("pytest_session")
    if tripped and pytest_session is not None and pytest_session.exitstatus == 0:
        pytest_session.exitstatus = tripped


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Remember the session, so the gate can set its exit status."""
    options = session.config.stash.get(_KEY, None)
    if options is not None:
        options["pytest_session"] = session
