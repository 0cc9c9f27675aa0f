"""The console's width policy and the GitHub Actions step summary."""

from __future__ import annotations

from pathlib import Path

import pytest

from perflab.report import console
from perflab.report.table import KEY, NOTE, Table


def _table() -> Table:
    return Table(
        "t",
        ["name", "median ± CI", "detail a", "detail b", "notes"],
        [
            [
                "a-rather-long-benchmark-name",
                "1.23 ms ± 0.5%",
                "x" * 30,
                "y" * 30,
                "budget hit, unstable, 12% outliers",
            ]
        ],
        align=["l", "r", "r", "r", "l"],
        fold=[KEY, KEY, 2, 1, NOTE],
    )


def test_piped_width_is_columns_else_120(monkeypatch: pytest.MonkeyPatch) -> None:
    class Pipe:
        def isatty(self) -> bool:
            return False

    monkeypatch.delenv("COLUMNS", raising=False)
    assert console.terminal_width(Pipe()) == 120
    monkeypatch.setenv("COLUMNS", "93")
    assert console.terminal_width(Pipe()) == 93
    monkeypatch.setenv("COLUMNS", "wide")
    assert console.terminal_width(Pipe()) == 120


def test_columns_fold_in_their_stated_order() -> None:
    table = _table()
    assert console.fit_columns(table, 200)[0] == [0, 1, 2, 3, 4]
    assert console.fit_columns(table, 110)[0] == [0, 1, 2, 4]  # rank 1 ("detail b") first
    assert console.fit_columns(table, 80)[0] == [0, 1, 4]
    assert console.fit_columns(table, 40)[0] == [0, 1, 4]  # KEY and NOTE never fold
    line = console.folded_line(table, [0, 1, 4], 80)
    assert line and "detail a, detail b" in line and "--wide" in line


def test_wide_prints_every_column(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    console.configure(wide=True)
    try:
        console.print_tables([_table()])
    finally:
        console.configure(wide=False)
    out = capsys.readouterr().out
    assert "x" * 30 in out and "y" * 30 in out and "folded away" not in out
    console.print_tables([_table()])
    out = capsys.readouterr().out
    assert "y" * 30 not in out and "folded away to fit 80 columns" in out
    assert max(len(line.rstrip()) for line in out.splitlines()) <= 80


def test_step_summary_gets_the_markdown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    console.emit("table", [_table()])
    console.emit("csv", [_table()])  # CSV is for machines: not the summary
    text = summary.read_text()
    assert text.startswith("earlier step\n")
    assert text.count("### t") == 1 and "| a-rather-long-benchmark-name |" in text
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "missing" / "x.md"))
    console.emit("table", [_table()])
    assert "note: GITHUB_STEP_SUMMARY" in capsys.readouterr().err


def test_a_very_long_name_is_shortened_on_the_terminal_only(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    name = "test_x[" + "a" * 10_000 + "-end]"  # e.g. a parametrized pytest id
    table = Table(
        f"points: {name}",
        ["name", "median"],
        [[name, "1 ms"], ["b", "2 ms"]],
        footnotes=[f"unstable: {name} ±9%, b ±6%"],
    )
    console.print_tables([table])
    out = capsys.readouterr().out
    short = console.short_name(name)
    assert len(short) == console.MAX_NAME_CHARS and short.endswith("aaa-end]")
    assert out.count("…") == 3 and "-end] ±9%, b ±6%" in out  # row, title, footnote
    assert len(out.splitlines()) < 20
    assert "a" * 10_000 + "-end" in console.markdown([table])  # files keep it whole


def test_footnotes_wrap_with_a_hanging_indent(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """issue 14: at 80 columns a footnote's second line started at the margin, so the
    bullets ran together into one block of text."""
    monkeypatch.setenv("COLUMNS", "80")
    table = Table("t", ["name", "median"], [["a", "1 ms"]], footnotes=["word " * 40, "second"])
    console.print_tables([table])
    lines = capsys.readouterr().out.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("  • word"))
    assert lines[first + 1].startswith("    word") and lines[first + 2].startswith("    word")
    assert any(line.startswith("  • second") for line in lines)
    assert max(len(line.rstrip()) for line in lines) <= 80


def test_a_name_s_newline_does_not_break_a_footnote(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A command named "a\\n  • verdict: fine" made its footnote look like two bullets;
    footnotes are one line each, as the name in its row (and in Markdown) is."""
    monkeypatch.setenv("COLUMNS", "100")
    name = "a\x1b[2J\n  • verdict: fine"
    console.print_tables([Table("t", ["name"], [[name]], footnotes=[f"unstable: {name} ±9%"])])
    out = capsys.readouterr().out
    assert "\x1b" not in out
    assert not any(line.lstrip().startswith("• verdict") for line in out.splitlines())
    assert "unstable: a\\x1b[2J\\x0a  • verdict: fine ±9%" in out


def test_a_tripped_gate_is_in_the_step_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The job summary shows why the job failed, not only the tables."""
    from perflab.report.compare_table import gate

    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert gate(["g/a|b", "g/c"], ["slower"]) == 1
    assert "gate: --fail-on slower tripped by 2 benchmark(s): g/a|b, g/c" in capsys.readouterr().err
    assert (
        summary.read_text()
        == "**gate: --fail-on slower tripped by 2 benchmark(s): g/a\\|b, g/c**\n\n"
    )
    assert gate([], ["slower"]) == 0 and summary.read_text().count("gate") == 1
