"""A results file measured earlier as baseline: when the machine's speed reference moved
beyond the noise threshold between the two runs, no seconds verdict is "slower" or
"faster" (it is inconclusive, saying why) and the --fail-on gate does not trip on it.
Synthetic results files: deterministic."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from perflab import model
from perflab.analyze.compare.suite import compare_results
from perflab.model.comparison import SPEED_NORMALIZED
from perflab.report.compare_table import gate
from tests.analyze.test_compare_speed import run

HELD = re.compile(
    r"inconclusive: the machine ran (\d+)% slower during B; measure paired with --compare-to REF"
)


def time_verdicts(suite) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {r.id: r.verdict for r in suite.rows if r.metric == "time"}


def test_a_machine_30_percent_slower_makes_the_verdicts_inconclusive() -> None:
    suite = compare_results(run(1e-3, 1.0, seed=1), run(1e-3, 1.30, seed=2))
    assert time_verdicts(suite) == {"g/a": "inconclusive", "g/b": "inconclusive"}
    for row in suite.rows:
        if row.metric == "time":
            found = [HELD.fullmatch(n) for n in row.notes if HELD.fullmatch(n)]
            assert found and 20 <= int(found[0].group(1)) <= 40, row.notes
            assert row.ratio is not None and row.ratio.ci_low > 1.1  # the figure stays shown
    assert suite.held == {"g/a": "slower", "g/b": "slower"}
    assert suite.machine_speed is not None and suite.machine_speed.ci_low > 1.02
    assert suite.geomean_verdict == "inconclusive"
    assert suite.counts["slower"] == 0 and suite.counts["inconclusive"] == 2
    assert suite.tripped(["slower"]) == [] and suite.tripped(["faster"]) == []
    # asked for explicitly, "inconclusive" still trips
    assert suite.tripped(["inconclusive"]) == ["g/a", "g/b"]
    # the speed-normalized rows keep their verdicts (the reference is divided out there)
    assert {r.verdict for r in suite.rows if r.metric == SPEED_NORMALIZED} == {"same"}


def test_a_machine_that_ran_faster_is_held_too() -> None:
    suite = compare_results(run(1e-3, 1.3, seed=3), run(1e-3, 1.0, seed=4))
    assert set(time_verdicts(suite).values()) == {"inconclusive"}
    assert any("the machine ran" in n and "faster during B" in n for n in suite.rows[0].notes)


def test_an_unchanged_machine_leaves_the_verdict_standing() -> None:
    suite = compare_results(run(1e-3, 1.0, seed=5), run(1.3e-3, 1.0, seed=6))
    assert time_verdicts(suite) == {"g/a": "slower", "g/b": "slower"}
    assert suite.held == {} and suite.tripped(["slower"]) == ["g/a", "g/b"]
    assert not any(HELD.search(n) for r in suite.rows for n in r.notes)


def test_without_reference_timings_the_verdict_stands() -> None:
    suite = compare_results(run(1e-3, 1.0, seed=7, reference=False), run(1e-3, 1.3, seed=8))
    assert set(time_verdicts(suite).values()) == {"slower"}
    assert suite.held == {} and suite.machine_speed is None


def test_the_gate_says_in_one_line_why_it_did_not_fail(capsys: pytest.CaptureFixture[str]) -> None:
    suite = compare_results(run(1e-3, 1.0, seed=1), run(1e-3, 1.30, seed=2))
    assert gate(suite.tripped(["slower"]), ["slower"], held=suite.held_reason(["slower"])) == 0
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1
    assert re.fullmatch(
        r"gate: --fail-on slower not applied to 2 benchmark\(s\) \(g/a, g/b\): inconclusive, "
        r"the machine ran \d+% slower during B than during A; measure paired with "
        r"--compare-to REF",
        lines[0],
    ), lines[0]
    assert suite.held_reason(["same"]) == ""  # held rows were never going to trip "same"


def _save(path: Path, results) -> Path:  # type: ignore[no-untyped-def]
    for bench in results.benchmarks:
        for proc in bench.processes:
            proc.reference_ns = [int(ns) for ns in proc.reference_ns]
    model.save(results, path)
    return path


def test_perflab_compare_exits_0_under_fail_on_slower_when_the_machine_moved(
    tmp_path: Path, perflab_cli
) -> None:  # type: ignore[no-untyped-def]
    a = _save(tmp_path / "a.json", run(1e-3, 1.0, seed=1))
    b = _save(tmp_path / "b.json", run(1e-3, 1.30, seed=2))
    out = tmp_path / "c.json"
    done = perflab_cli(
        "compare", str(a), str(b), "--fail-on", "slower", "--json", str(out), "--format", "markdown"
    )
    assert done.returncode == 0, done.stderr
    gate_lines = [line for line in done.stderr.splitlines() if line.startswith("gate:")]
    assert len(gate_lines) == 1 and "not applied to 2 benchmark(s)" in gate_lines[0]
    assert "inconclusive" in done.stdout and "measure paired with --compare-to REF" in done.stdout
    doc = json.loads(out.read_text())
    assert doc["gate"]["tripped"] == [] and doc["gate"]["held"] == ["g/a", "g/b"]
    assert doc["machine_speed"]["ci_low"] > 1.02
    shown = perflab_cli("show", str(out), "--format", "csv")
    assert shown.returncode == 0, shown.stderr


def test_perflab_compare_still_fails_a_real_slowdown_on_a_steady_machine(
    tmp_path: Path, perflab_cli
) -> None:  # type: ignore[no-untyped-def]
    a = _save(tmp_path / "a.json", run(1e-3, 1.0, seed=5))
    b = _save(tmp_path / "b.json", run(1.3e-3, 1.0, seed=6))
    done = perflab_cli("compare", str(a), str(b), "--fail-on", "slower")
    assert done.returncode == 1, done.stderr
    assert "gate: --fail-on slower tripped by 2 benchmark(s): g/a, g/b" in done.stderr
    assert "not applied" not in done.stderr
