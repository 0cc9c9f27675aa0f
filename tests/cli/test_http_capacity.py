"""Achieved never exceeds what the server served (issue 11): ``perflab http`` against
``perflab serve --serialize``, offered 0.5×, 1.5× and 3× the server's capacity, in
steps of 1, 2 and 5 s.

Why these numbers:

* ``--serialize 5ms``: one global lock held 5 ms per request, so the server completes at
  most one response per 5 ms: a capacity of at most 200/s, whatever the machine. Small
  enough that the whole module offers at most 600 requests/s.
* A closed-loop run (``--connections 16``: 80 ms of queue at the lock) before each sweep
  never exceeds that limit either; it is shown beside the steps when a check fails.
* Achieved ≤ the lock's capacity: ``ok_responses ≤ window / 5 ms + 1``, which the lock
  makes a certainty whatever the machine's speed; the steps offer 0.5×, 1.5× and 3× the
  lock's 200/s, not a measured capacity (a busy machine measured 66/s once, and loads
  scaled from that were no overload). The closed-loop runs check only the same
  certainty (≤ the lock's limit); how close they come to it is a benchmark's question.
* ``--timeout 1s`` bounds each overloaded step's drain to 1 s.
* A fresh server for each sweep: the lock keeps
  serving the requests of clients that timed out and left, so an overloaded step leaves
  seconds of backlog behind it, which the next run would otherwise meet.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from perflab import _core, model
from perflab.analyze.http import engine_busy, saturation_reasons, server_bound, summarize_steps

SERIALIZE_S = 0.005
LOADS = (0.5, 1.5, 3.0)


@contextmanager
def serve() -> Iterator[str]:
    """``perflab serve --serialize 5ms`` (its native server, in this process) on a free
    port; yields its URL."""
    config = {"host": "127.0.0.1", "port": 0, "serialize": f"{SERIALIZE_S * 1e3:g}ms"}
    with _core.serve(config) as server:
        yield f"http://{server.address}/"


def http(url: str, out: Path, *args: str) -> model.Results:
    """One ``perflab http`` run (one engine thread, quiet); its results."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "perflab",
            "http",
            url,
            "--threads",
            "1",
            "--quiet",
            "--json",
            str(out),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return model.load(out)


def closed_loop_rate(url: str, out: Path) -> float:
    """The server's closed-loop throughput, responses/s (16 connections, 2 s). Its verdict
    is not asserted: 80 ms of queue drain in about 5% of the window, the rule's limit."""
    results = http(url, out, "--connections", "16", "--duration", "2s")
    (summary,) = summarize_steps(results.benchmarks[0].steps)
    # Never above the lock's limit (1% for the window's edges); how far below it a run
    # comes depends on how busy the machine is (66/s seen once), so it is not asserted.
    assert summary.achieved_rate <= 1.01 / SERIALIZE_S
    return summary.achieved_rate


@pytest.fixture(scope="module")
def capacities(tmp_path_factory: pytest.TempPathFactory) -> list[float]:
    """The closed-loop measurements so far (each test adds its own)."""
    with serve() as url:
        return [closed_loop_rate(url, tmp_path_factory.mktemp("capacity") / "closed.json")]


@pytest.mark.parametrize("duration", ["1s", "2s", "5s"])
def test_achieved_never_exceeds_the_closed_loop_capacity(
    capacities: list[float], tmp_path: Path, duration: str
) -> None:
    # The loads are fractions of what the lock allows (200/s), a certainty on any machine;
    # a closed-loop measurement on a busy machine can come out at a third of it (66/s
    # seen), and loads scaled from it were then no overload at all.
    lock_rps = 1 / SERIALIZE_S
    with serve() as url:
        # A closed loop leaves at most 16 requests (80 ms) behind: the sweep may follow.
        capacities.append(closed_loop_rate(url, tmp_path / "before.json"))
        rates = ",".join(f"{load * lock_rps:.0f}" for load in LOADS)
        results = http(
            url, tmp_path / "sweep.json", "--rate", rates, "--duration", duration, "--timeout", "1s"
        )
    steps = results.benchmarks[0].steps
    summaries = summarize_steps(steps)
    table = json.dumps(
        {
            "capacities": capacities,
            "steps": [
                (s.label, round(s.achieved_rate), s.drained, s.unsent, s.verdict, s.reasons)
                for s in summaries
            ],
        }
    )
    for step, s in zip(steps, summaries):
        # Achieved counts only what the server served: never above the lock's capacity
        # (one response more at an edge of the window), however overloaded the step.
        assert step.ok_responses <= step.elapsed_s / SERIALIZE_S + 1, table
        assert s.achieved_rate <= lock_rps + 1 / step.elapsed_s, table
        # and never above the offered rate (one edge response again)
        assert s.achieved_rate <= s.offered_rate + 1 / step.elapsed_s, table
    light, *overloaded = summaries
    for s in overloaded:
        # The lock makes these steps overloaded on any machine: achieved < 95% of offered,
        # so the server's side always shows saturation. The verdict is "saturated" unless
        # perflab itself fell behind beyond what the backlog explains (a machine so busy
        # that the engine thread is CPU-bound or dispatches late): then "generator-limited",
        # by the rule's stated precedence, never "ok".
        assert saturation_reasons(s), table
        assert s.verdict == "saturated" or (
            s.verdict == "generator-limited" and not server_bound(s)
        ), table
    # The light step is ok. On a machine that other programs keep busy, perflab's timer
    # can wake a few ms late once in a hundred requests: it then says so (generator-
    # limited, "sent late") rather than ok; the server's side must still be clean.
    # (a perflab that sent late also leaves fewer requests inside the step's window, so an
    # achieved share under 95% is then perflab's doing: seen at load 10, p99 send lag 55 ms)
    assert light.verdict == "generator-limited" or not saturation_reasons(light), table
    assert light.verdict == "ok" or (
        light.verdict == "generator-limited"
        and not engine_busy(light)
        and all("sent late" in r for r in light.reasons)
    ), table
    # The capacity estimate comes from the ok step only: never "at least" the offered
    # overload, as the repro printed.
    assert "at least" not in _capacity_line(tmp_path / "sweep.json")


def _capacity_line(path: Path) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "perflab", "show", str(path), "--format", "markdown"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    (line,) = [x for x in proc.stdout.splitlines() if "capacity estimate" in x]
    return line
