"""perflab.measure(func, baseline=g): the two measured paired, sample by sample, and the
ratio and verdict taken from the pairs. Budgets are tiny; no speed is asserted: what was
paired, what the result holds, and that its verdict is the paired ratio's."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import perflab
from perflab.analyze.paired import paired_verdict, process_pairs
from perflab.errors import UsageError


def _old(n):
    return sum(range(n))


def _new(n):
    return sum(list(range(n)))


def _check_paired(result) -> None:
    """The records of a paired result: each process of func has a baseline partner
    (same index, sides b and a) with as many samples; the ratio counts those pairs."""
    base, bench = result.baseline, result.benchmark
    assert base.processes and len(base.processes) == len(bench.processes)
    for pa, pb in zip(base.processes, bench.processes):
        assert pa.index == pb.index
        assert pa.pair["side"] == "a" and pb.pair["side"] == "b"
        assert pa.pair["with"] == bench.id and pb.pair["with"] == base.id
        assert len(pa.samples) == len(pb.samples) >= 3
        assert set(pa.pair["order"]) == {"A", "B"}  # both sides led some pairs
    pairs = process_pairs(base, bench)
    assert result.ratio.pairs == sum(len(a) for a, *_ in pairs)
    assert result.verdict == paired_verdict(result.ratio, 0.05)
    assert result.ratio.ratio.ci_low <= result.ratio.ratio.value <= result.ratio.ratio.ci_high
    assert np.isfinite(result.ratio.ratio.value)


def test_measure_with_a_baseline_pairs_them_in_this_process():
    result = perflab.measure(_new, 200, baseline=_old, budget=0.3, threshold=0.05)
    assert result.value == sum(range(200)) and result.mode == "in-process"
    _check_paired(result)
    assert result.baseline.name == "_old" and result.benchmark.name == "_new"
    text = str(result)
    assert "× the baseline" in text and "paired" in text and result.verdict in text


def test_a_baseline_with_the_same_name_is_told_apart():
    result = perflab.measure(_old, 100, baseline=_old, budget=0.2)
    assert result.baseline.name == "_old (baseline)" and result.benchmark.name == "_old"


def test_measure_with_a_baseline_in_fresh_processes(tmp_path):
    script = tmp_path / "paired.py"
    script.write_text(
        textwrap.dedent("""
        import json, os, perflab

        def old(n):
            return sum(range(n))

        def new(n):
            return sum(list(range(n)))

        if __name__ == "__main__":
            r = perflab.measure(new, 300, baseline=old, processes=2, budget=30)
            print(json.dumps({
                "me": os.getpid(), "mode": r.mode, "value": r.value, "verdict": r.verdict,
                "pids_a": [p.pid for p in r.baseline.processes],
                "pids_b": [p.pid for p in r.benchmark.processes],
                "pairs": r.ratio.pairs,
                "samples": [len(p.samples) for p in r.benchmark.processes],
            }))
    """)
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=180, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["mode"] == "fresh processes" and out["value"] == sum(range(300))
    # each worker process ran both sides: the two records of a process share its pid
    assert out["pids_a"] == out["pids_b"] and len(set(out["pids_a"])) == 2
    assert out["me"] not in out["pids_a"]
    assert out["pairs"] <= sum(out["samples"]) and out["verdict"] in {
        "faster",
        "slower",
        "same",
        "inconclusive",
    }


def test_bad_baseline_arguments_are_usage_errors():
    with pytest.raises(UsageError, match="the callable to compare with"):
        perflab.measure(_new, 10, baseline=3)
    with pytest.raises(UsageError, match="need no pairing"):
        perflab.measure(_new, 10, baseline=_old, count="instructions")
    with pytest.raises(UsageError, match="threshold"):
        perflab.measure(_new, 10, baseline=_old, threshold=1.5)


def test_a_failing_baseline_raises_its_own_exception():
    def boom(n):
        raise KeyError("baseline broke")

    with pytest.raises(KeyError, match="baseline broke"):
        perflab.measure(_new, 10, baseline=boom, budget=0.2)
