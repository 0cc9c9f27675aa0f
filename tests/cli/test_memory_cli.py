"""`perflab run --memory` and `perflab cmd --memory` through the real entry point.

Sizes are asserted with generous bounds (the interpreter's own memory varies by build);
what must hold is the order of things: a tree of two processes sums both, wait4's max
RSS does not; a leaking benchmark reads "growing", the others "flat".
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from perflab.engines.cmd.spawn import PosixSpawner

ALLOC = f"{sys.executable} -c \"b = b'x' * 40_000_000; import time; time.sleep(0.3)\""
WORKLOADS = Path(__file__).parents[1] / "engines" / "run" / "data" / "leak_workloads.py"


def test_cmd_memory_sums_the_tree_where_wait4_reports_the_largest_process(
    tmp_path: Path, perflab_cli
) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "c.json"
    result = perflab_cli(
        "cmd",
        "--shell",
        "--memory",
        "--runs",
        "2",
        "--quiet",
        "--json",
        str(out),
        f"{ALLOC} & {ALLOC}; wait",
    )
    assert result.returncode == 0, result.stderr
    assert "RSS peak (tree)" in result.stdout and "RSS growth" in result.stdout
    run = [r for r in json.loads(out.read_text())["benchmarks"][0]["runs"] if not r["warmup"]][0]
    assert 40e6 <= run["max_rss_bytes"] < 70e6  # the largest single process
    assert run["tree_rss_peak_bytes"] >= 80e6  # both of them, summed
    assert len(run["memory"]["t_s"]) == len(run["memory"]["rss_bytes"]) > 5


def test_cmd_memory_does_not_miss_a_short_lived_child_that_allocates(
    tmp_path: Path, perflab_cli
) -> None:  # type: ignore[no-untyped-def]
    """A shell whose child touches 60 MB and exits within ~0.1 s, between two scans of
    /proc: found among the new pids at the next reading, and wait4's max RSS (the
    largest process) floors the tree's peak if it lived between two readings."""
    child = f'{sys.executable} -c "b = bytearray(60_000_000); b[::4096] = bytes(len(b[::4096]))"'
    out = tmp_path / "c.json"
    result = perflab_cli(
        "cmd",
        "--shell",
        "--memory",
        "--runs",
        "2",
        "--quiet",
        "--json",
        str(out),
        f"sleep 0.12; {child}; sleep 0.2",
    )
    assert result.returncode == 0, result.stderr
    runs = [r for r in json.loads(out.read_text())["benchmarks"][0]["runs"] if not r["warmup"]]
    assert all(r["tree_rss_peak_bytes"] >= 60e6 for r in runs), runs


def test_sampling_waits_for_the_exit_not_for_the_next_reading() -> None:
    """With readings 10 minutes apart, a command of a few ms still ends within a minute:
    the helper wakes on SIGCHLD. Waiting for the next reading would take 600 s, so the
    60 s bound (all a busy machine's start-up needs) tells the two apart by 10x."""
    spawner = PosixSpawner(memory_interval_s=600.0)
    try:
        started = time.monotonic()
        outcome = spawner.run(["/bin/true"], None)
    finally:
        spawner.close()
    assert outcome.error == "" and outcome.exit_code == 0
    assert outcome.wall_ns < 60e9 and time.monotonic() - started < 60
    assert outcome.memory == ([], [])


def test_run_memory_flags_the_leak_and_not_the_flat_benchmark(tmp_path: Path, perflab_cli) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "r.json"
    result = perflab_cli(
        "run",
        str(WORKLOADS),
        "--memory",
        "--filter",
        "leak_bytes",
        "--filter",
        "flat_list",
        "--min-processes",
        "3",
        "--max-processes",
        "3",
        "--process-time",
        "30ms",
        "--no-alloc",
        "--quiet",
        "--seed",
        "1",
        "--json",
        str(out),
    )
    assert result.returncode == 0, result.stderr
    rows = {
        line.split()[0]: line
        for line in result.stdout.splitlines()
        if line.strip().startswith(("leak_bytes", "flat_list")) and "MB" in line
    }
    assert rows["leak_bytes"].rstrip().endswith("growing"), result.stdout
    assert rows["flat_list"].rstrip().endswith("flat"), result.stdout
    assert "warning: memory grows with calls in leak_bytes" in result.stdout.replace("\n", " ")
    proc = json.loads(out.read_text())["benchmarks"][0]["processes"][0]
    assert proc["rss_end_bytes"] > proc["rss_start_bytes"] and proc["rss_calls"] > 0
    assert proc["rss_peak_bytes"] >= proc["rss_end_bytes"] and proc["memory"]["t_s"]
