"""The run tables: CI cells, ratios, caveat footnotes and the threads table's wording."""

from __future__ import annotations

import math

import pytest

from perflab.analyze.run.groups import thread_rows
from perflab.analyze.run.ratios import summarize_group
from perflab.analyze.run.summary import Caveat
from perflab.report.run_table import caveat_lines, group_table, threads_table
from perflab.report.table import estimate_cell
from tests.conftest import lognormal_groups, make_bench
from tests.engines.run.test_threads import threaded_bench


def test_an_asymmetric_ci_is_printed_side_by_side() -> None:
    """issue 11: "663 ns ± 546.5%" for a CI of 585 ns–7.83 µs; issue 29: each side as a
    percentage of the value, and a CI whose ends are over 30× apart named by its width
    ("98.7 ns–280 s" read as nothing)."""
    assert estimate_cell(663e-9, 585e-9, 7.83e-6) == "663 ns −12% +1,081%"
    assert estimate_cell(1e-3, 98.7e-9, 280.0) == "1.00 ms (CI over a million times wide)"
    assert estimate_cell(1e-3, 0.1e-3, 5e-3) == "1.00 ms (CI 50× wide)"
    assert estimate_cell(1e-3, 0.99e-3, 1.01e-3) == "1.00 ms ± 1.0%"
    # a small asymmetry in a tight CI still reads as ± (sides 0.8% and 1.2%)
    assert estimate_cell(1e-3, 0.992e-3, 1.012e-3) == "1.00 ms ± 1.0%"
    assert estimate_cell(math.nan, 1, 2) == "–"


def test_a_one_benchmark_group_prints_no_ratio_ci_to_itself() -> None:
    """issue 11: "1.00× (0.58–1.71)" in a group of one."""
    (summary,) = summarize_group([make_bench("only", lognormal_groups(1e-6, 5, 20, sigma=0.3))])
    table = group_table("g", [summary])
    assert table.rows[0][table.columns.index("× best")] == "1.00×"


def test_the_best_and_the_baseline_have_bare_ratios_to_themselves() -> None:
    fast = make_bench("fast", lognormal_groups(1e-6, 6, 30, seed=1), baseline=True)
    slow = make_bench("slow", lognormal_groups(2e-6, 6, 30, seed=2))
    table = group_table("g", summarize_group([fast, slow], seed=0))
    best, base = table.columns.index("× best"), table.columns.index("× baseline")
    assert table.rows[0][best] == "1.00×" and table.rows[0][base] == "1.00×"
    assert table.rows[1][best][:4] in ("1.99", "2.00", "2.01") and "(" in table.rows[1][best]


def test_threads_compare_with_the_baseline_on_the_same_thread_count() -> None:
    """issue 11: "spinning ×8t × baseline 2.27×" came from the baseline's 1-thread row
    while the same thread counts differed 19×."""
    lock = [threaded_bench("lock", n, 1e-6 / n, [100] * n) for n in (1, 8)]
    spin = [threaded_bench("spin", n, 2e-6 / n * (19 if n == 8 else 1), [100] * n) for n in (1, 8)]
    for bench in lock:
        bench.baseline = True
    benches = lock + spin
    summaries = summarize_group(benches, seed=0)
    table = group_table("g", summaries, threaded=True)
    column = table.columns.index("× baseline (same threads)")
    assert "× best (same threads)" in table.columns
    cells = {row[0]: row[column] for row in table.rows}
    assert cells["spin ×1t"].startswith("2.0") and cells["spin ×8t"].startswith("38.")
    assert cells["lock ×8t"] == "1.00×"


def test_the_threads_footnote_says_what_the_code_times() -> None:
    """issue 11: it said "every call is timed"; one call between untimed batches is."""
    benches = [threaded_bench("lock", 2, 1e-6, [100, 100])]
    summaries = summarize_group(benches, seed=0)
    lines = threads_table("t", thread_rows(benches, summaries), summaries).footnotes
    text = " ".join(lines)
    assert "every call is timed" not in text
    assert "times one call (two perf_counter_ns reads) between batches of untimed calls" in text
    assert "40.0 µs" in text


def test_caveats_are_grouped_by_kind_with_the_advice_once() -> None:
    """issue 14: the same sentence per benchmark, 24 bullets in the demo."""
    named = [
        (
            f"b{i}",
            [
                Caveat("unstable", f"±{6 + i}%", f"samples vary by ±{6 + i}%"),
                Caveat("precision not reached", "±2.0%", "stopped at the budget"),
            ],
        )
        for i in range(3)
    ]
    lines = caveat_lines(named)
    assert len(lines) == 2
    assert lines[0].startswith("precision not reached (the CI is wider than asked")
    assert "): b0 ±2.0%, b1 ±2.0%, b2 ±2.0%; raise --budget" in lines[0]
    assert lines[1].count("close other programs") == 1 and "b2 ±8%" in lines[1]
    verbose = caveat_lines(named, verbose=True)
    assert (
        len(verbose) == 6
        and verbose[0]
        == "b0: unstable: samples vary by ±6%; close other programs or raise --budget"
    )


@pytest.mark.parametrize("n", [1, 2])
def test_counts_agree_with_their_nouns(n: int) -> None:
    from perflab.analyze.run.summary import plural

    assert plural(n, "sample") == ("1 sample" if n == 1 else "2 samples")
    assert plural(n, "process", "processes") == ("1 process" if n == 1 else "2 processes")


def test_threads_table_shows_scaling_fairness_and_the_interpreter() -> None:
    benches = [
        threaded_bench("lock", 1, 1e-6, [100]),
        threaded_bench("lock", 2, 0.5e-6, [100, 100]),
    ]
    summaries = summarize_group(benches, seed=0)
    table = threads_table("t", thread_rows(benches, summaries), summaries)
    assert table.columns[:5] == [
        "benchmark",
        "threads",
        "ops/s ± CI",
        "ops/s per thread",
        "× 1 thread",
    ]
    one, two = table.rows
    assert one[4] == "1.00×" and two[4] == "2.00×"
    assert two[3] == "980 k/s"  # 1 / (0.5 µs × 1.02 median drift) / 2 threads
    assert two[8:10] == ["1.00", "1.000"]
    assert any("GIL enabled" in line for line in table.footnotes)
    free = [threaded_bench("lock", 1, 1e-6, [5], gil=False)]
    assert any(
        "free-threaded" in line
        for line in threads_table(
            "t", thread_rows(free, summarize_group(free)), summarize_group(free)
        ).footnotes
    )


def test_the_footnotes_say_which_mode_made_each_count() -> None:
    """The pytest plugin's in-process repetitions are not processes: the count footnote
    names them as such (issue 16: say in the table which mode produced each number)."""
    here = make_bench("here", lognormal_groups(1e-6, 3, 10, seed=1))
    fresh = make_bench("fresh", lognormal_groups(1e-6, 3, 10, seed=2))
    summaries = summarize_group([here, fresh], seed=0)
    assert not any(line.startswith("processes ×") for line in group_table("g", summaries).footnotes)
    table = group_table("g", summaries, verbose=True, in_process={"g/here"})  # a long list
    [counts] = [line for line in table.footnotes if line.startswith("processes ×")]
    assert "fresh 3×10" in counts and "here" not in counts
    [reps] = [line for line in table.footnotes if line.startswith("in-process repetitions")]
    assert "here 3×10" in reps and "fresh" not in reps and "between-process" in reps


def test_parametrized_cases_compare_with_the_same_parameters() -> None:
    """issue 14: README's first example (json_dumps the baseline, both at n=10 and n=1000)
    compared pickle_dumps n=1000 with json_dumps n=10 and called it "slower" (13.9×),
    though pickle was 4× faster than json on the same 1,000 rows."""
    from perflab.analyze.run.ratios import baseline_verdicts

    def case(name: str, n: int, per_op_s: float, seed: int) -> object:
        return make_bench(
            name,
            lognormal_groups(per_op_s, 6, 30, seed=seed),
            params={"n": n},
            baseline=name == "json",
        )

    benches = [
        case("json", 10, 9e-6, 1),
        case("json", 1000, 560e-6, 2),
        case("pickle", 10, 2.3e-6, 3),
        case("pickle", 1000, 130e-6, 4),
    ]
    summaries = summarize_group(benches, seed=0)
    baseline_verdicts(summaries, 0.02)
    by = {s.label: s for s in summaries}
    assert by["pickle n=1000"].ratio_baseline.value == pytest.approx(130 / 560, rel=0.05)
    assert by["pickle n=1000"].verdict == "faster"
    assert by["json n=1000"].ratio_baseline.value == 1.0 and by["json n=1000"].verdict == ""
    assert by["json n=1000"].ratio_best.value == pytest.approx(560 / 130, rel=0.05)
    assert by["pickle n=1000"].ratio_best.value == 1.0
    *_, footnote, how = group_table("g", summaries, threshold=0.02).footnotes
    assert "same parameters" in footnote and "json n=1000" in footnote
    assert how == "× baseline: the ratio of the two medians, measured apart (not paired)"


def test_a_single_parametrized_benchmark_still_shows_its_growth() -> None:
    """One function at several sizes has no like to compare with: × best is against the
    fastest case, as before (how its cost grows)."""
    benches = [
        make_bench("f", lognormal_groups(t, 6, 30, seed=i), params={"n": n})
        for i, (n, t) in enumerate([(10, 1e-6), (1000, 1e-4)])
    ]
    summaries = summarize_group(benches, seed=0)
    assert summaries[1].ratio_best.value == pytest.approx(100, rel=0.05)


def test_a_baseline_without_parameters_is_every_case_s_baseline() -> None:
    benches = [make_bench("noop", lognormal_groups(1e-6, 6, 30, seed=1), baseline=True)]
    benches += [
        make_bench("f", lognormal_groups(t, 6, 30, seed=i), params={"n": n})
        for i, (n, t) in enumerate([(10, 2e-6), (1000, 4e-6)])
    ]
    summaries = summarize_group(benches, seed=0)
    assert [round(s.ratio_baseline.value) for s in summaries] == [1, 2, 4]
