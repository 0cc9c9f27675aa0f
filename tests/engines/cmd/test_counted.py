"""perflab cmd's counted runs: a whole command under Callgrind, children followed and
summed (skipped without Valgrind), and the summing itself."""

from __future__ import annotations

import shutil

import pytest

from perflab.engines.callgrind import Dump
from perflab.engines.cmd.counted import count_command, sum_dumps


def test_sum_over_processes_and_events() -> None:
    dumps = [
        Dump(1, 1, None, "Program termination", {"Ir": 10}),
        Dump(2, 1, None, "Program termination", {"Ir": 5, "Dr": 2}),
        Dump(2, 2, None, "Program termination", {"Ir": 1, "Dr": 1}),
    ]
    assert sum_dumps(dumps) == (["Ir", "Dr"], [16, 3], 2)


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="Valgrind is not installed")
def test_children_are_counted_and_the_layouts_drawn() -> None:
    sh = shutil.which("sh")
    echo = shutil.which("echo")
    assert sh and echo
    one = count_command([sh, "-c", f"{echo} a"], runs=2, timeout_s=120)
    two = count_command([sh, "-c", f"{echo} a; {echo} b"], runs=1, timeout_s=120)
    assert [r.error for r in one + two] == [None, None, None]
    assert one[0].layout != one[1].layout  # each run its own layout
    assert one[0].layout == count_command([sh, "-c", "true"], runs=1)[0].layout  # seed 0
    c1, c2 = one[0].counts, two[0].counts
    assert c1 is not None and c2 is not None
    assert (c1.processes, c2.processes) == (2, 3)  # sh, then each echo it ran
    assert c1.events == ["Ir"] and c1.totals[0] > 10_000
    assert c2.totals[0] > c1.totals[0]  # a second child adds its instructions


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="Valgrind is not installed")
def test_a_failing_command_is_failed() -> None:
    sh = shutil.which("sh")
    assert sh
    (run,) = count_command([sh, "-c", "exit 3"], runs=1, timeout_s=120)
    assert run.exit_code == 3 and run.error == "exited with 3" and run.counts is None
