"""``--perflab-count instructions`` in the pytest plugin: each benchmark counted under
Callgrind in 3 child pytests, one memory layout each (docs/count.md). Valgrind comes
with ``make`` (the Makefile installs it where missing); no count's size is asserted
beyond "the work was counted", only what was recorded and printed."""

from __future__ import annotations

import json
import shutil

import pytest

from perflab.engines.run.counted import COUNT_SAMPLES

pytestmark = pytest.mark.skipif(
    shutil.which("valgrind") is None, reason="Valgrind is not installed (make installs it)"
)


def test_count_mode_counts_each_benchmark_in_three_layouts(pytester):
    pytester.makepyfile("""
        def work():
            return sum(i * i for i in range(300))

        def test_work(perflab_bench):
            assert perflab_bench(work) == sum(i * i for i in range(300))
    """)
    out = pytester.path / "r.json"
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--perflab-count=instructions", f"--perflab-json={out}"
    )
    result.assert_outcomes(passed=1)
    data = json.loads(out.read_text())
    assert data["settings"]["count"] == "instructions"
    assert data["settings"]["modes"] == {"test_work": "fresh processes"}
    [bench] = data["benchmarks"]
    assert bench["stop_reason"] == "counted"
    processes = bench["processes"]
    assert len(processes) == 3 and len({p["pid"] for p in processes}) == 3
    assert len({p["layout"]["hash_seed"] for p in processes}) == 3  # one layout each
    for p in processes:
        counts = p["counts"]
        assert counts["events"][0] == "Ir" and len(counts["samples"]) == COUNT_SAMPLES
        per_call = (counts["samples"][0][0] - counts["empty"][0][0]) / counts["iterations"]
        assert per_call > 1000  # a 300-step generator sum: thousands of instructions
    text = result.stdout.str()
    assert "instructions/op" in text and "layout band" in text
    assert "time/op" not in text  # counted, not timed


def test_count_mode_is_a_usage_error_without_valgrind(pytester, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    pytester.makepyfile("def test_x(perflab_bench): perflab_bench(int)")
    result = pytester.runpytest("--perflab-count=instructions")
    assert result.ret == 4  # pytest's usage error, before anything runs
    result.stderr.fnmatch_lines(["*valgrind*"])
