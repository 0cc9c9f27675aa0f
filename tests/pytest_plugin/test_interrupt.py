"""A Ctrl-C after the tests ran, while pytest's plugins print their summaries: what perflab
measured is already saved (the results are written at the session's finish, before any
terminal summary), and a Ctrl-C while perflab finishes ends the session as pytest's own
interrupt does (exit status 2) with one line naming the results file."""

from __future__ import annotations

import json

FAST = ["--perflab-budget=0.2s", "-p", "no:cacheprovider"]

TESTS = """
def test_abs(perflab_bench):
    perflab_bench(abs, -3)
"""


def test_a_ctrl_c_in_another_plugins_summary_loses_nothing(pytester) -> None:  # type: ignore[no-untyped-def]
    pytester.makeconftest("""
        import pytest

        @pytest.hookimpl(tryfirst=True)
        def pytest_terminal_summary():
            raise KeyboardInterrupt  # as a Ctrl-C landing in a slow plugin's summary
    """)
    pytester.makepyfile(TESTS)
    pytester.runpytest_subprocess(*FAST, "--perflab-json=r.json")
    saved = json.loads((pytester.path / "r.json").read_text())
    assert [b["name"] for b in saved["benchmarks"]] == ["test_abs"]


def test_a_ctrl_c_while_perflab_finishes_exits_2_and_names_the_file(pytester) -> None:  # type: ignore[no-untyped-def]
    pytester.makeconftest("""
        import perflab.pytest_plugin.session as session

        def interrupted(self):
            raise KeyboardInterrupt  # a Ctrl-C while the tables print

        session.SessionResults.finish = interrupted
    """)
    pytester.makepyfile(TESTS)
    result = pytester.runpytest_subprocess(*FAST, "--perflab-json=r.json")
    assert result.ret == 2
    result.stderr.fnmatch_lines(["perflab: interrupted; results saved to *r.json"])
    assert (pytester.path / "r.json").exists()
