"""Shared test helpers: synthetic results built without timing anything."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

from perflab.model import Benchmark, Process, Sample

ROOT = Path(__file__).resolve().parents[1]
#: pytester runs inner pytest sessions for the plugin's tests (tests/pytest_plugin)
pytest_plugins = ["pytester"]
# The suite may run inside a GitHub Actions step: its tables are not the job's summary.
os.environ.pop("GITHUB_STEP_SUMMARY", None)
# Tests of content read whole lines: print at 200 columns (the width policy itself is
# tested at 80-200 columns by tests/golden and tests/report/test_console.py).
os.environ["COLUMNS"] = "200"


def make_bench(name: str, per_op_s: list[list[float]], group: str = "g", iterations: int = 100,
               **kwargs: object) -> Benchmark:
    """A python-engine Benchmark whose process i has samples with the given seconds per op."""
    processes = []
    for i, values in enumerate(per_op_s):
        samples = [Sample(iterations, int(round(v * iterations * 1e9)), int(v * iterations * 1e9))
                   for v in values]
        processes.append(Process(index=i, pid=1000 + i, started_s=float(i), iterations=iterations,
                                 cold_ns=5000, loop_overhead_ns=10.0, timer_error_ns=50.0,
                                 samples=samples))
    return Benchmark(name=name, group=group, processes=processes, **kwargs)  # type: ignore[arg-type]


def lognormal_groups(median: float, processes: int, samples: int, sigma: float = 0.02,
                     between: float = 0.005, seed: int = 0) -> list[list[float]]:
    """Per-process samples: lognormal noise within, a per-process offset between processes."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(processes):
        centre = median * np.exp(rng.normal(0, between))
        out.append(list(centre * np.exp(rng.normal(0, sigma, samples))))
    return out


@pytest.fixture
def perflab_cli():
    """Run the real entry point: ``python -m perflab ARGS`` → CompletedProcess."""
    import subprocess

    def run(*args: str, timeout: float = 120, cwd: Path | None = None, **kw: object):
        return subprocess.run([sys.executable, "-m", "perflab", *args], capture_output=True,
                              text=True, timeout=timeout, cwd=cwd, **kw)  # type: ignore[call-overload]

    return run


def _sigint_default() -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def popen_perflab(args: list[str], **kwargs: object):  # type: ignore[no-untyped-def]
    """Start ``python -m perflab ARGS`` as a user's terminal would: with SIGINT at its default.

    A background job of a non-interactive shell (how CI may start the suite) inherits
    SIGINT ignored, and Python then never turns Ctrl-C into KeyboardInterrupt; the
    Ctrl-C tests need the real behaviour, so the child gets SIG_DFL back before exec.
    """
    import subprocess

    return subprocess.Popen([sys.executable, "-m", "perflab", *args],
                            preexec_fn=_sigint_default, **kwargs)  # type: ignore[call-overload]


@pytest.fixture(autouse=True, scope="session")
def _private_history(tmp_path_factory):  # type: ignore[no-untyped-def]
    """Every perflab the tests start records into a history database of this session
    (never the repository's .perflab/history.sqlite), module-scoped fixtures included;
    tests of history itself pass --history or set PERFLAB_HISTORY again."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PERFLAB_HISTORY", str(tmp_path_factory.mktemp("history")
                                            / "history.sqlite"))
        yield
