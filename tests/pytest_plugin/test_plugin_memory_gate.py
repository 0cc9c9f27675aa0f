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


def test_max_rss_fails_the_session_on_the_test_above_the_limit(pytester):
    """``--perflab-max-rss``: the test whose child pytests hold 200 MB fails the session
    and is named with its peak; the small one is not (memory, not speed)."""
    pytester.makepyfile("""
        def test_big(perflab_bench):
            perflab_bench(lambda: len(b"x" * 200_000_000))

        def test_small(perflab_bench):
            perflab_bench(lambda: 1 + 1)
    """)
    result = pytester.runpytest(*FAST, "--perflab-max-rss=100MB", "--perflab-no-history")
    assert result.ret == 1, result.stdout.str() + result.stderr.str()
    result.stderr.fnmatch_lines(
        ["gate: --perflab-max-rss 100 MB tripped by 1 test(s): test_big (*)"]
    )
    assert "test_small" not in "".join(line for line in result.stderr.lines if "gate:" in line)
    roomy = pytester.runpytest(*FAST, "--perflab-max-rss=2GiB", "--perflab-no-history")
    assert roomy.ret == 0, roomy.stdout.str() + roomy.stderr.str()


def test_max_rss_needs_fresh_processes_and_a_size(pytester):
    """In the pytest process one test's RSS can't be told from another's: a usage error;
    a bad size too. Neither is a traceback."""
    pytester.makepyfile("def test_x(perflab_bench):\n    perflab_bench(lambda: 1)\n")
    alone = pytester.runpytest("--perflab-max-rss=100MB", "-p", "no:cacheprovider")
    assert alone.ret == 4
    alone.stderr.fnmatch_lines(["*--perflab-max-rss * add --perflab-processes N*"])
    bad = pytester.runpytest(*FAST, "--perflab-max-rss=abc")
    assert bad.ret == 4
    bad.stderr.fnmatch_lines(["*--perflab-max-rss: 'abc' is not a memory size*"])
    assert "Traceback" not in bad.stderr.str()
