"""A Ctrl-C during in-process measuring always stops it (engines/run/inprocess.py's
``CtrlC``), even when Python raised its KeyboardInterrupt inside a GC callback, where it
is dropped as "unraisable" (the pytest plugin then went on and exited 0)."""

from __future__ import annotations

import gc
import os
import signal
from typing import Any

import pytest

from perflab.engines.run.inprocess import CtrlC, InProcessBackend
from perflab.engines.run.runner import Settings
from perflab.engines.run.suite import BenchSpec
from tests.engines.run.test_inprocess import runner_of


def _interrupt_inside_a_gc_callback() -> None:
    """SIGINT to this process from inside a GC callback: Python runs the handler there,
    and the KeyboardInterrupt it raises is dropped."""

    def callback(phase: str, info: dict[str, Any]) -> None:
        if phase == "start" and callback in gc.callbacks:
            gc.callbacks.remove(callback)
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(1000):  # the handler runs at one of these bytecodes
                pass

    gc.callbacks.append(callback)
    gc.collect()


DROPPED = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


@DROPPED
def test_a_dropped_keyboard_interrupt_is_raised_again() -> None:
    with pytest.raises(KeyboardInterrupt):
        with CtrlC() as ctrl_c:
            _interrupt_inside_a_gc_callback()  # dropped: we go on
            ctrl_c.check()  # ... until the next check
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@DROPPED
def test_the_runner_stops_and_keeps_what_was_measured() -> None:
    calls = [0]

    def work() -> int:
        calls[0] += 1
        if calls[0] == 200:
            _interrupt_inside_a_gc_callback()
        return sum(range(50))

    settings = Settings(
        precision=0.001, budget_s=600, min_processes=3, max_processes=3, allocations=False
    )
    runner = runner_of(BenchSpec(work, "work", ""), settings, InProcessBackend(work))
    [bench] = runner.run()
    assert runner.interrupted  # was: went on measuring, as if no Ctrl-C came
    assert bench.stop_reason == "interrupted" and bench.processes  # what was measured
