"""The fault battery (tests/reliability/battery.py) as a test: every malformed input and
fault class against every subcommand, with 0 internal errors, 0 hangs, 0 data lost and
0 files outside the results touched. About 3 minutes on 2 cores (two cases at a time)."""

from __future__ import annotations

from tests.reliability import battery


def test_the_battery_has_no_problem() -> None:
    outcomes = battery.run_battery()
    bad = [
        f"{o.case.group}: {o.case.name}: {', '.join(o.problems)} (exit {o.code})"
        for o in outcomes
        if o.problems
    ]
    assert not bad, "\n".join(bad)
    assert len(outcomes) > 250
