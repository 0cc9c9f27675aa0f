"""Instruction counts on synthetic data: Ir per op with the fixed cost subtracted, the
layout band and its flag, the default threshold, the verdicts on Ir, cache figures."""

from __future__ import annotations

import pytest

from perflab.analyze import counts as ac
from perflab.model import Benchmark, Process
from perflab.model.counts import Counts


def _process(
    index: int,
    ir_per_op: float,
    n: int = 10,
    fixed: int = 1500,
    layout: dict[str, int] | None = None,
    jitter: int = 0,
) -> Process:
    proc = Process(
        index=index,
        pid=100 + index,
        started_s=0.0,
        layout=layout if layout is not None else {"hash_seed": index},
    )
    full = [[int(ir_per_op * n + fixed + jitter * (k % 2))] for k in range(5)]
    proc.counts = Counts(
        ["Ir"],
        n,
        [int(ir_per_op * 40)],
        full,
        [[fixed]] * 3,
        gc_enabled=True,
        gc_threshold=[700, 10, 10],
        gc_collections=0,
    )
    return proc


def _bench(*per_op: float, **kw: object) -> Benchmark:
    bench = Benchmark(name="b")
    bench.processes = [_process(i, v, **kw) for i, v in enumerate(per_op)]  # type: ignore[arg-type]
    return bench


def test_fixed_cost_is_subtracted_and_the_median_taken() -> None:
    s = ac.summarize_counts(_bench(10_000, 10_002, 10_001))
    assert s is not None
    assert s.ir_per_op == pytest.approx(10_001)
    assert s.process_ir_per_op == pytest.approx([10_000, 10_002, 10_001])
    assert s.fixed_ir_per_op == pytest.approx(150)  # 1,500 per sample of 10 calls
    assert s.cold_ir == pytest.approx(400_040)
    assert (s.calls_per_sample, s.samples) == (10, 15)
    assert s.band_spread == pytest.approx(2 / 10_001)
    assert not s.layout_sensitive
    assert s.threshold == ac.COUNT_THRESHOLD_FLOOR
    assert s.gc_enabled is True and s.gc_collections == 0
    assert s.cache == {}


def test_a_benchmark_moving_with_layout_is_flagged_and_its_threshold_follows() -> None:
    s = ac.summarize_counts(_bench(10_000, 10_600, 10_200))
    assert s is not None
    assert s.band_spread == pytest.approx(600 / 10_200)
    assert s.layout_sensitive
    assert s.threshold == pytest.approx(ac.BAND_MARGIN * 600 / 10_200)
    # just under the flag's line: not flagged
    edge = ac.summarize_counts(_bench(10_000, 10_000 * (1 + 0.0099), 10_050))
    assert edge is not None and not edge.layout_sensitive


def test_nothing_counted_is_no_summary() -> None:
    bench = _bench(10_000)
    bench.processes[0].counts = None
    assert ac.summarize_counts(bench) is None
    assert ac.summarize_counts(Benchmark(name="x")) is None


def test_identical_code_is_the_same_and_one_percent_more_work_is_slower() -> None:
    a = ac.summarize_counts(_bench(10_000, 10_001, 10_002))
    same = ac.summarize_counts(_bench(10_000, 10_001, 10_002, jitter=2))
    slower = ac.summarize_counts(_bench(10_100, 10_101.01, 10_102.02))
    faster = ac.summarize_counts(_bench(9_900, 9_901, 9_902))
    assert ac.compare_counts(a, same).verdict == "same"
    row = ac.compare_counts(a, slower)
    assert row.verdict == "slower"
    assert row.ratio is not None and row.ratio.value == pytest.approx(1.01, rel=1e-4)
    assert row.ratio.ci_low <= row.ratio.value <= row.ratio.ci_high
    assert ac.compare_counts(a, faster).verdict == "faster"
    assert ac.compare_counts(a, None).verdict == "failed"


def test_a_move_inside_the_band_is_no_verdict() -> None:
    wide = ac.summarize_counts(_bench(10_000, 10_600, 10_200))  # a 5.9% band
    moved = ac.summarize_counts(_bench(10_300, 10_900, 10_500))  # +3%, inside the band
    row = ac.compare_counts(wide, moved)
    assert row.verdict in ("same", "inconclusive")
    assert row.threshold >= wide.band_spread  # type: ignore[union-attr]
    assert any("layout-sensitive" in n for n in row.notes)
    # a user threshold below the band is raised to it, and says so
    low = ac.compare_counts(wide, moved, threshold=0.001)
    assert low.threshold == pytest.approx(wide.band_spread)  # type: ignore[union-attr]
    assert any("raised" in n for n in low.notes)


def test_different_layouts_compare_the_medians() -> None:
    a = ac.summarize_counts(_bench(10_000, 10_001, 10_002))
    b_bench = _bench(10_000, 10_001, 10_002)
    for p in b_bench.processes:
        p.layout = {"hash_seed": 99 + p.index}
    b = ac.summarize_counts(b_bench)
    row = ac.compare_counts(a, b)
    assert row.ratio is not None and row.ratio.value == pytest.approx(1.0)
    assert row.verdict == "same"


def test_cache_figures_weigh_hits_and_misses() -> None:
    events = dict(zip(ac.CACHE_EVENTS, [1000, 300, 200, 10, 20, 5, 2, 3, 1], strict=True))
    assert ac.cache_figures(events) == {
        "l1_hits": 1500 - 35,
        "l1_misses": 35,
        "ll_hits": 35 - 6,
        "ll_misses": 6,
        "estimated_cycles": (1500 - 35) + 5 * 29 + 35 * 6,
    }
    assert ac.cache_figures({"Ir": 5}) is None


def test_cache_figures_per_op_subtract_the_empty_loop() -> None:
    proc = Process(index=0, pid=1, started_s=0.0, layout={})
    sample = [1000, 300, 200, 10, 20, 5, 2, 3, 1]
    empty = [100, 30, 20, 1, 2, 0, 0, 0, 0]
    proc.counts = Counts(list(ac.CACHE_EVENTS), 1, sample, [sample] * 3, [empty] * 3)
    bench = Benchmark(name="c")
    bench.processes = [proc]
    s = ac.summarize_counts(bench)
    assert s is not None and s.ir_per_op == 900
    full, none = (
        ac.cache_figures(dict(zip(ac.CACHE_EVENTS, sample))),
        ac.cache_figures(dict(zip(ac.CACHE_EVENTS, empty))),
    )
    assert full is not None and none is not None
    assert s.cache["estimated_cycles"] == full["estimated_cycles"] - none["estimated_cycles"]
    assert s.cache["ll_misses"] == 6
