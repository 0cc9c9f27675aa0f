"""`perflab cmd --profile`: a Python command sampled by py-spy with its children, after
the timed runs; the process of each stack kept at its root. Shares are asserted loosely
(which functions, which processes), never times."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from perflab import model
from perflab.analyze.profile import total_share
from perflab.engines import profiler
from perflab.engines.cmd.profiled import by_process

PARENT = """
import subprocess, sys

def parent_spin():
    s = 0
    for i in range(10_000_000):
        s += i

subprocess.run([sys.executable, "-c", "import child; child.child_spin()"], check=True)
parent_spin()
"""
# The child spins several times longer than the parent: py-spy looks for new child
# processes now and then, and a busy machine (load 3.5, CI) once let a short child end
# before it was found (the profile held the parent only).
CHILD = """
def child_spin():
    s = 0
    for i in range(40_000_000):
        s += i
"""


def test_process_frames_lose_their_pid_and_keep_their_command_line() -> None:
    stacks = {
        'process 7:"";process 8:"python -c import a; a.f()";f (a.py:1)': 3,
        'process 9:"python -c import a; a.f()";f (a.py:1)': 2,
    }
    merged, pids = by_process(stacks, "sh -c x")
    assert merged == {
        "process: sh -c x;process: python -c import a: a.f();f (a.py:1)": 3,
        "process: python -c import a: a.f();f (a.py:1)": 2,
    }
    assert pids == {7, 8, 9}


def test_a_python_command_and_its_child_are_profiled(tmp_path: Path, perflab_cli) -> None:
    try:
        profiler.find_sampler()
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"py-spy is not installed ({exc}); make test installs it")
    (tmp_path / "parent.py").write_text(textwrap.dedent(PARENT))
    (tmp_path / "child.py").write_text(textwrap.dedent(CHILD))
    out = tmp_path / "c.json"
    done = perflab_cli(
        "cmd",
        f"{sys.executable} parent.py",
        "sleep 0.01",
        "--runs",
        "2",
        "--profile",
        "--profile-time",
        "0.1s",
        "--no-history",
        "--json",
        str(out),
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    python_cmd, sleep = model.load(str(out)).benchmarks
    profile = python_cmd.profile
    assert profile is not None and profile.total > 20 and len(profile.pids) >= 2
    assert total_share(profile, "parent_spin") > 0.05
    assert total_share(profile, "child_spin") > 0.05
    roots = {stack.split(";")[0] for stack in profile.stacks}
    assert all(root.startswith("process: ") for root in roots)
    assert any("child.child_spin()" in stack for stack in profile.stacks)
    assert sleep.profile is not None and sleep.profile.total == 0
    assert "no Python process" in sleep.profile.note
    assert "no Python process to sample" in done.stderr
    (written,) = (tmp_path / "c.profile").glob("*.collapsed")
    assert written.name.endswith("_parent.py.collapsed")


def test_count_instructions_profile_is_callgrinds_per_function_ir(
    tmp_path: Path, perflab_cli
) -> None:
    from tests.conftest import debian_tool

    debian_tool("valgrind")
    out = tmp_path / "c.json"
    done = perflab_cli(
        "cmd", "true", "--runs", "2", "--count", "instructions", "--profile",
        "--no-history", "--json", str(out), timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (bench,) = model.load(str(out)).benchmarks
    profile = bench.profile
    assert profile.kind == "instructions" and profile.sampler.startswith("callgrind")
    ir = bench.counts[0].totals[bench.counts[0].events.index("Ir")]
    assert abs(profile.total - ir) <= 0.001 * ir
    assert all(s.startswith("process: ") for s in profile.stacks)
    assert "instructions (Ir)" in done.stdout
