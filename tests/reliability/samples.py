"""Valid results files of every kind, built without measuring (for the fault tests and
the battery), and helpers to run perflab and judge its outcome."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

from perflab import model
from perflab.model import Benchmark, CommandRun, Histogram, HttpStep, Results
from tests.analyze.test_compare_http import encode
from tests.conftest import lognormal_groups, make_bench

ROOT = Path(__file__).resolve().parents[2]


#: names that are markup, escape sequences, formulas or bidi controls somewhere: every
#: place perflab prints or writes a name must show them as text
NASTY = [
    "closing [/] tag",
    "[red]RED[/red] [link=https://x.invalid]click[/link]",
    "\x1b[31mred\x1b[0m",
    "\x1b]0;title\x07",
    "\x1b]8;;https://x.invalid\x1b\\link",
    "two\nlines",
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "`code` | pipe",
    '=HYPERLINK("http://x.invalid")',
    "+1",
    "-1+2",
    "@SUM(A1)",
    "\u202eevil",
    "$x$ {y}",
]


def run_results(seed: int = 0) -> Results:
    """A ``run`` file: two sizes of one benchmark (fit complexity works on it)."""
    benches = [
        make_bench("dumps", lognormal_groups(2e-6 * n, 5, 8, seed=seed + n), params={"n": n})
        for n in (10, 100, 1000)
    ]
    return Results(
        kind="run",
        command_line=["perflab", "run", "x.py"],
        created="2026-01-01",
        perflab_version="0.1.0",
        environment={"cpu_count": 2},
        settings={"precision": 0.01},
        benchmarks=benches,
    )


def cmd_results(seed: int = 0) -> Results:
    """A ``cmd`` file: two commands, interleaved blocks of runs."""
    rng = np.random.default_rng(seed)
    benches = []
    for k, name in enumerate(("sleep 0.01", "sleep 0.02")):
        runs = [
            CommandRun(
                index=2 * i + k,
                started_s=0.05 * i,
                wall_ns=int(1e7 * (k + 1) * rng.lognormal(0, 0.02)),
                user_ns=1000,
                sys_ns=1000,
                max_rss_bytes=2_000_000,
                block=i,
            )
            for i in range(12)
        ]
        benches.append(Benchmark(name=name, kind="command", runs=runs))
    return Results(
        kind="cmd",
        command_line=["perflab", "cmd"],
        created="2026-01-01",
        perflab_version="0.1.0",
        settings={"precision": 0.01, "interleave": True},
        benchmarks=benches,
        spawn_overhead_ns=[500_000] * 5,
    )


def http_results(seed: int = 0) -> Results:
    """An ``http`` file: a closed-loop sweep of three steps (fit usl works on it)."""
    rng = np.random.default_rng(seed)
    steps = []
    for n in (1, 2, 4, 8):
        values = (rng.exponential(800 * (1 + n / 8), 400) + 100).astype(int).tolist()
        hist = Histogram(encoded=encode(values), count=len(values))
        steps.append(
            HttpStep(
                offered_rate=None,
                connections=n,
                mode="closed",
                duration_s=2.0,
                warmup_s=0.5,
                elapsed_s=1.5,
                requests_sent=len(values),
                status_counts={"200": len(values)},
                ok_responses=len(values),
                latency=hist,
                service_time=hist,
                threads=1,
                wall_s=2.0,
            )
        )
    bench = Benchmark(name="GET http://127.0.0.1:8080/", kind="http", steps=steps)
    return Results(
        kind="http",
        command_line=["perflab", "http"],
        created="2026-01-01",
        perflab_version="0.1.0",
        settings={"ok": "200-299", "slo_s": None},
        benchmarks=[bench],
    )


MAKERS = {"run": run_results, "cmd": cmd_results, "http": http_results}


def write_valid(folder: Path, kind: str, seed: int = 0) -> Path:
    """Save a valid results file of ``kind`` into ``folder``; its path."""
    path = folder / f"{kind}-{seed}.json"
    model.save(MAKERS[kind](seed), path)
    return path


def document(kind: str, seed: int = 0) -> dict[str, Any]:
    """The JSON document of a valid results file of ``kind``."""
    return json.loads(json.dumps(MAKERS[kind](seed).to_dict()))


def perflab(
    *args: str, cwd: Path | None = None, timeout: float = 60, **kwargs: Any
) -> subprocess.CompletedProcess[str]:
    """``python -m perflab ARGS`` in a subprocess, output captured."""
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "perflab", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env=env,
        **kwargs,
    )


def clean_failure(result: subprocess.CompletedProcess[str], code: int = 2) -> str:
    """Assert exit ``code`` with exactly one ``error:`` line and no traceback; the line."""
    assert result.returncode == code, (result.returncode, result.stderr[-2000:])
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, result.stderr
    return lines[0]
