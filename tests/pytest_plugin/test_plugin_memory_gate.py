"""The pytest plugin's gate on memory (issue 28 §4): ``--perflab-fail-on memory`` fails
the session when a test allocates far more per op than the baseline did (its saved
allocation figures scaled down 100×: far beyond any noise), and passes against the
unchanged file (allocation totals repeat to the byte). No timing is judged."""

from __future__ import annotations

import json

FAST = ["--perflab-budget=1s", "--perflab-processes=3", "-p", "no:cacheprovider"]


def _allocating_less(path, factor: float) -> None:
    """The saved results with every allocation figure divided by ``factor``."""
    document = json.loads(path.read_text())
    for bench in document["benchmarks"]:
        for proc in bench["processes"]:
            for key in ("alloc_total_bytes", "alloc_total_blocks", "alloc_peak_bytes"):
                if proc.get(key) is not None:
                    proc[key] /= factor
    path.write_text(json.dumps(document))


def test_fail_on_memory_trips_on_a_test_that_allocates_more(pytester):
    pytester.makepyfile("""
        def test_work(perflab_bench):
            perflab_bench(lambda: [list(range(50)) for _ in range(40)])
    """)
    saved = pytester.path / "a.json"
    pytester.runpytest(*FAST, f"--perflab-json={saved}").assert_outcomes(passed=1)
    same = pytester.runpytest(
        *FAST, f"--perflab-compare={saved}", "--perflab-fail-on=memory", "--perflab-no-history"
    )
    assert same.ret == 0, same.stdout.str() + same.stderr.str()
    same.stdout.fnmatch_lines(["*memory verdicts*0 more*"])
    _allocating_less(saved, 100)
    more = pytester.runpytest(
        *FAST, f"--perflab-compare={saved}", "--perflab-fail-on=memory", "--perflab-no-history"
    )
    assert more.ret == 1, more.stdout.str() + more.stderr.str()
    more.stderr.fnmatch_lines(["gate: --fail-on memory tripped by * *test_work (allocated/op)*"])
