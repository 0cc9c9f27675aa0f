"""Achieved never exceeds what the server served (issue 11): ``perflab http`` against
``perflab serve --serialize``, offered 0.5×, 1.5× and 3× the closed-loop capacity, in
steps of 1, 2 and 5 s.

Why these numbers:

* ``--serialize 5ms``: one global lock held 5 ms per request, so the server completes at
  most one response per 5 ms: a capacity of at most 200/s, whatever the machine. Small
  enough that the whole module offers at most 600 requests/s and runs in about 55 s; long
  enough beside the per-request overhead (~0.1 ms of lock hand-over and timer wake-up)
  that the closed-loop measurement comes within about 2% of 200/s.
* The capacity is measured as ``perflab http --connections 16`` (closed loop): 16
  requests queued at the lock are 80 ms of work, so the lock stays taken even when
  perflab's thread waits tens of ms for a CPU (with 4 connections, 15 ms of queue, a
  machine at load 5 measured 168-184/s in closed loop against 192/s in open loop, whose
  queue is deep). The server's own thread also waits for a CPU now and then while it
  holds the lock, so one measurement can still come out several % low on a busy machine,
  and noise only ever slows a server down: the capacity is the best of the closed-loop
  runs made so far (one at the start, then one right before each sweep on its server and
  one right after it on a fresh server).
* ``achieved ≤ 1.02 × capacity``: the issue's bound. An open-loop step at any load is
  served by the same lock, so it cannot complete responses faster than the closed loop
  did, give or take one response at each edge of its window (at most 5 ms / 0.8 s =
  0.6%) and the noise of the overhead between the two runs. Stricter and noise-free:
  ``ok_responses ≤ window / 5 ms + 1``, which the lock makes a certainty.
* ``--timeout 1s`` bounds each overloaded step's drain to 1 s.
* A fresh server for each sweep (and for the measurement after it): the lock keeps
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
from perflab.analyze.http import engine_busy, saturation_reasons, summarize_steps

SERIALIZE_S = 0.005
#: The issue's bound on achieved ÷ the closed-loop capacity (see the module docstring).
CAPACITY_SLACK = 1.02
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
    # Never above the lock's limit. One run can come out far below it when another
    # program hogs the machine (66/s seen once): the best of the runs is used.
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
    with serve() as url:
        # A closed loop leaves at most 16 requests (80 ms) behind: the sweep may follow.
        capacities.append(closed_loop_rate(url, tmp_path / "before.json"))
        rates = ",".join(f"{load * max(capacities):.0f}" for load in LOADS)
        results = http(
            url, tmp_path / "sweep.json", "--rate", rates, "--duration", duration, "--timeout", "1s"
        )
    with serve() as url:
        capacities.append(closed_loop_rate(url, tmp_path / "after.json"))
    capacity = max(capacities)
    # The best measurement came near the lock's limit (else the bound below means little).
    assert capacity > 0.8 / SERIALIZE_S, capacities
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
        assert s.achieved_rate <= CAPACITY_SLACK * capacity, table
        assert step.ok_responses <= step.elapsed_s / SERIALIZE_S + 1, table
    light, *overloaded = summaries
    assert [s.verdict for s in overloaded] == ["saturated", "saturated"], table
    # The light step is ok. On a machine that other programs keep busy, perflab's timer
    # can wake a few ms late once in a hundred requests: it then says so (generator-
    # limited, "sent late") rather than ok; the server's side must still be clean.
    assert not saturation_reasons(light), table
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
