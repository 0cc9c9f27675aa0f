"""examples/pytest_project under the plugin: perflab-style and pytest-benchmark-style
tests, and the gate (``--perflab-compare`` + ``--perflab-fail-on slower``) failing on an
injected 4x slowdown and passing A/A.

Each run is a child pytest (as a user runs it) with tiny budgets. The gate's bounds are
generous because the machine is shared: the slowdown multiplies the work 4 times and
the threshold is 25%, so only a CI wholly above +25% trips it; A/A must not.
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
    return subprocess.run([sys.executable, "-m", "pytest", *FAST, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


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
    assert "10 passed" in run.stdout, run.stdout
    data = json.loads((where / "base.json").read_text())
    names = {b["name"]: b for b in data["benchmarks"]}
    assert set(names) == {"test_words", "test_word_counts", "test_top_words_pedantic",
                          "test_my_stuff", "test_my_stuff_different_arg",
                          "test_my_stuff_marked", "test_with_setup", "test_group_attribute"}
    assert names["test_my_stuff_marked"]["group"] == "group-name"
    assert names["test_group_attribute"]["group"] == "counting"
    assert names["test_words"]["baseline"] is True
    assert data["settings"]["extra_info"] == {"group-name/test_my_stuff_marked":
                                              {"chars": 6210}}
    assert all(b["processes"] and not b["error"] for b in data["benchmarks"])
    assert "in-process" in run.stdout and "test_word_counts" in run.stdout


def test_gate_fails_on_an_injected_slowdown(project):
    where, _ = project
    run = _pytest(where, "-k", "word_counts", "--perflab-compare=base.json",
                  "--perflab-fail-on=slower", "--perflab-threshold=25%", slowdown=4)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "slower" in run.stdout
    assert "1 passed" in run.stdout  # the tests passed; the gate failed the session


def test_gate_passes_a_to_a(project):
    where, _ = project
    run = _pytest(where, "-k", "word_counts", "--benchmark-compare=base.json",
                  "--benchmark-compare-fail=mean:25%")
    assert run.returncode == 0, run.stdout + run.stderr
