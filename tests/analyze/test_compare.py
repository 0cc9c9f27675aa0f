"""perflab.analyze.compare.suite on synthetic samples of known distributions (no timing).

Every benchmark is built from seeded random numbers, so each verdict is
deterministic; the distributions are the shapes real benchmarks show:
shifted, equal, heavy-tailed (rare long samples), bimodal (two memory layouts).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perflab import environment
from perflab.analyze import decisions
from perflab.analyze.compare import suite as cmp
from perflab.errors import UsageError
from perflab.model import Benchmark, CommandRun, Results
from tests.conftest import lognormal_groups, make_bench

RESAMPLES = 1000


def results(*benches: Benchmark, env: dict | None = None) -> Results:
    return Results(
        "run",
        ["perflab"],
        "2026-01-01T00:00:00+00:00",
        "0.1.0",
        environment=env or {},
        benchmarks=list(benches),
    )


def pair(
    shift: float,
    processes: int = 10,
    samples: int = 40,
    sigma: float = 0.01,
    between: float = 0.005,
    seed: int = 0,
    name: str = "f",
) -> tuple[Benchmark, Benchmark]:
    """A and B of one benchmark: B's true median is (1 + shift) × A's."""
    a = make_bench(name, lognormal_groups(1e-6, processes, samples, sigma, between, seed))
    b = make_bench(
        name, lognormal_groups(1e-6 * (1 + shift), processes, samples, sigma, between, seed + 1000)
    )
    return a, b


def one(a: Benchmark, b: Benchmark, threshold: float = 0.02) -> cmp.Row:
    rows = cmp.compare_benchmark(a, b, threshold, resamples=RESAMPLES)
    assert len(rows) == 1
    return rows[0]


@pytest.mark.parametrize(
    "low, high, hib, expected",
    [
        (1.03, 1.10, False, "slower"),
        (0.90, 0.97, False, "faster"),
        (0.99, 1.01, False, "same"),
        (0.98, 1.02, False, "same"),
        (0.99, 1.05, False, "inconclusive"),
        (0.90, 1.10, False, "inconclusive"),
        (1.03, 1.10, True, "faster"),
        (0.90, 0.97, True, "slower"),
        (1.02, 1.05, False, "inconclusive"),
        (0.0, math.inf, False, "inconclusive"),
        (math.nan, 1.0, False, "inconclusive"),
    ],
)
def test_verdict_against_the_threshold(low: float, high: float, hib: bool, expected: str) -> None:
    assert decisions.verdict(low, high, 0.02, hib) == expected


def test_expansion_factor_widens_small_samples_and_vanishes_for_large() -> None:
    assert decisions.expansion_factor(5) == pytest.approx(1.584, abs=0.01)
    assert decisions.expansion_factor(20) == pytest.approx(1.096, abs=0.01)
    assert decisions.expansion_factor(10_000) == pytest.approx(1.0, abs=0.001)
    assert decisions.expansion_factor(1) == math.inf
    factors = [decisions.expansion_factor(n) for n in range(2, 40)]
    assert factors == sorted(factors, reverse=True)


@pytest.mark.parametrize(
    "shift, expected", [(0.10, "slower"), (-0.10, "faster"), (0.05, "slower"), (-0.05, "faster")]
)
def test_shifted_distributions_are_called(shift: float, expected: str) -> None:
    row = one(*pair(shift))
    assert row.verdict == expected
    assert row.ratio.ci_low < 1 + shift < row.ratio.ci_high
    assert row.p_value < 0.01


def test_equal_distributions_with_tight_cis_are_the_same() -> None:
    row = one(*pair(0.0, processes=20, sigma=0.005, between=0.002))
    assert row.verdict == "same"
    assert row.ratio.ci_low <= 1 <= row.ratio.ci_high


def test_a_change_inside_the_threshold_is_not_an_alarm() -> None:
    row = one(*pair(0.005, processes=20, sigma=0.005, between=0.002))
    assert row.verdict == "same"


def test_a_change_straddling_the_threshold_is_inconclusive() -> None:
    row = one(*pair(0.02, processes=6, sigma=0.02, between=0.01))
    assert row.verdict == "inconclusive"


def heavy_tailed(median: float, processes: int, samples: int, seed: int) -> list[list[float]]:
    """Lognormal samples with 5% Pareto-tailed long samples (interrupts, GC)."""
    rng = np.random.default_rng(seed)
    groups = []
    for _ in range(processes):
        values = median * np.exp(rng.normal(0, 0.01, samples))
        hit = rng.random(samples) < 0.05
        values[hit] *= 1 + rng.pareto(1.5, hit.sum()) * 2
        groups.append(list(values))
    return groups


def test_heavy_tails_neither_hide_a_shift_nor_invent_one() -> None:
    a = make_bench("f", heavy_tailed(1e-6, 10, 50, 1))
    assert one(a, make_bench("f", heavy_tailed(1.1e-6, 10, 50, 2))).verdict == "slower"
    assert one(a, make_bench("f", heavy_tailed(1e-6, 10, 50, 3))).verdict in (
        "same",
        "inconclusive",
    )


def bimodal(median: float, processes: int, seed: int, slow_mode: float = 1.15) -> list[list[float]]:
    """Each process lands in one of two modes (e.g. two memory layouts), 50/50."""
    rng = np.random.default_rng(seed)
    return [
        list(median * (slow_mode if rng.random() < 0.5 else 1.0) * np.exp(rng.normal(0, 0.005, 30)))
        for _ in range(processes)
    ]


def test_bimodal_processes_are_not_called_different_by_the_mode_draw() -> None:
    # a false alarm needs the 95% CI wholly beyond ±2%: nominally under 2.5% of trials;
    # 5% allows for the t-interval on a two-point (bimodal) distribution of 8 processes
    verdicts = [
        one(
            make_bench("f", bimodal(1e-6, 8, s)), make_bench("f", bimodal(1e-6, 8, s + 500))
        ).verdict
        for s in range(200)
    ]
    assert verdicts.count("slower") + verdicts.count("faster") <= 10, verdicts


def test_bimodal_with_a_real_shift_is_slower() -> None:
    a = make_bench("f", bimodal(1e-6, 12, 7))
    b = make_bench("f", [list(np.asarray(g) * 1.3) for g in bimodal(1e-6, 12, 8)])
    assert one(a, b).verdict == "slower"


def test_a_a_false_alarms_stay_rare_when_processes_differ() -> None:
    """Process-to-process spread (3%) larger than the threshold: the CI over processes,
    not samples, keeps A/A comparisons from crying wolf."""
    alarms = 0
    for seed in range(60):
        a, b = pair(0.0, processes=5, samples=30, sigma=0.01, between=0.03, seed=seed)
        alarms += one(a, b).verdict in ("slower", "faster")
    assert alarms <= 3  # ≤ 5% of 60


def test_expanded_ci_covers_the_true_ratio_with_five_processes() -> None:
    covered = 0
    for seed in range(100):
        a, b = pair(0.0, processes=5, samples=20, sigma=0.005, between=0.03, seed=seed)
        row = one(a, b)
        covered += row.ratio.ci_low <= 1.0 <= row.ratio.ci_high
    assert covered >= 90  # nominal 95%; the unexpanded percentile CI gets ~85% here


def test_the_unit_is_the_process_not_the_sample() -> None:
    """Thousands of samples from 2 processes must not give a tight CI."""
    a, b = pair(0.10, processes=2, samples=500, sigma=0.01, between=0.03)
    row = one(a, b)
    assert row.verdict == "inconclusive"
    assert row.ratio.ci_high - row.ratio.ci_low > 0.1


def test_one_process_per_side_can_never_decide() -> None:
    """Samples of one process share its layout and luck: 50 of them are not 50 units."""
    a, b = pair(0.3, processes=1, samples=50)
    row = one(a, b)
    assert any("one process" in n for n in row.notes)
    assert row.verdict == "inconclusive" and row.ratio.value == pytest.approx(1.3, rel=0.02)


def command_bench(walls_s: list[float], name: str = "sleep 0") -> Benchmark:
    runs = [CommandRun(i, float(i), int(w * 1e9)) for i, w in enumerate(walls_s)]
    runs.append(CommandRun(99, 99.0, int(50e9), ok=False))
    runs.append(CommandRun(98, 98.0, int(1e3), warmup=True))
    return Benchmark(name=name, kind="command", runs=runs)


def test_command_runs_are_processes_with_one_value() -> None:
    rng = np.random.default_rng(3)
    a = command_bench(list(0.010 * np.exp(rng.normal(0, 0.01, 20))))
    b = command_bench(list(0.012 * np.exp(rng.normal(0, 0.01, 20))))
    row = one(a, b)
    assert row.verdict == "slower"
    assert (row.a.units, row.b.units) == (20, 20)  # failed and warmup runs left out
    assert row.ratio.value == pytest.approx(1.2, rel=0.02)


def test_one_run_per_side_can_never_decide() -> None:
    row = one(command_bench([0.01]), command_bench([0.02]))
    assert row.verdict == "inconclusive"


def test_failed_side_gives_a_failed_row_with_the_reason() -> None:
    a, _ = pair(0.0)
    b = Benchmark(name="f", group="g", error="ValueError in call 1")
    row = one(a, b)
    assert row.verdict == "failed" and "ValueError" in row.notes[0]


def test_kinds_that_differ_are_failed_not_compared() -> None:
    a, _ = pair(0.0, name="x")
    b = command_bench([0.01, 0.02], name="x")
    b.group = "g"
    assert one(a, b).verdict == "failed"


def test_suite_lists_missing_benchmarks_and_counts_verdicts() -> None:
    a1, b1 = pair(0.10, name="slow", seed=1)
    a2, b2 = pair(0.0, name="same", processes=20, sigma=0.005, between=0.002, seed=2)
    gone = make_bench("gone", lognormal_groups(1e-6, 3, 5))
    new = make_bench("new", lognormal_groups(1e-6, 3, 5))
    suite = cmp.compare_results(results(a1, a2, gone), results(b1, b2, new), resamples=RESAMPLES)
    assert suite.only_in_a == ["g/gone"] and suite.only_in_b == ["g/new"]
    assert suite.counts["slower"] == 1 and suite.counts["same"] == 1
    assert suite.tripped(["slower"]) == ["g/slow"]
    assert suite.tripped(["missing"]) == ["g/gone"]
    assert suite.cost["A"]["benchmarks"] == 2 and suite.cost["A"]["processes"] == 30
    assert suite.geomean.ci_low < suite.geomean.value < suite.geomean.ci_high
    assert suite.geomean.value == pytest.approx(math.sqrt(1.1), rel=0.02)


def drifting(name: str, start: float, end: float, seed: int) -> Benchmark:
    """Process medians moving steadily from ``start`` to ``end`` × 1 µs in run order."""
    rng = np.random.default_rng(seed)
    return make_bench(
        name,
        [list(1e-6 * f * np.exp(rng.normal(0, 0.005, 20))) for f in np.linspace(start, end, 16)],
    )


def test_a_run_whose_machine_changed_is_flagged() -> None:
    """A/A where A's machine got 10% slower during its run: CIs inside a run can't see
    how far two runs apart in time may differ, so the drift is reported."""
    a = [drifting(f"b{i}", 1.0, 1.1, i) for i in range(3)]
    b = [drifting(f"b{i}", 1.0, 1.0, 10 + i) for i in range(3)]
    suite = cmp.compare_results(results(*a), results(*b), resamples=300)
    for row in suite.rows:
        assert row.drift.keys() == {"A"} and row.drift["A"] == pytest.approx(0.07, abs=0.02)
        assert any(n.startswith("A drifted +") for n in row.notes)
    (warning,) = [w for w in suite.warnings if "changed during its run" in w]
    assert warning.startswith("A's machine changed during its run: 3 of 3 benchmarks")


def test_steady_runs_are_not_called_drifting() -> None:
    flagged = 0
    for seed in range(20):
        a, b = pair(0.0, processes=12, samples=20, sigma=0.01, between=0.01, seed=seed)
        flagged += bool(one(a, b).drift)
    assert flagged <= 1


def test_no_benchmark_in_common_is_a_usage_error() -> None:
    a, _ = pair(0.0, name="x")
    _, b = pair(0.0, name="y")
    with pytest.raises(UsageError, match="no benchmark in common.*g/x.*g/y"):
        cmp.compare_results(results(a), results(b), names=("a.json", "b.json"))


def test_repeated_ids_are_kept_apart() -> None:
    a, b = pair(0.0, name="x")
    suite = cmp.compare_results(results(a, a), results(b), resamples=200)
    assert suite.only_in_a == ["g/x #2"]


def test_geometric_mean_of_a_uniform_slowdown() -> None:
    benches = [pair(0.08, name=f"b{i}", seed=i) for i in range(6)]
    suite = cmp.compare_results(
        results(*[a for a, _ in benches]), results(*[b for _, b in benches]), resamples=RESAMPLES
    )
    assert suite.geomean.ci_low < 1.08 < suite.geomean.ci_high
    assert suite.geomean_verdict == "slower"
    assert any("machine-wide" in w for w in suite.warnings)


def test_benjamini_hochberg_matches_the_hand_computation() -> None:
    p = [0.01, 0.04, 0.03, 0.20, math.nan]
    q = decisions.benjamini_hochberg(p)
    # sorted p 0.01, 0.03, 0.04, 0.20 → p·m/rank 0.04, 0.06, 0.0533, 0.20 → step-up minimum
    assert q[:4] == pytest.approx([0.04, 0.0533333, 0.0533333, 0.20])
    assert math.isnan(q[4])


def test_mann_whitney_p_edge_cases() -> None:
    assert math.isnan(decisions.mann_whitney_p([], [1.0]))
    assert math.isnan(decisions.mann_whitney_p([1.0, 1.0], [1.0]))
    assert decisions.mann_whitney_p([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]) == pytest.approx(2 / 252)


def test_environment_differences_are_plain_words() -> None:
    env_a = {
        "hostname": "ci-1",
        "cpu_model": "Intel X",
        "cpu_count": 2,
        "python": {"version": "3.12.1", "implementation": "CPython"},
        "clocksource": {"current": "tsc"},
        "governor": None,
        "load_average_start": [0.1, 0.1, 0.1],
    }
    env_b = {
        **env_a,
        "hostname": "laptop",
        "cpu_model": "AMD Y",
        "python": {"version": "3.13.0", "implementation": "CPython"},
        "clocksource": {"current": "hpet"},
        "governor": "powersave",
        "load_average_start": [4.0, 3.0, 2.0],
    }
    text = "\n".join(environment.environment_differences(env_a, env_b))
    assert "different machines" in text and "CPU differs: A 'Intel X', B 'AMD Y'" in text
    assert "Python version differs" in text and "clocksource differs" in text
    assert "governor" not in text  # unknown in A: not compared
    assert "B's machine was busy" in text and "A's machine" not in text
    assert environment.environment_differences(env_a, env_a) == []


@settings(max_examples=25, deadline=None)
@given(shift=st.floats(-0.3, 0.3), seed=st.integers(0, 10_000))
def test_swapping_a_and_b_inverts_the_ratio_and_mirrors_the_verdict(
    shift: float, seed: int
) -> None:
    a, b = pair(shift, processes=6, samples=10, seed=seed)
    forward = cmp.compare_benchmark(a, b, resamples=300, seed=seed)[0]
    backward = cmp.compare_benchmark(b, a, resamples=300, seed=seed)[0]
    assert forward.ratio.value * backward.ratio.value == pytest.approx(1.0)
    mirror = {"slower": "faster", "faster": "slower"}
    if forward.verdict in mirror:
        # the CIs come from different bootstrap draws; a mirrored call may be inconclusive
        assert backward.verdict in (mirror[forward.verdict], "inconclusive")
    assert forward.p_value == pytest.approx(backward.p_value)


@settings(max_examples=30, deadline=None)
@given(low=st.floats(0.5, 1.5), width=st.floats(0, 0.5), t=st.floats(0, 0.2))
def test_verdict_is_a_function_of_where_the_ci_lies(low: float, width: float, t: float) -> None:
    high = low + width
    word = decisions.verdict(low, high, t)
    assert (word == "slower") == (low > 1 + t)
    assert (word == "faster") == (high < 1 - t)
    assert (word == "same") == (low >= 1 - t and high <= 1 + t)


def test_compare_prints_the_medians_and_cis_that_run_printed() -> None:
    """issue 11: compare pooled the processes' samples and bootstrapped them, so its median
    of a file differed from run's for the same file; now both are
    summary.median_estimate's (several processes: process_location; one: the bootstrap)."""
    from perflab.analyze.run.ratios import summarize_benchmarks

    a = results(
        make_bench("f", lognormal_groups(1e-6, 10, 20, 0.02, 0.05, 1)),
        make_bench("g", lognormal_groups(2e-6, 1, 20, 0.02, 0.05, 2)),
    )
    b = results(
        make_bench("f", lognormal_groups(1.1e-6, 12, 20, 0.02, 0.05, 3)),
        make_bench("g", lognormal_groups(2e-6, 4, 20, 0.02, 0.05, 4)),
    )
    suite = cmp.compare_results(a, b)
    for side, res in (("a", a), ("b", b)):
        printed = {
            s.id: s for group in summarize_benchmarks(res.benchmarks).values() for s in group
        }
        for row in suite.rows:
            got, run = getattr(row, side), printed[row.id]
            est = got.estimate
            assert (est.value, est.ci_low, est.ci_high) == (
                run.median_s,
                run.ci_low_s,
                run.ci_high_s,
            )
    f = next(r for r in suite.rows if r.id == "g/f")
    assert f.ratio.ci_low < 1.1 < f.ratio.ci_high and f.log_replicates is not None
