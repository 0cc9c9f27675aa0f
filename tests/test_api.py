"""The Python API: perflab.measure (in this process), perflab.Runner (a pyperf-style
script measured in fresh workers), perflab.load (typed model, records, pandas).

Budgets are tiny; no speed is asserted."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap

import pytest

import perflab
from perflab.errors import UsageError


def test_measure_returns_the_estimate_and_the_first_result():
    result = perflab.measure(sum, range(100), budget=0.3)
    assert result.value == 4950 and result.mode == "in-process"
    low, high = result.ci_s
    assert 0 < low <= result.median_s <= high
    assert result.benchmark.processes and result.benchmark.processes[0].samples
    assert "per call" in str(result) and "in-process" in str(result)


def test_measure_runs_async_functions_on_a_loop():
    async def hop(n):
        await asyncio.sleep(0)
        return n

    assert perflab.measure(hop, 7, budget=0.2).value == 7


def test_measure_refuses_bad_settings_and_raises_the_functions_error():
    with pytest.raises(UsageError, match="precision"):
        perflab.measure(int, precision=2)

    def boom():
        raise KeyError("nope")

    with pytest.raises(KeyError):
        perflab.measure(boom, budget=0.1)


def test_measure_in_fresh_processes(tmp_path):
    """processes=N: N worker processes import the script's function again (as
    __mp_main__: the guard keeps them from measuring again); async too."""
    script = tmp_path / "fresh.py"
    script.write_text(
        textwrap.dedent("""
        import asyncio, json, os, perflab

        def work(n):
            return sum(range(n))

        async def hop():
            await asyncio.sleep(0)

        if __name__ == "__main__":
            r = perflab.measure(work, 100, processes=2, budget=20)
            a = perflab.measure(hop, processes=2, budget=20)
            print(json.dumps({"me": os.getpid(), "mode": r.mode, "value": r.value,
                              "pids": [p.pid for p in r.benchmark.processes],
                              "samples": [len(p.samples) for p in r.benchmark.processes],
                              "async": [len(p.samples) for p in a.benchmark.processes],
                              "text": str(r)}))
    """)
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["mode"] == "fresh processes" and out["value"] == 4950
    assert len(set(out["pids"])) == 2 and out["me"] not in out["pids"]
    assert all(out["samples"]) and len(out["async"]) == 2 and all(out["async"])
    assert "2 processes" in out["text"]
    unguarded = tmp_path / "unguarded.py"
    unguarded.write_text(
        "import perflab\n\ndef f():\n    pass\n\nperflab.measure(f, processes=1, budget=5)\n"
    )
    done = subprocess.run(
        [sys.executable, str(unguarded)], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert done.returncode != 0 and "__name__ ==" in done.stderr


def test_measure_in_fresh_processes_refuses_what_cannot_travel():
    with pytest.raises(UsageError, match="processes=0"):
        perflab.measure(lambda: 1, processes=2)
    with pytest.raises(UsageError, match="processes an integer"):
        perflab.measure(len, "x", processes=-1)


def test_runner_script_is_measured_in_fresh_workers(tmp_path):
    script = tmp_path / "bench.py"
    script.write_text(
        textwrap.dedent("""
        import asyncio
        import perflab

        async def hop():
            await asyncio.sleep(0)

        runner = perflab.Runner()
        runner.bench_func("sorted 100", sorted, list(range(100, 0, -1)), group="g")
        runner.bench_async_func("hop", hop)
        if __name__ == "__main__":
            raise SystemExit(runner.run())
    """)
    )
    out = tmp_path / "r.json"
    run = subprocess.run(
        [
            sys.executable,
            str(script),
            "--json",
            str(out),
            "--budget",
            "0.4s",
            "--min-processes",
            "2",
            "--process-time",
            "20ms",
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    data = json.loads(out.read_text())
    assert {b["name"] for b in data["benchmarks"]} == {"sorted 100", "hop"}
    pids = {p["pid"] for b in data["benchmarks"] for p in b["processes"]}
    assert len(pids) >= 2  # a fresh worker per process, not the script's one process
    assert "sorted 100" in run.stdout

    loaded = perflab.load(out)
    records = loaded.to_records()
    assert {r["benchmark"] for r in records} == {"sorted 100", "hop"}
    assert all(r["median_s"] > 0 for r in records)


def test_to_pandas_with_the_real_pandas(tmp_path):
    """pandas (installed by make into .venv/peers/pandas, beside the venv: perflab does
    not depend on it) builds the frame of a run, a cmd and an http-free pytest-benchmark
    file, in a child Python with that folder on its path."""
    from tests.conftest import ROOT

    peers = ROOT / ".venv" / "peers" / "pandas"
    assert peers.is_dir(), f"{peers} is missing: `make test` (.stamps/peers) installs it"
    data = ROOT / "tests" / "data" / "interop"
    script = textwrap.dedent(f"""
        import json, perflab
        run = perflab.load({str(data / "pyperf_suite.json")!r}).to_pandas()
        cmd = perflab.load({str(data / "hyperfine.json")!r}).to_pandas()
        print(json.dumps({{"type": type(run).__module__.split(".")[0],
                          "run": run[["benchmark", "median_s"]].values.tolist(),
                          "cmd": cmd[["label", "median_s", "user_s"]].values.tolist()}}))
    """)
    env = {**os.environ, "PYTHONPATH": str(peers)}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["type"] == "pandas"
    assert [row[0] for row in out["run"]] == ["sort_small", "sum_small"]
    assert all(row[1] > 0 for row in out["run"])
    assert out["cmd"] == [
        ["sleep 0.01", pytest.approx(0.01431334), pytest.approx(0.0010912)],
        ["true", pytest.approx(0.000975211), pytest.approx(0.0006936)],
    ]


def test_to_pandas_without_pandas_is_one_clear_error(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    from perflab.api.calls import _loaded_class

    loaded = _loaded_class()(kind="run", command_line=[], created="", perflab_version="0")
    with pytest.raises(UsageError, match="pip install pandas"):
        loaded.to_pandas()


def test_measure_count_asks_for_instructions() -> None:
    import perflab
    from perflab.errors import UsageError

    with pytest.raises(UsageError, match='"instructions"'):
        perflab.measure(len, [1], count="cycles")
