"""The pytest plugin, run in inner pytest sessions (pytester) with tiny budgets.

Timing is real but nothing here asserts a speed: only what was measured (samples,
rounds, groups, files), what the user sees, and exit codes.
"""

from __future__ import annotations

import json
import os

import pytest

from perflab.errors import UsageError
from perflab.pytest_plugin import compat

FAST = ["--perflab-budget=0.2s", "-p", "no:cacheprovider"]


def _results(path) -> dict:
    return json.loads(path.read_text())


def _bench(data: dict, name: str) -> dict:
    [bench] = [b for b in data["benchmarks"] if b["name"] == name]
    return bench


def test_fixture_measures_with_the_harness_and_returns_the_result(pytester):
    pytester.makepyfile("""
        import pytest

        def add(a, b=0):
            return a + b

        @pytest.mark.perflab(group="math", baseline=True)
        def test_add(perflab_bench):
            assert perflab_bench(add, 2, b=3) == 5

        def test_plain():
            pass
    """)
    out = pytester.path / "r.json"
    result = pytester.runpytest(*FAST, f"--perflab-json={out}")
    result.assert_outcomes(passed=2)
    bench = _bench(_results(out), "test_add")
    assert bench["group"] == "math" and bench["baseline"] is True
    process = bench["processes"][0]
    # the harness's sequence: cold call, calibration, warmup, overhead, samples, allocation
    assert process["cold_ns"] > 0 and process["iterations"] > 1
    assert process["loop_overhead_ns"] > 0 and process["alloc_peak_bytes"] is not None
    # at least the minimum the harness guarantees (more fit in the budget on a quiet
    # machine; how many is its speed)
    from perflab.engines.run.runner import Settings

    assert len(process["samples"]) >= Settings().min_samples
    assert all(s["cpu_ns"] > 0 for s in process["samples"])
    assert bench["stop_reason"] in ("budget", "precision")
    assert _results(out)["settings"]["modes"] == {"math/test_add": "in-process"}
    result.stdout.fnmatch_lines(["*perflab: 1 benchmark(s) measured in-process*", "*test_add*"])


def test_in_process_mode_reports_its_first_call_not_a_cold_one(pytester):
    pytester.makepyfile("""
        def test_sum(perflab_bench):
            perflab_bench(sum, range(100))
    """)
    out = pytester.path / "r.json"
    result = pytester.runpytest(*FAST, "-v", f"--perflab-json={out}")  # -v: the lists
    result.assert_outcomes(passed=1)
    processes = _bench(_results(out), "test_sum")["processes"]
    assert processes[0]["cold_ns"] > 0
    assert all(p["cold_ns"] is None for p in processes[1:])
    text = result.stdout.str()
    assert "cold (first call in a fresh process)" not in text
    result.stdout.fnmatch_lines(["*first call (in-process: the first call in this process*"])


def test_pedantic_fixes_rounds_iterations_and_runs_setup_each_round(pytester):
    pytester.makepyfile("""
        calls = {"setup": 0}

        def setup():
            calls["setup"] += 1
            return ([3, 1, 2],), {}

        def test_setup(perflab_bench):
            assert perflab_bench.pedantic(sorted, setup=setup, rounds=4,
                                          warmup_rounds=2) == [1, 2, 3]
            # once for the first call, 2 warmup rounds, 4 rounds, 3 allocation calls
            assert calls["setup"] == 1 + 2 + 4 + 1

        def test_rounds(perflab_bench):
            assert perflab_bench.pedantic(max, args=(1, 2), rounds=3, iterations=7) == 2
    """)
    out = pytester.path / "r.json"
    pytester.runpytest(*FAST, f"--perflab-json={out}").assert_outcomes(passed=2)
    data = _results(out)
    [process] = _bench(data, "test_rounds")["processes"]
    assert [s["iterations"] for s in process["samples"]] == [7, 7, 7]
    [process] = _bench(data, "test_setup")["processes"]
    assert len(process["samples"]) == 4 and process["warmup_samples"] == 2


def test_a_failing_benchmark_fails_its_test_with_its_own_exception(pytester):
    pytester.makepyfile("""
        def boom():
            raise ValueError("broken on purpose")

        def test_boom(perflab_bench):
            perflab_bench(boom)
    """)
    result = pytester.runpytest(*FAST)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*ValueError: broken on purpose*"])


def test_only_skip_and_disable(pytester):
    pytester.makepyfile("""
        calls = []

        def test_bench(perflab_bench):
            perflab_bench(abs, -1)

        def test_count_calls():
            pass

        def test_disabled_called_once(perflab_bench):
            calls.clear()
            perflab_bench(calls.append, 1)
            assert calls == [1]
    """)
    pytester.runpytest(*FAST, "--perflab-only", "-k", "test_bench or test_count").assert_outcomes(
        passed=1, skipped=1
    )
    pytester.runpytest(*FAST, "--perflab-skip").assert_outcomes(passed=1, skipped=2)
    result = pytester.runpytest(*FAST, "--perflab-disable", "-k", "disabled")
    result.assert_outcomes(passed=1)
    assert "benchmark(s)" not in result.stdout.str()


def test_bad_option_is_one_usage_line(pytester):
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest("--perflab-precision=abc")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*perflab: --precision 'abc' is not a number*"])


def test_two_measurements_in_one_test_are_refused(pytester):
    pytester.makepyfile("""
        def test_twice(perflab_bench):
            perflab_bench(int)
            perflab_bench(int)
    """)
    result = pytester.runpytest(*FAST)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*only one function per test*"])


def test_compare_fail_maps_percentages_and_refuses_absolute_values():
    assert compat.parse_compare_fail(["mean:5%", "min:10%"]) == pytest.approx(0.05)
    with pytest.raises(UsageError, match="absolute thresholds are not mapped"):
        compat.parse_compare_fail(["min:0.001"])


def test_xdist_disables_timing(pytester):
    class Config:
        workerinput = {}

    from perflab.pytest_plugin.plugin import _xdist_active

    assert _xdist_active(Config())  # type: ignore[arg-type]


def test_async_benchmark_in_pytest(pytester):
    pytester.makepyfile("""
        import asyncio

        async def hop(n):
            for _ in range(n):
                await asyncio.sleep(0)
            return n

        def test_hop(perflab_bench):
            assert perflab_bench(hop, 2) == 2
    """)
    out = pytester.path / "r.json"
    pytester.runpytest(*FAST, f"--perflab-json={out}").assert_outcomes(passed=1)
    [process, *_] = _bench(_results(out), "test_hop")["processes"]
    assert process["samples"] and process["loop_overhead_ns"] > 1000


def test_async_benchmark_on_uvloop(pytester):
    pytester.makepyfile("""
        import asyncio
        import uvloop

        async def hop():
            assert isinstance(asyncio.get_running_loop(), uvloop.Loop)
            await asyncio.sleep(0)

        def test_hop(perflab_bench):
            perflab_bench(hop)
    """)
    out = pytester.path / "r.json"
    pytester.runpytest(
        *FAST, "--perflab-event-loop=uvloop", f"--perflab-json={out}"
    ).assert_outcomes(passed=1)
    assert _bench(_results(out), "test_hop")["processes"][0]["samples"]


def test_fresh_processes_measure_in_child_pytests(pytester):
    pytester.makepyfile("""
        import os

        def test_pid(perflab_bench):
            assert perflab_bench(os.getpid) == os.getpid()

        def test_here(perflab_bench):
            perflab_bench.pedantic(int, rounds=2)
    """)
    out = pytester.path / "r.json"
    result = pytester.runpytest(*FAST, "--perflab-processes=2", f"--perflab-json={out}")
    result.assert_outcomes(passed=2)
    data = _results(out)
    pids = {p["pid"] for p in _bench(data, "test_pid")["processes"]}
    assert len(pids) == 2 and os.getpid() not in pids
    assert all(p["samples"] for p in _bench(data, "test_pid")["processes"])
    assert data["settings"]["modes"] == {
        "test_pid": "fresh processes",
        "test_here": "in-process",
    }  # pedantic stays here
    result.stdout.fnmatch_lines(["*1 benchmark(s) measured fresh processes*: test_pid"])


def test_save_then_compare_with_the_last_saved_run(pytester, monkeypatch):
    monkeypatch.setenv("PERFLAB_HISTORY", str(pytester.path / "empty-history.sqlite"))
    pytester.makepyfile("""
        def test_abs(perflab_bench):
            perflab_bench(abs, -3)
    """)
    result = pytester.runpytest(*FAST, "--perflab-compare")
    assert result.ret == 2  # nothing saved yet: one error line, exit status 2
    result.stderr.fnmatch_lines(["error: --perflab-compare=last: nothing recorded*"])
    pytester.runpytest(*FAST, "--perflab-save", "--perflab-no-history").assert_outcomes(passed=1)
    [saved] = (pytester.path / ".perflab").glob("pytest-*.json")
    assert not (pytester.path / ".perflab" / "history.sqlite").exists()
    result = pytester.runpytest(*FAST, "--perflab-compare")
    assert result.ret == 0
    result.stdout.fnmatch_lines([f"*A = *{saved.name}*"])


def test_saved_results_are_recorded_and_compared_by_run_id(pytester, monkeypatch):
    """A git ref names code to measure now (tests/pytest_plugin/test_plugin_paired.py);
    a recorded run is picked from the history database by its id."""
    import subprocess

    monkeypatch.delenv("PERFLAB_HISTORY", raising=False)
    pytester.makepyfile("""
        def test_abs(perflab_bench):
            perflab_bench(abs, -3)
    """)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q"], cwd=pytester.path, check=True)
    subprocess.run([*git, "add", "."], cwd=pytester.path, check=True)
    subprocess.run([*git, "commit", "-qm", "first"], cwd=pytester.path, check=True)
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=pytester.path, check=True, capture_output=True, text=True
    ).stdout.strip()
    missing = pytester.runpytest(*FAST, "--perflab-compare=nosuchref")
    assert missing.ret == 2
    missing.stderr.fnmatch_lines(
        ["error: --perflab-compare nosuchref: no such file, and no history database*"]
    )
    pytester.runpytest(*FAST, "--perflab-save").assert_outcomes(passed=1)
    from perflab.history.store import Store

    with Store(pytester.path / ".perflab" / "history.sqlite", create=False) as store:
        [run] = store.runs()
        assert run.kind == "run" and run.git_commit == head
        assert [r.bench for r in store.rows(run.id)][0] == "test_abs"
    subprocess.run(
        [*git, "commit", "-q", "--allow-empty", "-m", "second"], cwd=pytester.path, check=True
    )
    result = pytester.runpytest(*FAST, f"--perflab-compare={run.id}")
    assert result.ret == 0, result.stderr.str()
    result.stdout.fnmatch_lines(["*A = *", "*test_abs*"])
    assert head[:7] in result.stdout.str()
    out = result.stdout.str()
    assert "measured paired with the baseline" not in out and "B/A paired" not in out
    unknown = pytester.runpytest(*FAST, "--perflab-compare=nosuchref")
    assert unknown.ret == 2
    unknown.stderr.fnmatch_lines(
        ["error: --perflab-compare nosuchref: not 'last', a run id or a git ref*"]
    )


def test_parametrized_tests_keep_their_parameters_as_pytest_benchmark_does(pytester):
    """test_sum[10] is name test_sum with params {"n": 10}, as perflab reads
    pytest-benchmark's files: a baseline from pytest-benchmark matches by id."""
    pytester.makepyfile("""
        import pytest

        @pytest.mark.parametrize("n", [10, 20])
        @pytest.mark.parametrize("kind", ["list"], ids=["L"])
        def test_sum(perflab_bench, n, kind):
            assert perflab_bench(sum, range(n)) == n * (n - 1) // 2

        @pytest.mark.parametrize("data", [object()])
        def test_obj(perflab_bench, data):  # an object's repr holds its address
            perflab_bench(id, data)
    """)
    out = pytester.path / "r.json"
    pytester.runpytest(*FAST, f"--perflab-json={out}").assert_outcomes(passed=3)
    benches = _results(out)["benchmarks"]
    assert [(b["name"], b["params"]) for b in benches] == [
        ("test_sum", {"kind": "list", "n": 10}),
        ("test_sum", {"kind": "list", "n": 20}),
        ("test_obj[data0]", {}),
    ]
