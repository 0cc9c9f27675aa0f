"""`perflab run`'s per-sample counters on the real kernel.

A preempted sample is made certain without any timing: the benchmark's setup pins its
worker to one CPU and forks a competitor pinned to the same CPU, spinning; each call
returns only once it has seen the competitor's counter move, which the competitor can
only move after the scheduler switched the worker out while it could run (an involuntary
context switch). So every sample is preempted, however fast or busy the machine.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from perflab import _core

FAST = [
    "--budget",
    "1.5s",
    "--min-processes",
    "1",
    "--max-processes",
    "1",
    "--process-time",
    "20ms",
    "--no-alloc",
]

COMPETITOR = """
import mmap
import os
import time

import perflab


def competitor():
    cpu = min(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})
    shared = mmap.mmap(-1, 8)
    parent = os.getpid()
    if os.fork() == 0:  # the child inherits the one-CPU affinity
        i = 0
        while os.getppid() == parent:
            for _ in range(1000):
                i += 1
                shared[:8] = i.to_bytes(8, "little")
        os._exit(0)
    return shared


@perflab.bench(setup=competitor)
def preempted(shared):
    seen = bytes(shared[:8])
    deadline = time.monotonic() + 60
    while bytes(shared[:8]) == seen:
        if time.monotonic() > deadline:
            raise RuntimeError("the competitor never ran")
"""

PLAIN = """
import perflab


@perflab.bench()
def total():
    return sum(range(1000))
"""


def run(tmp_path: Path, perflab_cli, body: str, *more: str) -> tuple[str, dict]:  # type: ignore[no-untyped-def]
    bench = tmp_path / "bench.py"
    bench.write_text(textwrap.dedent(body))
    out = tmp_path / "r.json"
    result = perflab_cli("run", str(bench), "--json", str(out), *FAST, "--quiet", *more)
    assert result.returncode == 0, result.stderr
    return result.stdout, json.loads(out.read_text())


def samples(data: dict) -> list[dict]:
    return [s for b in data["benchmarks"] for p in b["processes"] for s in p["samples"]]


def test_a_sample_preempted_by_a_competitor_on_its_cpu_is_named(
    tmp_path: Path, perflab_cli
) -> None:  # type: ignore[no-untyped-def]
    stdout, data = run(tmp_path, perflab_cli, COMPETITOR, "--verbose")  # notes in full
    got = samples(data)
    assert got and all(s["counters"]["involuntary_switches"] >= 1 for s in got)
    # every sample of the process was preempted: too few clean ones to exclude them, so
    # they are kept, and the table says so
    assert not any(s.get("flagged") for s in got)
    text = " ".join(stdout.split())  # the console wraps long footnotes
    assert "K preempted samples kept" in text, stdout  # the code's legend
    assert f"{len(got)} of {len(got)} samples preempted, kept" in text, stdout
    summary = data["benchmarks"][0]["summary"]
    assert summary["preempted"] == len(got) and summary["preempted_excluded"] == 0


HARDWARE = _core.PerfCounters().hardware_note


@pytest.mark.skipif(HARDWARE is not None, reason=f"no hardware counters here: {HARDWARE}")
def test_instructions_per_op_and_ipc_where_the_kernel_has_a_pmu(
    tmp_path: Path, perflab_cli
) -> None:  # type: ignore[no-untyped-def]
    stdout, data = run(tmp_path, perflab_cli, PLAIN)
    assert all(s["counters"].get("instructions", 0) > 0 for s in samples(data))
    summary = data["benchmarks"][0]["summary"]
    assert summary["instructions_per_op"] > 0 and summary["ipc"] > 0
    header = next(line for line in stdout.splitlines() if "time/op" in line)
    assert "instr/op" in header and "IPC" in header


@pytest.mark.skipif(HARDWARE is None, reason="this kernel has hardware counters")
def test_without_hardware_counters_one_line_says_so_and_no_column_shows(
    tmp_path: Path, perflab_cli
) -> None:  # type: ignore[no-untyped-def]
    stdout, data = run(tmp_path, perflab_cli, PLAIN)
    assert " ".join(stdout.split()).count("hardware counters unavailable: ") == 1, stdout
    header = next(line for line in stdout.splitlines() if "time/op" in line)
    assert "instr/op" not in header and "IPC" not in header
    assert not any("instructions" in s["counters"] for s in samples(data))
    summary = data["benchmarks"][0]["summary"]
    assert summary["instructions_per_op"] is None and summary["ipc"] is None
