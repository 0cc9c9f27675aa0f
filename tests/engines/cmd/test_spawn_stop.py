"""Stopping the spawning helper is bounded: a helper that does not answer SIGTERM (here
stopped with SIGSTOP) is killed after ``STOP_WAIT_S`` instead of being waited for forever."""

from __future__ import annotations

import os
import shutil
import signal

import pytest

from perflab.engines.cmd import spawn
from perflab.engines.cmd.spawn import PosixSpawner


def test_a_helper_that_does_not_answer_a_stop_is_killed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spawn, "STOP_WAIT_S", 0.5)
    spawner = PosixSpawner()
    assert spawner.run((shutil.which("true") or "/bin/true",), 10).exit_code == 0
    helper = spawner._proc
    os.kill(helper.pid, signal.SIGSTOP)  # deaf to SIGTERM until continued
    spawner.close()  # was: blocked reading the helper's replies for ever
    assert helper.returncode == -signal.SIGKILL
    assert spawner.run((shutil.which("true") or "/bin/true",), 10).exit_code == 0  # a new one
    spawner.close()
