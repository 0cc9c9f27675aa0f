"""perflab's /proc sampler (engines/memory.py) and run --memory's summaries and leak rule."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from perflab.analyze import memory as am
from perflab.engines import memory
from perflab.engines.run.backend import Outcome
from perflab.engines.run.runner import Runner, Settings
from perflab.engines.run.suite import BenchFile, BenchSpec, expand
from perflab.report.memory_table import memory_table, with_memory

ALLOCATE_20MB = (
    "b = bytearray(20_000_000); b[::4096] = b'x' * len(b[::4096]); import time; time.sleep(5)"
)


def test_a_tree_sums_the_resident_memory_of_a_command_and_its_children() -> None:
    """A shell whose child touches 20 MB: the root alone reads small, the tree ≥ 20 MB."""
    shell = subprocess.Popen(["sh", "-c", f'"{sys.executable}" -c "{ALLOCATE_20MB}"; :'])
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            tree = memory.Tree(shell.pid, children=True).read()
            if tree and tree[1] >= 20_000_000:
                break
            time.sleep(0.05)
        root = memory.read(shell.pid)
        assert root is not None and root[1] < 20_000_000
        assert tree is not None and tree[1] >= 20_000_000
        assert len(memory.descendants(shell.pid)) == 1
        assert memory.high_water(shell.pid) is not None
    finally:
        shell.kill()
        subprocess.run(["pkill", "-KILL", "-P", str(shell.pid)], check=False)
        shell.wait()
    assert memory.read(shell.pid) is None and memory.high_water(shell.pid) is None


#: a root that, on a line on stdin, starts a child which touches 40 MB, starts a thread,
#: says "ready" on stdout and waits for stdin to close
SPAWNS_ON_REQUEST = (
    "import subprocess, sys\n"
    "sys.stdin.readline()\n"
    "subprocess.run([sys.executable, '-c', 'import sys, threading; b = bytearray(40_000_000); "
    "b[::4096] = bytes(len(b[::4096])); threading.Thread(target=sys.stdin.read, daemon=True)"
    '.start(); print("ready", flush=True); sys.stdin.read()\'])\n'
)


def test_a_child_born_between_two_scans_is_in_the_next_reading(monkeypatch: Any) -> None:
    """Between full scans of /proc, the pids created since the last reading are checked:
    a child started after the scan counts at the very next reading (once: its thread,
    which the kernel numbers from the same pids, is not a process)."""
    scans = []
    full_scan = memory.descendants
    monkeypatch.setattr(memory, "descendants", lambda pid: scans.append(pid) or full_scan(pid))
    monkeypatch.setattr(memory, "NEW_PIDS_MAX", 100_000)  # a busy machine: no fallback scan
    root = subprocess.Popen(
        [sys.executable, "-c", SPAWNS_ON_REQUEST],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert root.stdin is not None and root.stdout is not None
        tree = memory.Tree(root.pid, children=True)
        first = tree.read()
        assert first is not None and first[1] < 40_000_000 and len(scans) == 1
        root.stdin.write("go\n")
        root.stdin.flush()
        assert root.stdout.readline() == "ready\n"
        reading = tree.read()
        assert len(scans) == 1  # no scan of /proc: found among the new pids
        assert reading is not None and reading[1] >= 40_000_000 + first[1]
        assert len(tree._members) == 2  # the root and its child; not the child's thread
    finally:
        root.kill()
        subprocess.run(["pkill", "-KILL", "-P", str(root.pid)], check=False)
        root.wait()


def test_the_sampler_keeps_a_timeline_that_stops_when_the_process_ends() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.3)"])
    with memory.Sampler({"c": memory.Tree(child.pid)}, interval_s=0.01) as sampler:
        child.wait()
        time.sleep(0.05)
    readings = sampler.timelines["c"]
    assert len(readings) >= 10
    t = [r[0] for r in readings]
    assert t == sorted(t) and max(r[2] for r in readings) > 1_000_000  # the first may be pre-exec
    as_json = memory.timeline_dict(readings)
    assert set(as_json) == {"t_s", "cpu_s", "rss_bytes"} and len(as_json["t_s"]) == len(t)


@pytest.mark.parametrize(
    "n, low_rank, level", [(10, 2, 1 - 2 * 11 / 1024), (20, 6, None), (5, 1, 1 - 2**-4)]
)
def test_median_ci_is_the_order_statistics_interval(
    n: int, low_rank: int, level: float | None
) -> None:
    values = list(range(1, n + 1))
    median, low, high, reached = am.median_ci(values)
    assert median == np.median(values)
    assert low == low_rank and high == n + 1 - low_rank
    assert reached >= 0.95 or n <= 5
    if level is not None:
        assert reached == pytest.approx(level)


def _noop() -> None:
    """A benchmark body (never called by the fake backend)."""


class GrowingBackend:
    """Fake workers whose RSS grows by ``per_call`` bytes a call, plus page-sized noise
    (``noise``), or by one ``step`` of bytes halfway through."""

    def __init__(self, per_call: dict[int, float], noise: bool = True, step: int = 0) -> None:
        self.per_call, self.rng = per_call, np.random.default_rng(0)
        self.noise, self.step = noise, step

    def run(
        self, plan: dict[str, Any], timeout_s: float, on_event: Callable[[dict[str, Any]], None]
    ) -> Outcome:
        assert plan["memory_interval_s"] == 0.01
        rss, events = 30_000_000.0, [{"event": "start", "pid": 1}]
        for i in range(20):
            rss += self.per_call[plan["index"]] * 1000 + (self.step if i == 10 else 0)
            rss += 4096 * self.rng.integers(-1, 2) if self.noise else 0
            events.append(
                {
                    "event": "sample",
                    "n": 1000,
                    "wall": 10**6,
                    "cpu": 10**6,
                    "gc": 0,
                    "gc_ns": 0,
                    "rss_bytes": int(rss),
                }
            )
        per_call = self.per_call[plan["index"]]
        events.append(
            {
                "event": "heap",
                "calls": [0, 500, 1000],
                "t_s": [0.0, 0.01, 0.02],
                "traced_bytes": [0, int(per_call * 500), int(per_call * 1000)],
                "peak_bytes": [0, int(per_call * 500) + 64, int(per_call * 1000) + 64],
            }
        )
        events.append({"event": "done", "rss_hwm_bytes": int(rss) + 8192})
        for ev in events:
            on_event(ev)
        return Outcome(
            events=events,
            wall_s=0.1,
            memory={"t_s": [0.0, 0.1], "cpu_s": [0.0, 0.1], "rss_bytes": [20_000_000, int(rss)]},
        )


def test_the_runner_folds_readings_into_processes_and_the_rule_flags_only_growth() -> None:
    """Deterministic: 100 B per call is flagged; a flat RSS with page noise is not."""
    specs = [BenchSpec(_noop, "leaks", "g"), BenchSpec(_noop, "flat", "g")]
    cases = expand(BenchFile(__file__, specs, []))  # type: ignore[arg-type]
    runner = Runner(
        __file__,
        cases,
        Settings(
            seed=1, min_processes=10, max_processes=10, precision=1e-9, memory_interval_s=0.01
        ),
        2e6,
        50.0,
        backend=GrowingBackend({0: 100.0, 1: 0.0}),
    )
    leaks, flat = runner.run()
    proc = leaks.processes[0]
    assert proc.rss_calls == 19_000 and proc.memory is not None
    assert proc.rss_peak_bytes == proc.rss_end_bytes + 8192
    found = {s.id: s for s in am.summaries([leaks, flat])}
    growth = found[leaks.id].growth_per_1k_ops_bytes
    assert growth[1] <= 100_000 <= growth[2] and abs(growth[0] - 100_000) < 1000
    assert found[leaks.id].leaking and not found[flat.id].leaking
    assert found[flat.id].processes == 10 and found[flat.id].confidence > 0.95
    assert found[leaks.id].heap_per_1k_ops_bytes == (100_000, 100_000, 100_000)
    assert found[flat.id].heap_per_1k_ops_bytes == (0, 0, 0)
    assert found[flat.id].heap_processes == 10 and proc.heap is not None
    table = memory_table(list(found.values()))
    assert table.columns[6:8] == ["heap/1k ops", "heap CI"]
    assert [row[6] for row in table.rows] == ["+100 kB", "0 B"]
    records = with_memory([{"id": leaks.id}, {"id": "other"}], list(found.values()))
    assert records[0]["heap_per_1k_ops_bytes"] == 100_000 and records[1]["heap_ci_low_bytes"] == ""


def test_a_deterministic_step_in_every_process_is_not_a_leak() -> None:
    """Every process touching one more page (an allocator settling) is above zero in every
    process, but below the size a leak must reach."""
    specs = [BenchSpec(_noop, "settles", "g")]
    cases = expand(BenchFile(__file__, specs, []))  # type: ignore[arg-type]
    bench = Runner(
        __file__,
        cases,
        Settings(
            seed=1, min_processes=10, max_processes=10, precision=1e-9, memory_interval_s=0.01
        ),
        2e6,
        50.0,
        backend=GrowingBackend({0: 0.0}, noise=False, step=8192),
    ).run()[0]
    summary = am.summarize(bench)
    assert summary is not None and summary.growth_per_1k_ops_bytes[1] > 0
    assert not summary.leaking
