"""Shared test helpers: synthetic results built without timing anything."""

from __future__ import annotations

import os
import socket
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


def make_bench(
    name: str,
    per_op_s: list[list[float]],
    group: str = "g",
    iterations: int = 100,
    **kwargs: object,
) -> Benchmark:
    """A python-engine Benchmark whose process i has samples with the given seconds per op."""
    processes = []
    for i, values in enumerate(per_op_s):
        samples = [
            Sample(iterations, int(round(v * iterations * 1e9)), int(v * iterations * 1e9))
            for v in values
        ]
        processes.append(
            Process(
                index=i,
                pid=1000 + i,
                started_s=float(i),
                iterations=iterations,
                cold_ns=5000,
                loop_overhead_ns=10.0,
                timer_error_ns=50.0,
                samples=samples,
            )
        )
    return Benchmark(name=name, group=group, processes=processes, **kwargs)  # type: ignore[arg-type]


def lognormal_groups(
    median: float,
    processes: int,
    samples: int,
    sigma: float = 0.02,
    between: float = 0.005,
    seed: int = 0,
) -> list[list[float]]:
    """Per-process samples: lognormal noise within, a per-process offset between processes."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(processes):
        centre = median * np.exp(rng.normal(0, between))
        out.append(list(centre * np.exp(rng.normal(0, sigma, samples))))
    return out


def debian_tool(name: str) -> str:
    """The path of a Debian package's program that `make test`'s system-deps installs
    (chromium, hyperfine), or a skip saying why it can't be there (not root: apt-get
    can't run), or a failure when make, as root, should have installed it."""
    import shutil

    found = shutil.which(name)
    if found:
        return found
    if os.geteuid() != 0:
        pytest.skip(
            f"{name} is not installed and make could not install it: apt-get needs "
            f"root (run make test as root, or apt-get install {name})"
        )
    pytest.fail(
        f"{name} is missing although make runs as root: the Makefile's system-deps "
        "step should have installed it"
    )


@pytest.fixture
def perflab_cli():
    """Run the real entry point: ``python -m perflab ARGS`` → CompletedProcess."""
    import subprocess

    def run(*args: str, timeout: float = 120, cwd: Path | None = None, **kw: object):
        return subprocess.run(
            [sys.executable, "-m", "perflab", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=cwd,
            **kw,
        )  # type: ignore[call-overload]

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

    return subprocess.Popen(
        [sys.executable, "-m", "perflab", *args], preexec_fn=_sigint_default, **kwargs
    )  # type: ignore[call-overload]


@pytest.fixture(autouse=True, scope="session")
def _private_history(tmp_path_factory):  # type: ignore[no-untyped-def]
    """Every perflab the tests start records into a history database of this session
    (never the repository's .perflab/history.sqlite), module-scoped fixtures included;
    tests of history itself pass --history or set PERFLAB_HISTORY again."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PERFLAB_HISTORY", str(tmp_path_factory.mktemp("history") / "history.sqlite"))
        yield


def free_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_args(*argv: str):  # type: ignore[no-untyped-def]
    """``perflab http ARGV`` parsed as the command parses it: an argparse Namespace."""
    import argparse

    from perflab.commands import http

    parser = argparse.ArgumentParser()
    http.add_arguments(parser)
    return parser.parse_args(list(argv))


def agents_results(name: str, merged, agents: list):  # type: ignore[no-untyped-def]
    """A distributed ``http`` results model of one ``merged`` step (a
    :class:`perflab.model.HttpStep` with its shares) run by ``agents``
    (:class:`perflab.model.cluster.AgentInfo`), as ``perflab http --agents`` saves it."""
    from perflab.model import Benchmark, Results

    return Results(
        kind="http",
        command_line=["perflab"],
        created="",
        perflab_version="x",
        environment={},
        settings={"ok": "200-299"},
        benchmarks=[Benchmark(name=name, kind="http", steps=[merged])],
        agents=agents,
    )


@pytest.fixture
def load_agents():  # type: ignore[no-untyped-def]
    """Run load agents at once in threads, as Ray would in processes:
    ``load_agents(url, agents, rate, duration_s, weights=None)`` → each agent's answer
    to ``LoadAgent.run_step`` (a dict; ``["raw"]["steps"][0]`` is its step), in agent
    order. One open-loop step of ``rate``/s for ``duration_s`` s, no warmup, one engine
    thread each, split by ``weights`` (None: evenly); every agent waits for one start
    instant 0.2 s ahead. An agent's exception is raised here, after every thread ended."""
    import threading
    import time

    from perflab.engines.http.cluster.agent import LoadAgent
    from perflab.engines.http.cluster.split import split_step
    from perflab.engines.http.engine import make_plan

    def run(
        url: str, agents: int, rate: float, duration_s: float, weights: list[float] | None = None
    ) -> list[dict]:
        plan = make_plan(url, duration_s, 0.0, [rate], threads=1)
        start = time.time_ns() + 200_000_000
        configs = [
            {**c, "start_unix_ns": start} for c in split_step(plan.step_config(0), agents, weights)
        ]
        out: list[dict] = [{}] * agents
        failed: list[BaseException] = []

        def one(k: int) -> None:
            try:
                out[k] = LoadAgent(k).run_step(configs[k])
            except BaseException as exc:  # re-raised in the test's thread
                failed.append(exc)

        threads = [threading.Thread(target=one, args=(k,)) for k in range(agents)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if failed:
            raise failed[0]
        return out

    return run


#: How long the test process may take to exit after its last test before it is called hung.
EXIT_WATCH_S = 600


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """Name what would keep the test process from exiting, and never let it hang.

    Python waits at exit for every non-daemon thread. One left running by a test or a
    library (Ray's driver, an executor) would hang ``make test`` after its summary with
    no word of why. This names each such thread with its stack on stderr, and arms
    :func:`faulthandler.dump_traceback_later`: a process still alive ``EXIT_WATCH_S``
    seconds later prints every thread's stack and exits with status 1.
    """
    import faulthandler
    import threading
    import traceback

    frames = sys._current_frames()
    for thread in threading.enumerate():
        if thread is threading.main_thread() or thread.daemon:
            continue
        frame = frames.get(thread.ident or 0)
        stack = "".join(traceback.format_stack(frame)[-8:]) if frame is not None else ""
        what = f"thread {thread.name!r}"
        if isinstance(thread, threading.Timer):  # its stack shows only the wait
            what += f", a Timer of {thread.interval} s calling {thread.function!r}"
        print(f"\nstill running at exit: {what}\n{stack}", file=sys.__stderr__)
    faulthandler.dump_traceback_later(EXIT_WATCH_S, exit=True, file=sys.__stderr__)
