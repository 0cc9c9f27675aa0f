"""examples/cache.py end to end on its quick set, with real memcached and Redis."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT
from tests.examples.conftest import need_server

CACHES = {"dict", "lru_cache", "cachetools", "memcached", "redis"}


def test_quick_set_runs_every_cache_serially_and_on_8_threads(tmp_path: Path) -> None:
    need_server("memcached")
    need_server("redis-server")
    out = tmp_path / "cache.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERFLAB_")}
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "examples" / "cache.py"),
            "--quick",
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
    benches = json.loads(out.read_text())["benchmarks"]
    seen = {(b["name"], b["threads"]) for b in benches}
    assert seen == {(name, t) for name in CACHES for t in (1, 8)}
    for b in benches:
        assert b["error"] is None, b
        assert b["params"] == {"n": 1000}
        assert b["processes"][0]["samples"], b["name"]
        per_key = b["processes"][0]["metrics"]["memory/key"]
        # every key holds a Northwind row of 43–894 B: the cache can't keep it in less
        # than ~40 B, nor (memcached's 1 MiB slab pages at 1,000 keys aside) in over 64 kB
        assert 40 < per_key < 65_536, (b["name"], per_key)

    # every sample's time per op is a real, positive figure (which cache is faster is a
    # matter of speed, measured in examples/cache.md and never asserted by a test: the
    # machine may be busy)
    for b in benches:
        for s in b["processes"][0]["samples"]:
            assert s["wall_ns"] > 0 and s["iterations"] >= 1, b["name"]
