"""Deep recursion under ``perflab.trace`` behaves as it does untraced (issue 33, class 4).

Each case runs in a subprocess, so a crash (SIGSEGV, exit 139) is a failed test, not a
dead pytest. Outcomes are exit codes and counts: nothing depends on the machine's speed.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from perflab import _core
from tests.reliability.deep_program import DEEP_PROGRAM

MAX_DEPTH = _core.trace_dropped()[0]


def _run(mode: str, depth: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", DEEP_PROGRAM, mode, str(depth)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.mark.parametrize("depth", [20_000, 35_000, 50_000])
@pytest.mark.parametrize("mode", ["traced", "blocks"])
def test_deep_recursion_survives_and_counts_dropped(mode: str, depth: int) -> None:
    """Plain Python survives these depths; so must the traced program (it segfaulted)."""
    plain = _run("plain", depth)
    assert plain.returncode == 0, plain.stderr[-500:]
    done = _run(mode, depth)
    assert done.returncode == 0, done.stderr[-500:]
    result, dropped = done.stdout.split()
    assert int(result) == depth
    calls = depth + 1 if mode == "traced" else depth
    assert int(dropped) == calls - MAX_DEPTH


def test_beyond_the_recursion_limit_raises_recursion_error_not_a_crash() -> None:
    """Past the raised limit plain Python raises RecursionError: so does the traced one."""
    for mode in ("plain", "traced"):
        done = _run(mode, 120_000)
        assert done.returncode == 0, (mode, done.returncode, done.stderr[-500:])
        assert done.stdout.split()[0] == "RecursionError"


def test_a_deep_chain_of_context_spans_is_freed_without_recursion() -> None:
    """100,000 ContextVar spans left open are freed one by one (the drop recursed)."""
    done = _run("by_hand", 100_000)
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stdout.split()[0] == "100000"


def test_spans_within_the_bound_are_all_recorded() -> None:
    """Below the bound nothing is dropped and every call is a span."""
    done = _run("traced", MAX_DEPTH - 1)
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stdout.split() == [str(MAX_DEPTH - 1), "0"]


def test_a_trace_file_reports_the_dropped_spans() -> None:
    """The dump keeps the bound and the dropped count; ``perflab show`` says so."""
    from perflab.report.trace_table import trace_table
    from perflab.trace.results import build

    settings = build().settings
    assert settings["max_depth"] == MAX_DEPTH
    assert settings["dropped_spans"] >= 0
    results = build()
    results.settings["dropped_spans"] = 12_345
    notes = "\n".join(trace_table(results).footnotes)
    assert f"12,345 spans opened deeper than {MAX_DEPTH:,}" in notes
