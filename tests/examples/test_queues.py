"""examples/queues.py end to end: every queue, 1 and 4 producers, with a real Redis."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT
from tests.examples.conftest import need_server

QUEUES = {
    "queue",
    "deque",
    "asyncio",
    "multiprocessing",
    "redis-list",
    "redis-list-tx",
    "redis-stream",
    "redis-stream-ack",
}


def test_every_queue_moves_its_batches_with_1_and_4_producers(tmp_path: Path) -> None:
    need_server("redis-server")
    out = tmp_path / "queues.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERFLAB_")}
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "examples" / "queues.py"),
            "--quiet",
            "--min-processes",
            "1",
            "--max-processes",
            "1",
            "--process-time",
            "30ms",
            "--budget",
            "1s",
            "--no-alloc",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads(out.read_text())["benchmarks"]
    assert {(b["name"], b["params"]["producers"]) for b in data} == {
        (q, p) for q in QUEUES for p in (1, 4)
    }
    for b in data:
        assert b["error"] is None, b
        assert b["ops_per_call"] == 100
        assert b["processes"][0]["samples"], b["name"]
        # per message, not per batch: a message can't take a whole second, nor a batch
        # of 100 less than a microsecond
        assert 1e-9 < b["summary"]["median_s"] < 1.0, (b["name"], b["summary"]["median_s"])
