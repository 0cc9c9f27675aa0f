"""Compatibility with pytest-benchmark: its options and marker mapped onto perflab's.

When pytest-benchmark is not installed, a suite written for it (``benchmark`` fixture,
``@pytest.mark.benchmark(group=…)``, ``--benchmark-autosave`` / ``--benchmark-compare``
/ ``--benchmark-compare-fail=mean:5%``) runs under perflab. What is mapped and what is
not is listed in docs/pytest.md; an option that is not mapped is not registered, so
pytest stops with its usual "unrecognized arguments" line instead of ignoring it.
"""

from __future__ import annotations

import importlib.util
import shutil
from typing import Any

import pytest

from perflab.errors import UsageError

#: pytest-benchmark installed: it owns ``benchmark``, its marker and the ``--benchmark-*``
#: options (perflab then reads none of them: they are pytest-benchmark's, with its types)
HAS_PYTEST_BENCHMARK = importlib.util.find_spec("pytest_benchmark") is not None

#: the marker keys of pytest-benchmark that perflab accepts but does not use (its
#: harness decides rounds, warmup, timer and GC handling itself)
IGNORED_MARKER_KEYS = frozenset(
    {
        "min_time",
        "min_rounds",
        "timer",
        "disable_gc",
        "warmup",
        "warmup_iterations",
        "calibration_precision",
        "cprofile",
    }
)

#: sampling time of one repetition, s: half of ``perflab run``'s per-process time, so that
#: a test's small budget still holds several repetitions (the CI is formed over them)
PROCESS_SECONDS = 0.05
#: warmup bound of one repetition, s (``perflab run``: 0.25 s): repetitions after the first
#: run in a process that is already warm, and a small budget should go to repetitions
WARMUP_MAX_S = 0.05
#: ``--perflab-max-rss``: the child pytests' RSS read every this many s (``run --memory``'s
#: default interval); the gate judges the kernel's high-water mark, read as each ends
MEMORY_INTERVAL_S = 0.01


def add_benchmark_options(parser: pytest.Parser) -> None:
    """Register pytest-benchmark's mapped options (only when it is not installed)."""
    group = parser.getgroup(
        "perflab-benchmark", "pytest-benchmark options, mapped by perflab (docs/pytest.md)"
    )
    group.addoption("--benchmark-only", action="store_true", help="as --perflab-only")
    group.addoption("--benchmark-skip", action="store_true", help="as --perflab-skip")
    group.addoption("--benchmark-disable", action="store_true", help="as --perflab-disable")
    group.addoption(
        "--benchmark-max-time",
        metavar="SECONDS",
        help="as --perflab-budget (seconds per benchmark)",
    )
    group.addoption(
        "--benchmark-json",
        metavar="PATH",
        help="as --perflab-json (perflab's results format, not pytest-benchmark's)",
    )
    group.addoption("--benchmark-autosave", action="store_true", help="as --perflab-save")
    group.addoption(
        "--benchmark-compare",
        nargs="?",
        const="last",
        metavar="last|FILE",
        help="as --perflab-compare (a perflab results file; run numbers of "
        ".benchmarks/ are not mapped)",
    )
    group.addoption(
        "--benchmark-compare-fail",
        metavar="EXPR",
        action="append",
        help="e.g. mean:5%%: fail when a benchmark is slower beyond 5%% "
        "(perflab compares medians with CIs, whatever the field)",
    )


def _opt(config: pytest.Config, name: str) -> Any:
    """An option's value, None when it is not registered, or when it is one of
    pytest-benchmark's and pytest-benchmark itself is installed (its option: not ours to
    read; ``--benchmark-json`` is then its file, not perflab's)."""
    if HAS_PYTEST_BENCHMARK and name.startswith("benchmark_"):
        return None
    return config.getoption(name, default=None)


def parse_compare_fail(exprs: list[str]) -> float:
    """``FIELD:PCT%`` expressions of ``--benchmark-compare-fail`` → the noise threshold
    (the smallest percentage given; 0.05 for 5%).

    Raises:
        UsageError: an absolute threshold (``min:0.001``) or a malformed expression.
    """
    values = []
    for expr in exprs:
        field, _, pct = expr.partition(":")
        if field not in {"min", "max", "mean", "median", "stddev", "iqr"} or not pct.endswith("%"):
            raise UsageError(
                f"--benchmark-compare-fail {expr}: perflab maps only "
                "FIELD:PCT% (e.g. mean:5%); absolute thresholds are not "
                "mapped, use --perflab-threshold"
            )
        try:
            values.append(float(pct[:-1]) / 100)
        except ValueError:
            raise UsageError(
                f"--benchmark-compare-fail {expr}: {pct!r} is not a percentage"
            ) from None
    return min(values)


def merged_options(config: pytest.Config) -> dict[str, Any]:
    """perflab's and pytest-benchmark's options as one checked set.

    Returns:
        only, skip, disable (bools); settings (:class:`perflab.engines.run.runner.Settings`);
        json (path or None); save (bool); gate (:class:`GateOptions`).

    Raises:
        UsageError: a bad precision, budget, threshold or verdict; both --X-only and
            --X-skip.
    """
    from dataclasses import replace

    from perflab.analyze.decisions import parse_threshold
    from perflab.commands.run import parse_precision
    from perflab.engines.run.runner import Settings
    from perflab.pytest_plugin.session import GateOptions
    from perflab.units import parse_positive_duration

    only = bool(_opt(config, "perflab_only") or _opt(config, "benchmark_only"))
    skip = bool(_opt(config, "perflab_skip") or _opt(config, "benchmark_skip"))
    if only and skip:
        raise UsageError("--perflab-only and --perflab-skip exclude each other; pick one")
    max_time = _opt(config, "benchmark_max_time")
    budget = (
        parse_positive_duration(f"{max_time}s", "--benchmark-max-time")
        if max_time
        else parse_positive_duration(_opt(config, "perflab_budget"), "--perflab-budget")
    )
    count = _opt(config, "perflab_count")
    if count and not shutil.which("valgrind"):
        from perflab.engines.callgrind import MISSING

        raise UsageError(MISSING.replace("--count", "--perflab-count"))
    max_rss = _max_rss(config, count)
    settings = Settings(
        precision=parse_precision(_opt(config, "perflab_precision")),
        budget_s=budget,
        process_seconds=PROCESS_SECONDS,
        warmup_max_s=WARMUP_MAX_S,
        count=count,
        memory_interval_s=MEMORY_INTERVAL_S if max_rss is not None else None,
    )
    compare = _opt(config, "perflab_compare") or _opt(config, "benchmark_compare")
    fail_on_text = _opt(config, "perflab_fail_on") or ""
    threshold = parse_threshold(_opt(config, "perflab_threshold"))
    compare_fail = _opt(config, "benchmark_compare_fail")
    if compare_fail:
        threshold = parse_compare_fail(compare_fail)
        fail_on_text = fail_on_text or "slower"
    settings = replace(settings, threshold=threshold)  # paired tests stop on the verdict
    if fail_on_text and not compare:
        raise UsageError("--perflab-fail-on needs --perflab-compare (the results to compare with)")
    fail_on: list[str] = []
    if fail_on_text:  # numpy comes with the comparison: imported only when one is asked
        from perflab.analyze.compare.suite import parse_fail_on

        fail_on = parse_fail_on(fail_on_text)
    return {
        "only": only,
        "skip": skip,
        "disable": bool(_opt(config, "perflab_disable") or _opt(config, "benchmark_disable")),
        "settings": settings,
        "json": _opt(config, "perflab_json") or _opt(config, "benchmark_json"),
        "save": bool(_opt(config, "perflab_save") or _opt(config, "benchmark_autosave")),
        "gate": GateOptions(compare, fail_on, threshold, max_rss),
    }


def _max_rss(config: pytest.Config, count: str | None) -> float | None:
    """``--perflab-max-rss``: the limit in bytes, or None without it.

    Raises:
        UsageError: not a size; no fresh processes to read a test's RSS from
            (``--perflab-processes 0``); with ``--perflab-count`` (the children run
            under Valgrind).
    """
    text = _opt(config, "perflab_max_rss")
    if not text:
        return None
    from perflab.units import parse_bytes

    limit = parse_bytes(text, "--perflab-max-rss")
    if count:
        raise UsageError(
            "--perflab-max-rss reads a timed child's RSS; under --perflab-count the "
            "children run in Valgrind: drop one of them"
        )
    if not (_opt(config, "perflab_processes") or 0) > 0:
        raise UsageError(
            "--perflab-max-rss reads each test's RSS peak from its own fresh child "
            "pytests: add --perflab-processes N (e.g. 3); in the pytest process one "
            "test's memory can't be told from another's"
        )
    return limit


def marker_settings(node: pytest.Item) -> tuple[str, bool, float | None]:
    """(group, baseline, budget in s or None) from the test's ``perflab`` marker and, when
    pytest-benchmark is absent, its ``benchmark`` marker (``group``, ``max_time``).

    Raises:
        UsageError: a marker key perflab does not know.
    """
    group, baseline, budget = "", False, None
    bench_marker = None if HAS_PYTEST_BENCHMARK else node.get_closest_marker("benchmark")
    if bench_marker is not None:
        unknown = set(bench_marker.kwargs) - IGNORED_MARKER_KEYS - {"group", "max_time"}
        if unknown:
            raise UsageError(
                f"{node.name}: @pytest.mark.benchmark({', '.join(sorted(unknown))}"
                "=…) is not a pytest-benchmark option perflab knows"
            )
        group = str(bench_marker.kwargs.get("group") or "")
        if bench_marker.kwargs.get("max_time") is not None:
            budget = float(bench_marker.kwargs["max_time"])
    marker = node.get_closest_marker("perflab")
    if marker is not None:
        unknown = set(marker.kwargs) - {"group", "baseline"}
        if unknown or marker.args:
            raise UsageError(
                f"{node.name}: @pytest.mark.perflab takes group= and baseline= "
                f"only, not {sorted(unknown) or list(marker.args)}"
            )
        group = str(marker.kwargs.get("group") or group)
        baseline = bool(marker.kwargs.get("baseline", False))
    return group, baseline, budget
