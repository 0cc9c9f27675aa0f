"""Comparing two runs at equal machine speed (perflab.analyze.compare.speed)."""

from __future__ import annotations

import re

import numpy as np

from perflab.analyze.compare.suite import compare_results
from perflab.model import Results
from perflab.model.comparison import SPEED_NORMALIZED
from tests.conftest import make_bench

REFERENCE_NS = 150_000  # the reference loop at the machine's usual speed


def run(
    code_s: float, machine: float, seed: int, reference: bool = True, processes: int = 12
) -> Results:
    """One run of two benchmarks whose ops take ``code_s`` at the usual machine speed, on a
    machine ``machine`` times slower; every process also meets its own speed (±10%), which
    its reference timings see as well as its samples."""
    rng = np.random.default_rng(seed)
    factors = machine * np.exp(rng.normal(0, 0.10, processes))
    benches = []
    for name, cost in (("a", code_s), ("b", 2 * code_s)):
        groups = [list(cost * f * np.exp(rng.normal(0, 0.01, 20))) for f in factors]
        bench = make_bench(name, groups)
        for proc, f in zip(bench.processes, factors):
            proc.reference_ns = (
                list((REFERENCE_NS * f * np.exp(rng.normal(0, 0.01, 5))).astype(int))
                if reference
                else []
            )
        benches.append(bench)
    return Results("run", ["perflab"], "2026-01-01T00:00:00+00:00", "0.1.0", benchmarks=benches)


def rows_by_metric(suite, metric: str) -> dict[str, str]:
    return {r.id: r.verdict for r in suite.rows if r.metric == metric}


def test_a_slower_machine_is_held_in_seconds_and_the_same_at_equal_speed() -> None:
    suite = compare_results(run(1e-3, 1.0, seed=1), run(1e-3, 1.25, seed=2))
    # the seconds ratios read slower, but two runs measured apart are not paired: held
    assert all(r.ratio.ci_low > 1.02 for r in suite.rows if r.metric == "time")
    assert set(rows_by_metric(suite, "time").values()) == {"inconclusive"}
    assert rows_by_metric(suite, SPEED_NORMALIZED) == {
        "g/a (CPU ÷ reference)": "same",
        "g/b (CPU ÷ reference)": "same",
    }
    warning = [w for w in suite.warnings if "the machine ran" in w]
    assert len(warning) == 1
    found = re.search(r"ran (\d+)% slower during B", warning[0])
    assert found and 15 <= int(found.group(1)) <= 35  # 25%, seen through 12 noisy processes
    # the gate reads the seconds only (held: nothing trips "slower"); the normalized rows
    # never enter the geometric mean
    assert suite.tripped(["slower"]) == [] and suite.not_applied(["slower"]) == ["g/a", "g/b"]
    assert suite.tripped(["same"]) == []
    assert suite.geomean_over == 2
    assert suite.counts["inconclusive"] == 2 and suite.counts["same"] == 0  # seconds only


def test_slower_code_on_the_same_machine_reads_slower_both_ways_without_a_warning() -> None:
    suite = compare_results(run(1e-3, 1.0, seed=3), run(1.3e-3, 1.0, seed=4))
    assert set(rows_by_metric(suite, "time").values()) == {"slower"}
    assert set(rows_by_metric(suite, SPEED_NORMALIZED).values()) == {"slower"}
    assert not [w for w in suite.warnings if "the machine ran" in w]


def test_files_without_reference_timings_get_no_normalized_rows() -> None:
    suite = compare_results(run(1e-3, 1.0, seed=5, reference=False), run(1e-3, 1.25, seed=6))
    assert rows_by_metric(suite, SPEED_NORMALIZED) == {}
    assert not [w for w in suite.warnings if "the machine ran" in w]
