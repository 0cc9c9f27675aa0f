"""The spawning helper as a module: its batch rules, its protocol, its runs, and that it
stays self-contained (it runs by path under ``python -I -S``, where perflab can't be
imported).

The runs are real processes; time bounds are generous because the machine is shared.
"""

from __future__ import annotations

import ast
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from perflab.engines.cmd import spawn_helper
from perflab.engines.cmd.spawn_helper import (
    ENV_OFFSET_VAR,
    MAX_ENV_OFFSET,
    Helper,
    next_offset,
    receive,
    run_items,
    send,
    stops,
)

SH = shutil.which("sh") or "/bin/sh"
TRUE = shutil.which("true") or "/bin/true"
#: Modules built into CPython (or frozen): importing them adds next to nothing.
BUILT_IN = {"__future__", "marshal", "os", "signal", "sys", "time"}


def reply(code: int = 0, timed_out: bool = False, error: str = "") -> tuple:
    return (1000, 0, 0, 0, code, timed_out, 0, error)


def test_batch_rules() -> None:
    none: frozenset[int] = frozenset()
    assert stops(reply(error="Exec format error"), True, True, none)
    assert stops(reply(1), False, True, none), "a failed hook always stops the batch"
    assert stops(reply(timed_out=True), False, True, none)
    assert not stops(reply(0), False, False, none)
    assert not stops(reply(3), True, True, none), "--ignore-failure accepts every code"
    assert not stops(reply(3), True, False, frozenset({3}))
    assert stops(reply(4), True, False, frozenset({3}))
    assert stops(reply(-9), True, False, frozenset({9})), "a signal is never an accepted code"
    assert stops(reply(timed_out=True), True, False, none)


def test_run_items_stops_after_the_first_failing_item() -> None:
    codes = iter([0, 0, 2, 0])
    replies: list[tuple] = []
    items = [(("a",), None, True)] * 4
    run_items(lambda argv, timeout: reply(next(codes)), items, False, frozenset(), replies)
    assert [r[4] for r in replies] == [0, 0, 2]


def test_messages_round_trip_through_a_pipe() -> None:
    r, w = os.pipe()
    try:
        message = ([(("sh", "-c", "x" * 10_000), 1.5, True)], False, frozenset({1, 2}))
        send(w, message)
        assert receive(r) == message
        os.close(w)
        w = -1
        assert receive(r) is None, "end of file"
    finally:
        os.close(r)
        if w >= 0:
            os.close(w)


def test_environment_offsets_follow_the_seed() -> None:
    state, offsets = 7, []
    for _ in range(200):
        state = next_offset(state)
        offsets.append((state >> 33) % MAX_ENV_OFFSET)
    assert all(0 <= o < MAX_ENV_OFFSET for o in offsets) and len(set(offsets)) > 150
    assert next_offset(7) == next_offset(7)


@pytest.fixture
def helper(tmp_path: Path) -> Iterator[Helper]:
    """A Helper in this process, its alarm handler installed (as ``serve`` does)."""
    h = Helper(replies=-1, show_output=False, stdin_path="", seed=1)
    previous = signal.signal(signal.SIGALRM, h.on_alarm)
    yield h
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, previous)


def test_a_run_reports_exit_code_cpu_time_and_memory(helper: Helper) -> None:
    wall, user, system, rss, code, timed_out, start, error, memory = helper.run((TRUE,), None)
    assert memory is None  # not sampling (no --memory)
    assert wall > 0 and rss > 0 and code == 0 and not timed_out and error == ""
    assert start <= time.monotonic_ns()
    assert helper.run((SH, "-c", "exit 3"), None)[4] == 3
    assert helper.run((SH, "-c", "kill -9 $$"), None)[4] == -signal.SIGKILL


def test_a_program_that_cannot_start_is_an_error_not_an_exception(
    helper: Helper, tmp_path: Path
) -> None:
    script = tmp_path / "script"
    script.write_text("echo no shebang\n")
    script.chmod(0o755)
    reply_ = helper.run((str(script),), None)
    assert reply_[7] == "Exec format error" and reply_[0] == 0


def test_the_timeout_kills_the_run(helper: Helper) -> None:
    began = time.monotonic()
    wall, *_, code, timed_out, _, _, _ = helper.run((SH, "-c", "sleep 600"), 0.2)
    assert timed_out and code == -signal.SIGKILL
    assert time.monotonic() - began < 60  # 0.2 s timeout, not the 600 s sleep


def test_each_run_sees_an_offset_of_the_seeded_length(helper: Helper, tmp_path: Path) -> None:
    out = tmp_path / "env"
    helper.run((SH, "-c", f'printf %s "${ENV_OFFSET_VAR}" | wc -c > {out}'), None)
    assert int(out.read_text()) == (next_offset(1) >> 33) % MAX_ENV_OFFSET


def test_the_helper_runs_by_path_and_serves_batches(tmp_path: Path) -> None:
    requests_r, requests_w = os.pipe()
    replies_r, replies_w = os.pipe()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-I",
            "-S",
            spawn_helper.__file__,
            str(requests_r),
            str(replies_w),
            "0",
            "",
            "5",
        ],
        pass_fds=(requests_r, replies_w),
    )
    os.close(requests_r)
    os.close(replies_w)
    try:
        send(
            requests_w,
            (
                [((TRUE,), None, True), ((SH, "-c", "exit 4"), None, True), ((TRUE,), None, True)],
                False,
                frozenset(),
            ),
        )
        replies = receive(replies_r)
        assert [r[4] for r in replies] == [0, 4], "the failing run ends the batch"
        os.close(requests_w)
        requests_w = -1
        assert proc.wait(timeout=10) == 0, "end of the request pipe ends the helper"
    finally:
        if requests_w >= 0:
            os.close(requests_w)
        os.close(replies_r)
        if proc.poll() is None:
            proc.kill()


def test_the_helper_imports_only_built_in_modules() -> None:
    tree = ast.parse(Path(spawn_helper.__file__).read_text())
    guarded = {
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING"
        for n in ast.walk(node)
    }
    imported = set()
    for node in ast.walk(tree):
        if id(node) in guarded:
            continue
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add((node.module or "").split(".")[0])
    # perflab/engines/memory.py, loaded by path for --memory, holds to the same rule
    memory_tree = ast.parse((Path(spawn_helper.__file__).parents[1] / "memory.py").read_text())
    imported.discard("memory")
    for node in ast.walk(memory_tree):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
    assert imported <= BUILT_IN | {"threading"}, imported - BUILT_IN
