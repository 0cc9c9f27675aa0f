"""Issue 29 §1: at every width from 80 columns, a row keeps its name, its value ± CI, the
ratio and the verdict (other columns fold first); the notes are short codes with one
legend; a run's conditions are said once, not per row."""

from __future__ import annotations

from pathlib import Path

import pytest

from perflab import cli

DATA = Path(__file__).resolve().parent / "data"

#: (argv in tests/golden/data, the header words that must show at every width)
ANSWERS = [
    (["show", "run-a.json"], ["benchmark", "time/op ± CI", "× baseline", "verdict"]),
    (["show", "run-a.json"], ["× best"]),  # the scan group, without a baseline
    (["show", "cmd-b.json"], ["command", "median ± CI", "× reference", "verdict"]),
    (["compare", "run-a.json", "run-b.json"], ["benchmark", "B/A (95% CI)", "verdict"]),
    (["compare", "http-closed.json", "http-closed-b.json"], ["B/A (95% CI)", "verdict"]),
]


@pytest.mark.parametrize("width", [80, 100, 120])
@pytest.mark.parametrize(("argv", "headers"), ANSWERS)
def test_the_answer_columns_show_at_every_width(
    argv: list[str],
    headers: list[str],
    width: int,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(DATA)
    monkeypatch.setenv("COLUMNS", str(width))
    cli.main(argv)
    out = capfd.readouterr().out
    header_lines = [line for line in out.splitlines() if "benchmark" in line or "command" in line]
    for header in headers:
        assert any(header in line for line in header_lines), (header, width)
    assert "folded away" not in out or not any(
        f"folded away to fit {width} columns: {h}" in " ".join(out.split()) for h in headers
    )


def test_a_run_says_its_notes_once(
    capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The notes column holds codes, the legend is printed once for the whole run, the
    per-benchmark lists only with --verbose, and no row wraps its notes at 80 columns."""
    monkeypatch.chdir(DATA)
    monkeypatch.setenv("COLUMNS", "80")
    cli.main(["show", "run-a.json"])
    out = capfd.readouterr().out
    assert out.count("• notes: ") == 1
    assert "busy machine" in out and "max processes" in out  # in the legend
    assert "loop overhead per op" not in out and "cold (first call" not in out
    assert "sum_range n=10 " in out and "budget hit," not in out
    cli.main(["show", "run-a.json", "--verbose"])
    verbose = capfd.readouterr().out
    assert "loop overhead per op" in verbose and "sorted_copy: unstable" in verbose


@pytest.mark.parametrize("show", [False, True])
def test_significant_results_never_outnumber_the_tests(
    show: bool,
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """issue 29 §3: "significant after BH: 12" for 9 benchmarks counted the (CPU ÷
    reference) rows and each HTTP percentile apart; a test is one benchmark (or one HTTP
    step's latencies, or its rate), also when a saved comparison is shown again."""
    import re

    monkeypatch.chdir(DATA)
    monkeypatch.setenv("COLUMNS", "200")
    for a, b, tests in (("run-a", "run-b", 15), ("http-closed", "http-closed-b", 8)):
        argv = ["compare", f"{a}.json", f"{b}.json"]
        if show:
            cli.main([*argv, "--json", str(tmp_path / "c.json"), "--format", "csv"])
            capfd.readouterr()
            argv = ["show", str(tmp_path / "c.json")]
        cli.main(argv)
        out = capfd.readouterr().out
        found = re.search(
            r"significant \(Benjamini–Hochberg q < 0.05\)\s+(\d+) of (\d+) tests", out
        )
        assert found, out
        assert int(found[1]) <= int(found[2]) == tests
        rows = [line for line in out.splitlines() if "(CPU ÷ reference)" in line]
        assert all(not re.search(r"\b(faster|slower|same|inconclusive)\b", r) for r in rows)
