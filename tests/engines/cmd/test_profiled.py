"""`perflab cmd --profile`: a Python command sampled by py-spy with its children, after
the timed runs; the process of each stack kept at its root. Shares are asserted loosely
(which functions, which processes), never times."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from perflab import model
from perflab.analyze.profile import total_share
from perflab.engines import profiler
from perflab.engines.cmd import follow, proctree
from perflab.engines.cmd.profiled import by_process, profile_command
from perflab.model.profile import clean_frame

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


# The child spends 0.3 s as a forked copy of the parent before its exec: py-spy 0.4's
# --subprocesses attached to that copy and never to the child's own program (0 samples
# of child_spin, every time).
PREEXEC_PARENT = PARENT.replace("check=True)", "check=True, preexec_fn=lambda: time.sleep(0.3))")
PREEXEC_PARENT = PREEXEC_PARENT.replace("import subprocess, sys", "import subprocess, sys, time")


def _sampler() -> profiler.Sampler:
    try:
        return profiler.find_sampler()
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"py-spy is not installed ({exc}); make test installs it")


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
    _sampler()
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


def test_a_child_found_between_fork_and_exec_is_sampled_after_its_exec(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sampler = _sampler()
    if not proctree.available():
        pytest.skip("processes cannot be followed here (no /proc, or no ptrace permission)")
    (tmp_path / "parent.py").write_text(textwrap.dedent(PREEXEC_PARENT))
    (tmp_path / "child.py").write_text(textwrap.dedent(CHILD))
    monkeypatch.chdir(tmp_path)
    profile = profile_command([sys.executable, "parent.py"], 0.0, sampler)
    assert profile.calls == 1 and len(profile.pids) >= 2, profile.note
    assert total_share(profile, "child_spin") > 0.05
    assert total_share(profile, "parent_spin") > 0.01
    # the stack that ends in child_spin (the child's process frame names child_spin too,
    # so its import, when a sample lands there, is a stack of its own)
    (child_stack,) = [s for s in profile.stacks if s.rsplit(";", 1)[-1].startswith("child_spin ")]
    root, child = child_stack.split(";")[:2]
    assert root == f"process: {sys.executable} parent.py"
    assert child.startswith("process: ") and child.endswith("-c import child: child.child_spin()")


def test_without_proc_py_spy_follows_the_children_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where processes cannot be followed (no /proc, no ptrace permission) the command
    runs under py-spy's --subprocesses, its stacks read the same way."""
    sampler = _sampler()
    monkeypatch.setattr(proctree, "available", lambda proc_root="/proc": False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "spin.py").write_text("def spin():\n    sum(range(30_000_000))\n\nspin()\n")
    argv = [sys.executable, "spin.py"]
    profile = profile_command(argv, 0.0, sampler)
    assert profile.calls == 1 and profile.total > 0, profile.note
    assert total_share(profile, "spin") > 0.05
    roots = {stack.split(";")[0] for stack in profile.stacks}
    assert roots == {"process: " + clean_frame(shlex.join(argv))}


def test_a_python_process_past_the_samplers_bound_is_counted_unsampled(tmp_path: Path) -> None:
    """One sampler at most: the parent's holds it while its child lives, so the child
    gets none and is counted; the parent is sampled."""
    sampler = _sampler()
    if not proctree.available():
        pytest.skip("processes cannot be followed here (no /proc, or no ptrace permission)")
    parent = "import subprocess, sys\nsubprocess.run([sys.executable, '-c', 'import time; time.sleep(0.5)'])"
    got = follow.sample_tree([sys.executable, "-c", parent], sampler, str(tmp_path), max_samplers=1)
    assert got.python == 2 and got.unsampled == 1
    assert got.stacks
    for stack in got.stacks:  # the parent's only: its chain is the root alone
        process_frames = [f for f in stack.split(";") if re.match(r'^process \d+:"', f)]
        assert process_frames == [stack.split(";")[0]] and process_frames[0].endswith(':""')


ROOT = """
import os, sys, time
GO, DONE, MIDDLE = sys.argv[1:]
pid = os.fork()
if pid == 0:  # a copy of this program until GO exists, then the middle program
    while not os.path.exists(GO):
        time.sleep(0.005)
    os.execv(sys.executable, [sys.executable, "-c", MIDDLE, DONE])
os.waitpid(pid, 0)
"""
MIDDLE = """
import subprocess, sys
wait = "import os, sys, time\\nwhile not os.path.exists(sys.argv[1]): time.sleep(0.005)"
subprocess.run([sys.executable, "-c", wait, sys.argv[1]], check=True)
"""


def test_the_watcher_sees_a_fork_its_exec_and_a_grandchild(tmp_path: Path) -> None:
    """Each step waits for the watcher to have seen the one before (a file it creates):
    no timing involved."""
    if not os.path.exists("/proc/self/stat"):
        pytest.skip("no /proc: processes are followed on Linux only")
    go, done = tmp_path / "go", tmp_path / "done"
    root = subprocess.Popen(
        [sys.executable, "-c", ROOT, str(go), str(done), MIDDLE], start_new_session=True
    )
    tree = proctree.ProcessTree(root.pid)
    exits, deadline = set(), time.monotonic() + 120
    try:
        while root.poll() is None and time.monotonic() < deadline:
            for change in tree.poll():
                if change.kind == "exit":
                    exits.add(change.process.pid)
            middle = [p for p in tree.history if p.ppid == root.pid]
            if middle:
                go.touch()
            if any(p.ppid == middle[0].pid for p in tree.history if middle):
                done.touch()
            time.sleep(proctree.POLL_S)
        exits |= {c.process.pid for c in tree.poll() if c.kind == "exit"}
    finally:
        if root.poll() is None:
            os.killpg(root.pid, 9)
            root.wait()
    assert root.returncode == 0
    by_pid: dict[int, list[proctree.Process]] = {}
    for p in tree.history:
        by_pid.setdefault(p.pid, []).append(p)
    assert len(by_pid) == 3
    (middle_pid,) = [pid for pid, gens in by_pid.items() if gens[0].ppid == root.pid]
    (grandchild_pid,) = set(by_pid) - {root.pid, middle_pid}
    assert [p.generation for p in by_pid[root.pid]] == [0], by_pid[root.pid]
    assert [p.generation for p in by_pid[middle_pid]] == [0, 1]
    copy, middle = by_pid[middle_pid]
    assert copy.cmdline == by_pid[root.pid][0].cmdline and MIDDLE in middle.cmdline
    grandchild = by_pid[grandchild_pid][-1]
    assert grandchild.ppid == middle_pid and str(done) in grandchild.cmdline
    assert [p.pid for p in tree.chain(grandchild_pid)] == [root.pid, middle_pid, grandchild_pid]
    assert tree.chain(grandchild_pid)[1] == middle
    assert exits == set(by_pid) and not tree.live


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
