"""examples/pytest_project under the plugin: perflab-style and pytest-benchmark-style
tests, and the gate (``--perflab-compare`` + ``--perflab-fail-on slower``).

Each run is a child pytest (as a user runs it) with tiny budgets. The gate compares two
separately measured runs, and on a busy machine (load 4-16 on 2 cores) their seconds
differ by the machine's speed state, not the code; perflab holds such unpaired verdicts as
inconclusive when its machine-speed reference moved (docs/compare.md). So the gate tests do
not depend on this machine's speed: each rewrites the measured baseline file far beyond any
change of speed before comparing. The slowdown test's baseline reads 100x faster and has
no reference timings (a file from before the reference: no hold), so the injected 20x
slowdown reads ~2000x slower and must trip the gate; the change-of-machine test's baseline
reads as measured on a machine 1000x faster (samples and reference alike), so the
seconds read ~1000x slower but the verdict must be held, and the gate must not trip. The
factor is that large because the hold needs the reference ratio's CI wholly outside
1 +/- the threshold, and with 2 processes a side its t-interval has 1 degree of freedom:
two processes in different speed states (2x apart) widen it by a factor of ~80 each way,
so a 10x change of machine was once not held (8.35x slower, load 4.4).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT

PROJECT = ROOT / "examples" / "pytest_project"
FAST = ["--perflab-budget=0.3s", "-p", "no:cacheprovider", "-q"]


def _pytest(cwd, *args: str, slowdown: int = 1) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PERFLAB_EXAMPLE_SLOWDOWN": str(slowdown)}
    return subprocess.run(
        [sys.executable, "-m", "pytest", *FAST, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A copy of the example project with a baseline measured once."""
    where = tmp_path_factory.mktemp("project")
    for path in PROJECT.glob("*.py"):
        shutil.copy(path, where)
    run = _pytest(where, "--perflab-json=base.json")
    assert run.returncode == 0, run.stdout + run.stderr
    return where, run


def test_both_styles_run_and_are_measured(project):
    where, run = project
    assert "11 passed" in run.stdout, run.stdout
    data = json.loads((where / "base.json").read_text())
    names = {b["name"]: b for b in data["benchmarks"]}
    assert set(names) == {
        "test_words",
        "test_word_counts",
        "test_top_words_pedantic",
        "test_my_stuff",
        "test_my_stuff_different_arg",
        "test_my_stuff_marked",
        "test_with_setup",
        "test_group_attribute",
        "test_top_k",
    }
    assert [b["params"] for b in data["benchmarks"] if b["name"] == "test_top_k"] == [
        {"k": 1},
        {"k": 5},
    ]
    assert names["test_my_stuff_marked"]["group"] == "group-name"
    assert names["test_group_attribute"]["group"] == "counting"
    assert names["test_words"]["baseline"] is True
    assert data["settings"]["extra_info"] == {"group-name/test_my_stuff_marked": {"chars": 6210}}
    assert all(b["processes"] and not b["error"] for b in data["benchmarks"])
    assert "in-process" in run.stdout and "test_word_counts" in run.stdout


@pytest.fixture(scope="module")
def gate_baseline(project):
    where, _ = project
    run = _pytest(where, "-k", "word_counts", "--perflab-json=gate.json", *GATE)
    assert run.returncode == 0, run.stdout + run.stderr
    return where


#: A comparison needs two processes a side; a budget alone gave one on a busy machine
#: (then "inconclusive"), so the count is fixed.
GATE = ["--perflab-budget=1.5s", "--perflab-processes=2"]


def _rewritten(where, name: str, factor: int, keep_reference: bool) -> str:
    """A copy of gate.json as ``name`` whose every sample reads the measured median time
    per op divided by ``factor`` (one value: a baseline whose CI is as tight as can be,
    whatever the machine's speed did while it was measured: with 2 processes a side, two
    process medians apart by a busy moment made the baseline's CI a million times wide,
    and the comparison inconclusive), and, if kept, every reference timing divided by
    ``factor``; without ``keep_reference`` the reference timings are dropped, as in a file
    from before the machine-speed reference."""
    doc = json.loads((where / "gate.json").read_text())
    processes = [p for b in doc["benchmarks"] for p in b["processes"]]
    assert processes
    for bench in doc["benchmarks"]:
        bench.pop("summary", None)
    per_op = sorted(s["wall_ns"] / s["iterations"] for p in processes for s in p["samples"])
    ns_per_op = per_op[len(per_op) // 2] / factor
    for proc in processes:
        assert proc["reference_ns"], "the plugin records the machine-speed reference"
        if keep_reference:
            proc["reference_ns"] = [max(1, ns // factor) for ns in proc["reference_ns"]]
        else:
            proc["reference_ns"] = []
        for sample in proc["samples"]:
            sample["wall_ns"] = max(1, round(ns_per_op * sample["iterations"]))
            sample["cpu_ns"] = sample["wall_ns"]
    (where / name).write_text(json.dumps(doc))
    return name


def test_gate_fails_on_an_injected_slowdown(gate_baseline):
    baseline = _rewritten(gate_baseline, "gate_fast.json", 100, keep_reference=False)
    run = _pytest(
        gate_baseline,
        "-k",
        "word_counts",
        f"--perflab-compare={baseline}",
        "--perflab-fail-on=slower",
        "--perflab-threshold=50%",
        *GATE,
        slowdown=20,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert "1 slower" in run.stdout, run.stdout
    assert "1 passed" in run.stdout  # the tests passed; the gate failed the session


def test_gate_holds_a_slowdown_from_a_change_of_machine(gate_baseline):
    baseline = _rewritten(gate_baseline, "gate_fast_machine.json", 1000, keep_reference=True)
    run = _pytest(
        gate_baseline,
        "-k",
        "word_counts",
        f"--benchmark-compare={baseline}",
        "--benchmark-compare-fail=mean:50%",
        *GATE,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 slower" in run.stdout, run.stdout
    assert "inconclusive" in run.stdout, run.stdout
