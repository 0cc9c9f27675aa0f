"""interrupts: a stop signal becomes an interrupt, and every command's exit code is
128 + the signal's number (deterministic: the signals are sent to this process)."""

from __future__ import annotations

import os
import signal
import time

import pytest

from perflab import cli
from perflab.interrupts import Stopped, StopSignals, exit_code


@pytest.mark.parametrize("sig,code", [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_a_stop_signal_raises_and_sets_the_exit_code(sig: signal.Signals, code: int) -> None:
    with StopSignals() as stop:
        with pytest.raises(Stopped) as caught:
            os.kill(os.getpid(), sig)  # Python runs the handler before the next line
            time.sleep(1)
        stop.shield()
        os.kill(os.getpid(), signal.SIGTERM)  # shielded: remembered, not raised
        time.sleep(0.01)
    assert stop.exit_code(interrupted=True) == code and exit_code(caught.value) == code


def test_ctrl_c_alone_is_130_and_nothing_is_none() -> None:
    with StopSignals() as stop:
        pass
    assert stop.exit_code(interrupted=True) == 130 and stop.exit_code(False) is None
    assert exit_code(KeyboardInterrupt()) == 130


def test_an_interrupt_that_reaches_the_top_exits_with_its_signal(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def stopped(args: object) -> int:
        raise Stopped(signal.SIGTERM)

    assert cli._guarded(stopped, None) == 143  # type: ignore[arg-type]  # noqa: SLF001
    assert capsys.readouterr().err == "error: interrupted\n"
