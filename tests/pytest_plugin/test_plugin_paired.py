"""``--perflab-compare REF``: the baseline's code checked out and measured now, paired
with this checkout's, and the gate's verdict from the pairs.

The end-to-end test runs real child pytests but asserts no speed: which code each side
imported, how the processes were paired, what was recorded, that the worktree is gone.
The gate's verdict is tested on synthetic pairs from a speed-switching machine.
"""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path

import numpy as np
import pytest

from perflab.engines.run.checkout import Baseline
from perflab.engines.run.pairing import pair_order
from perflab.engines.run.runner import Settings
from perflab.model import Benchmark, Process, Sample
from perflab.pytest_plugin.session import GateOptions, SessionResults
from tests.speed_states import SpeedStates

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
MODULE = """
import os

VERSION = "{version}"
with open(os.environ["PERFLAB_TEST_MARK"], "a") as mark:
    mark.write(VERSION + "\\n")


def work():
    return sum(range({n}))
"""


def _commit(path: Path, message: str) -> None:
    subprocess.run([*GIT, "add", "."], cwd=path, check=True)
    subprocess.run([*GIT, "commit", "-qm", message], cwd=path, check=True)


def test_compare_with_a_git_ref_measures_the_baseline_paired_in_lock_step(pytester, monkeypatch):
    mark = pytester.path / "mark.txt"
    monkeypatch.setenv("PERFLAB_TEST_MARK", str(mark))
    monkeypatch.setenv("PERFLAB_HISTORY", str(pytester.path / "no-history.sqlite"))
    subprocess.run(["git", "init", "-q"], cwd=pytester.path, check=True)
    (pytester.path / "mod.py").write_text(MODULE.format(version="old", n=1000))
    pytester.makepyfile(
        test_work="""
        import mod

        def test_work(perflab_bench):
            assert perflab_bench(mod.work) == mod.work()
        """
    )
    _commit(pytester.path, "old")
    (pytester.path / "mod.py").write_text(MODULE.format(version="new", n=1000))
    _commit(pytester.path, "new")
    old = subprocess.run(
        ["git", "rev-parse", "HEAD~1"], cwd=pytester.path, check=True, capture_output=True
    ).stdout.decode()
    out = pytester.path / "r.json"
    result = pytester.runpytest(
        "-p",
        "no:cacheprovider",
        "--perflab-compare=HEAD~1",
        "--perflab-processes=2",
        f"--perflab-json={out}",
    )
    result.assert_outcomes(passed=1)
    data = json.loads(out.read_text())
    assert data["baseline"]["spec"] == "HEAD~1" and data["baseline"]["commit"] == old.strip()
    [bench] = data["benchmarks"]
    [base] = data["baseline"]["benchmarks"]
    assert bench["name"] == base["name"] == "test_work"
    assert len(bench["processes"]) == len(base["processes"]) == 2  # two pairs
    for pb, pa in zip(bench["processes"], base["processes"]):
        assert pa["index"] == pb["index"] and pa["pid"] != pb["pid"]
        assert pa["pair"]["side"] == "a" and pb["pair"]["side"] == "b"
        assert pa["pair"]["mode"] == pb["pair"]["mode"] == "lockstep"
        assert len(pa["samples"]) == len(pb["samples"]) >= 3  # sample i of each: pair i
        # each side's own per-sample counters (software events: task clock, switches)
        assert all(s["counters"] for s in pa["samples"] + pb["samples"])
    assert data["settings"]["modes"] == {"test_work": "paired"}
    # the parent's call and each pair's two children: one imported the baseline's code
    assert sorted(mark.read_text().split()) == ["new", "new", "new", "old", "old"]
    result.stdout.fnmatch_lines(["*measured paired with the baseline*", "*B/A paired*"])
    trees = subprocess.run(
        ["git", "worktree", "list"], cwd=pytester.path, check=True, capture_output=True
    ).stdout.decode()
    assert len(trees.splitlines()) == 1  # the baseline's worktree was removed


def test_compare_with_a_git_ref_refuses_counting(pytester):
    subprocess.run(["git", "init", "-q"], cwd=pytester.path, check=True)
    pytester.makepyfile("def test_x(perflab_bench): perflab_bench(int)")
    _commit(pytester.path, "one")
    result = pytester.runpytest("--perflab-compare=HEAD", "--perflab-count=instructions")
    assert result.ret == 4  # pytest's usage error
    result.stderr.fnmatch_lines(["*--perflab-compare HEAD measures the baseline's times*"])


def _pair(name: str, a_work_s: float, b_work_s: float, seed: int) -> tuple[Benchmark, Benchmark]:
    """The baseline's and this run's records of ``name``: 8 lock-step processes of 40
    pairs each on a machine 2x slower half the time, A doing ``a_work_s`` a sample and
    B ``b_work_s``."""
    rng = np.random.default_rng(seed)
    a = Benchmark(name=name)
    b = Benchmark(name=name)
    for k in range(8):
        machine = SpeedStates(rng, slow_share=rng.uniform(0.05, 0.75), horizon_s=1.0)
        walls_a, walls_b, _ = machine.paired(
            0.0, a_work_s, b_work_s, pair_order(40, random.Random(seed + k))
        )
        for bench, walls, side in ((a, walls_a, "a"), (b, walls_b, "b")):
            samples = [Sample(1, int(w * 1e9), int(w * 1e9)) for w in walls]
            pair = {"with": name, "side": side, "mode": "lockstep", "order": ""}
            bench.processes.append(
                Process(index=k, pid=k, started_s=0.0, samples=samples, pair=pair)
            )
    return a, b


@pytest.mark.parametrize(("b_work_s", "tripped"), [(1e-4, 0), (1.05e-4, 1)])
def test_the_gate_judges_the_paired_ratio(b_work_s, tripped, capsys):
    """A/A on a switching machine passes; 5% more work trips ``--perflab-fail-on slower``:
    the verdict is the paired one (the machine's states cancel in each pair)."""
    base, bench = _pair("test_work", 1e-4, b_work_s, seed=3)
    session = SessionResults(
        Settings(),
        {},
        None,
        False,
        GateOptions("HEAD~1", ["slower"], 0.02),
        ["pytest"],
        measured=Baseline("HEAD~1", "c0ffee" * 6, Path("/b"), Path("/b"), Path("/c")),
    )
    session.record(bench, {"mode": "paired", "baseline": base})
    assert session.finish() == tripped
    out = capsys.readouterr().out
    assert "B/A paired" in out and "in lock-step with B" in out
    assert ("1 slower" in out) == bool(tripped)
