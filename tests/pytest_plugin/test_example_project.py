"""examples/pytest_project under the plugin: perflab-style and pytest-benchmark-style
tests, and the gate (``--perflab-compare`` + ``--perflab-fail-on slower``) failing on an
injected 20x slowdown and passing A/A.

Each run is a child pytest (as a user runs it) with tiny budgets. The gate's bounds are
generous because the machine is shared (load averages of 8 on 2 cores were seen): the
slowdown multiplies the work 20 times (a 6x one once measured 2.7x, CI 1.4-4.8, on a
machine at load 10) and the threshold is 50%, so only a ratio CI wholly
above 1.5 trips the gate; A/A must not. A comparison needs two repetitions a side, so
each gate run (its own baseline included) gets a 1.5 s budget.
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


GATE = ["--perflab-budget=1.5s"]


def test_gate_fails_on_an_injected_slowdown(gate_baseline):
    run = _pytest(
        gate_baseline,
        "-k",
        "word_counts",
        "--perflab-compare=gate.json",
        "--perflab-fail-on=slower",
        "--perflab-threshold=50%",
        *GATE,
        slowdown=20,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert "1 slower" in run.stdout
    assert "1 passed" in run.stdout  # the tests passed; the gate failed the session


def test_gate_passes_a_to_a(gate_baseline):
    run = _pytest(
        gate_baseline,
        "-k",
        "word_counts",
        "--benchmark-compare=gate.json",
        "--benchmark-compare-fail=mean:50%",
        *GATE,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 slower" in run.stdout, run.stdout
