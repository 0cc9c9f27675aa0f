"""``perflab http``'s live progress: what a person sees while the sweep runs says the
verdict the final table will print, never another (issue 29), drawn from synthetic
steps on a fake terminal (nothing is timed)."""

from __future__ import annotations

import io
import re
from types import SimpleNamespace
from typing import Any

from perflab.analyze.http import summarize_steps
from perflab.report.http_table import PENDING
from tests.analyze.test_http import step
from tests.analyze.test_http_verdicts import erring
from tests.conftest import http_args

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
RESULTS = SimpleNamespace(settings={"slo": None, "ok": "200-299"})


def _drawn(rates: str, draw: Any) -> str:
    """What the live progress draws on a 200-column terminal while ``draw(live)`` feeds
    it, escape sequences removed."""
    from rich.console import Console

    from perflab.commands.http import _Live
    from perflab.commands.options import http_plan

    plan = http_plan(
        http_args("http://127.0.0.1:9/", "--rate", rates, "--duration", "2s"), check=False
    )
    console = Console(file=io.StringIO(), force_terminal=True, width=200, color_system=None)
    with _Live(plan, console) as live:
        draw(live)
    return ANSI.sub("", console.file.getvalue())


SNAP = {"in_warmup": False, "achieved_rate": 950.0, "failures": 50, "p99_us": 2000.0, "wall_s": 1.0}


def test_the_bar_says_no_verdict_and_a_finished_step_says_the_tables() -> None:
    steps = [step(1000.0), erring(2000.0, 0.05), step(3000.0, cpu=0.97)]
    table = [s.verdict for s in summarize_steps(steps)]
    assert table == ["ok", "errors", "generator-limited"]

    running: list[str] = []

    def sweep(live: Any) -> None:
        for i in range(len(steps)):
            live.update(i, len(steps), SNAP)
            running.append(live.progress.tasks[i].fields["status"])
            live.step_done(RESULTS, steps[: i + 1])

    text = _drawn("1000,2000,3000", sweep)
    # while a step runs, its bar gives figures only ("950/s ok" read as a verdict)
    assert running == ["achieved 950/s, 50 failed, p99 2.00 ms"] * 3
    assert "step 1/3 1,000/s: achieved 1,000/s, drained 0, errors 0, p99 2.00 ms, ok" in text
    assert "step 2/3 2,000/s: achieved 1,900/s, drained 0, errors 5.00%, p99 2.00 ms, " in text
    assert "errors: 5.0% failed (status 500)" in text
    assert "step 3/3 3,000/s: " in text and "generator-limited: engine thread 97% busy" in text
    # each finished bar ends on its verdict: the last frame shows all three
    last = text.rsplit("step 3/3 3,000/s: ", 1)[1]
    bars = [line.split()[-1] for line in last.splitlines() if "━" in line]
    assert bars[-3:] == table


def test_a_verdict_a_lighter_step_may_change_waits() -> None:
    # run heaviest first: 3,000/s looks ok, but 2,000/s (run last) saturates
    steps = [step(3000.0), step(1000.0), step(2000.0, achieved=1000.0)]

    def sweep(live: Any) -> None:
        for i in range(len(steps)):
            live.update(i, len(steps), SNAP)
            live.step_done(RESULTS, steps[: i + 1])

    text = _drawn("3000,1000,2000", sweep)
    assert (
        f"step 1/3 3,000/s: achieved 3,000/s, drained 0, errors 0, p99 2.00 ms, {PENDING}" in text
    )
    assert "step 2/3 1,000/s: achieved 1,000/s, drained 0, errors 0, p99 2.00 ms, ok" in text
    assert "step 3/3 2,000/s: achieved 1,000/s" in text and "saturated: achieved 50%" in text
    first = text.split("step 1/3 3,000/s: ")[1].splitlines()[0]
    assert ", ok" not in first
    # once the lighter step ran, step 1 gets its line (after step 3's) and its bar
    later = text.split("step 3/3 2,000/s: ")[1]
    assert (
        "step 1/3 3,000/s: achieved 3,000/s, drained 0, errors 0, p99 2.00 ms, saturated: "
        "heavier than 2,000/s, already saturated"
    ) in later
    bars = [line.split("━ ")[-1].strip() for line in later.splitlines() if "━" in line]
    assert bars[-3:] == ["saturated", "ok", "saturated"]
