"""``--perflab-profile``: each benchmark profiled by py-spy in fresh child pytests after
its timing (shares asserted, never times)."""

from __future__ import annotations

import json

import pytest

from perflab.engines import profiler


def test_perflab_profile_profiles_the_benchmark_in_child_pytests(pytester) -> None:
    try:
        profiler.find_sampler()
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"py-spy is not installed ({exc}); make test installs it")
    pytester.makepyfile("""
        def hot(n):
            s = 0
            for i in range(n):
                s += i ^ 5
            return s

        def cold(n):
            return hot(n)

        def work():
            hot(7000)
            cold(3000)
            return 42

        def test_work(perflab_bench):
            assert perflab_bench(work) == 42
    """)
    out = pytester.path / "r.json"
    result = pytester.runpytest(
        "--perflab-budget=0.2s", "-p", "no:cacheprovider", "--perflab-profile",
        "--perflab-no-history", f"--perflab-json={out}",
    )  # fmt: skip
    result.assert_outcomes(passed=1)
    (bench,) = json.loads(out.read_text())["benchmarks"]
    profile = bench["profile"]
    timed = {p["pid"] for p in bench["processes"]}
    assert len(profile["pids"]) == 2 and timed.isdisjoint(profile["pids"])
    assert sum(profile["stacks"].values()) > 100
    assert all(s.startswith("work (") for s in profile["stacks"] if s != "(perflab loop)")
    hot_self = sum(
        w for s, w in profile["stacks"].items() if s.endswith(")") and "hot (" in s.split(";")[-1]
    )
    assert hot_self / sum(profile["stacks"].values()) > 0.9  # cold calls hot: all in hot
