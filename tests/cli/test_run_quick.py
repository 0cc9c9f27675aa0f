"""``perflab run --quick`` (pyperf's --fast) and the time estimate printed before a run
(issue 29 §2)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from perflab.commands.options import QUICK, apply_quick, time_estimate


def _args(**given: Any) -> argparse.Namespace:
    defaults = {"budget": "10s", "min_processes": None, "max_processes": 60}
    return argparse.Namespace(quick=True, **{**defaults, "process_time": "100ms", **given})


def test_quick_sets_what_the_user_left_alone() -> None:
    args = _args()
    apply_quick(args)
    assert (args.budget, args.min_processes, args.max_processes, args.process_time) == (
        QUICK["budget"],
        QUICK["min_processes"],
        QUICK["max_processes"],
        QUICK["process_time"],
    )
    mine = _args(budget="5s")
    apply_quick(mine)
    assert mine.budget == "5s" and mine.max_processes == QUICK["max_processes"]
    off = _args()
    off.quick = False
    apply_quick(off)
    assert off.budget == "10s"


def test_the_estimate_bounds_the_run() -> None:
    line = time_estimate(9, 10.0, 0.1, 10)
    assert line.startswith("≈ ") and "9 benchmarks × 10 s budget" in line
    assert "1 min 36 s" in line  # 9 × (10 + 0.1 + 0.6) s, at most
    assert "1 benchmark ×" in time_estimate(1, 2.0, 0.05, 3)


def test_a_quick_run_says_so(tmp_path: Path, perflab_cli: Any) -> None:
    bench = tmp_path / "bench_q.py"
    bench.write_text("import perflab\n\n\n@perflab.bench\ndef add():\n    return 1 + 1\n")
    out = tmp_path / "r.json"
    result = perflab_cli("run", str(bench), "--quick", "--no-alloc", "--json", str(out))
    assert result.returncode == 0, result.stderr
    assert "1 benchmark × 2 s budget" in result.stderr
    assert "quick run (--quick)" in " ".join(result.stdout.split())
    settings = json.loads(out.read_text())["settings"]
    assert settings["quick"] is True and settings["max_processes"] == QUICK["max_processes"]
    shown = perflab_cli("show", str(out))
    assert "quick run (--quick)" in " ".join(shown.stdout.split())
