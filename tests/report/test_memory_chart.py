"""Memory panels of the PNG charts: run --memory under the distributions, http --watch
under the sweep panels."""

from __future__ import annotations

from pathlib import Path

from perflab.analyze.run.summary import summarize
from perflab.model import Benchmark, HttpStep, Process, Sample
from perflab.report.memory_chart import (
    add_memory_panel,
    draw_memory,
    heap_series,
    process_series,
    sweep_series,
)
from perflab.report.pyplot import pyplot
from perflab.report.run_chart import run_chart


def _step(t0: float, pid: int = 7) -> HttpStep:
    step = HttpStep(
        offered_rate=100.0, connections=4, mode="open", duration_s=1.0, warmup_s=0.1, elapsed_s=0.9
    )
    step.watched = [
        {
            "pid": pid,
            "name": "nginx",
            "t_s": [t0, t0 + 0.5, t0 + 1.0],
            "cpu_s": [0.0, 0.1, 0.2],
            "rss_bytes": [10_000_000, 12_000_000, 13_000_000],
        }
    ]
    return step


def test_sweep_series_joins_each_process_over_the_steps_and_marks_their_starts() -> None:
    series, boundaries = sweep_series([_step(0.0), _step(1.0)])
    assert [s[0] for s in series] == ["nginx 7"]
    assert list(series[0][1]) == [0.0, 0.5, 1.0, 1.0, 1.5, 2.0]
    assert boundaries == [1.0]


def test_the_panel_goes_under_the_existing_ones_without_shrinking_them(tmp_path: Path) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    before = ax.get_position().height * 4
    panel = add_memory_panel(fig, *sweep_series([_step(0.0)]))
    assert abs(ax.get_position().height * fig.get_size_inches()[1] - before) < 1e-6
    assert panel.get_position().y1 < ax.get_position().y0
    assert panel.get_lines() and panel.get_ylabel() == "RSS (MB)"
    fig.savefig(tmp_path / "x.png")
    plt.close(fig)


def test_run_chart_adds_the_workers_timelines_when_run_with_memory(tmp_path: Path) -> None:
    bench = Benchmark(name="leaky", group="g")
    proc = Process(index=0, pid=1, started_s=0.0, samples=[Sample(10, 10_000, 10_000, 0, 0)] * 3)
    proc.memory = {
        "t_s": [0.0, 0.01, 0.02],
        "cpu_s": [0.0, 0.0, 0.01],
        "rss_bytes": [5_000_000, 9_000_000, 12_000_000],
    }
    proc.heap = {
        "calls": [0, 50, 100],
        "t_s": [0.0, 0.001, 0.002],
        "traced_bytes": [0, 5_000, 10_000],
        "peak_bytes": [0, 5_100, 10_100],
    }
    bench.processes = [proc]
    assert [s[0] for s in process_series([bench])] == ["g/leaky"]
    assert heap_series([bench]) == [("g/leaky", [0, 50, 100], [0, 5_000, 10_000])]
    out = run_chart([bench], [summarize(bench)], tmp_path / "run.png")
    assert out.stat().st_size > 1000


def test_the_axis_unit_follows_the_size_of_the_bytes() -> None:
    plt = pyplot()
    fig, ax = plt.subplots()
    draw_memory(ax, [("a", [0, 1], [0, 12_000])], y_label="heap")
    assert ax.get_ylabel() == "heap (kB)"
    assert list(ax.get_lines()[0].get_ydata()) == [0, 12]
    plt.close(fig)
