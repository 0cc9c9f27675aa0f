"""Issue 12 §4: names from files and users are escaped for the terminal, Markdown, CSV and
HTML, and a user's module can't shadow perflab's own imports."""

from __future__ import annotations

import csv
import io
import subprocess
import sys
from pathlib import Path

import pytest

from perflab import model
from perflab.report import escape
from tests.reliability.samples import NASTY, perflab, run_results


@pytest.fixture(scope="module")
def nasty_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    results = run_results()
    for bench, name in zip(results.benchmarks * 5, NASTY):
        bench.name, bench.group = name, name[::-1]
        bench.params = {}
    results.benchmarks = [model.Benchmark(**{**vars(b)}) for b in results.benchmarks]
    extra = []
    for i, name in enumerate(NASTY):
        bench = run_results(seed=i).benchmarks[0]
        bench.name, bench.group, bench.params = name, "g", {}
        extra.append(bench)
    results.benchmarks = extra
    path = tmp_path_factory.mktemp("names") / "nasty.json"
    model.save(results, path)
    return path


def test_terminal_output_has_no_control_characters_and_no_markup(nasty_file: Path) -> None:
    # was: MarkupError on "[/]"; colours, links and escape sequences reached the terminal
    result = perflab("show", str(nasty_file))
    assert result.returncode == 0, result.stderr
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert "\u202e" not in result.stdout
    assert "[red]RED[/red]" in result.stdout and "closing [/] tag" in result.stdout
    assert "\\x1b[31mred" in result.stdout  # shown, not obeyed


def test_markdown_rows_stay_rows_and_html_stays_text(nasty_file: Path) -> None:
    # was: a newline split the row; <script>, <img onerror> and backticks passed through
    result = perflab("show", str(nasty_file), "--format", "markdown")
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if line.startswith("|")]
    widths = {line.replace("\\|", "").count("|") for line in rows}
    assert len(widths) == 1, widths
    assert "<script>" not in result.stdout and "<img" not in result.stdout
    assert "&lt;script>" in result.stdout
    assert "\\`code\\`" in result.stdout


def test_csv_neutralizes_formulas(nasty_file: Path) -> None:
    # was: names starting with = + - @ reached spreadsheets as formulas
    result = perflab("show", str(nasty_file), "--format", "csv")
    assert result.returncode == 0, result.stderr
    cells = [c for row in csv.reader(io.StringIO(result.stdout)) for c in row]
    assert not any(c.startswith(("=", "+", "@")) for c in cells)
    assert not any(
        c.startswith("-")
        and not c.lstrip("-").replace(".", "").replace("e", "").replace("-", "").isdigit()
        for c in cells
    )
    assert '\'=HYPERLINK("http://x.invalid")' in cells


def test_compare_of_nasty_names(nasty_file: Path) -> None:
    result = perflab("compare", str(nasty_file), str(nasty_file))
    assert result.returncode == 0, result.stderr
    assert "\x1b" not in result.stdout and "closing [/] tag" in result.stdout


def test_show_of_compare_and_fit_documents_escapes_names(nasty_file: Path, tmp_path: Path) -> None:
    """Documents are untrusted too: names in a compare document, and series names in a
    fit document's saved inputs, reach no terminal, Markdown table or spreadsheet raw."""
    import json

    document = tmp_path / "compare.json"
    assert (
        perflab("compare", str(nasty_file), str(nasty_file), "--json", str(document)).returncode
        == 0
    )
    fit = tmp_path / "fit.json"
    csv_input = tmp_path / "points.csv"
    csv_input.write_text("n,x\n1,100\n2,190\n4,340\n8,560\n16,800\n")
    assert perflab("fit", str(csv_input), "--json", str(fit)).returncode == 0
    data = json.loads(fit.read_text())
    data["inputs"][0]["name"] = "\x1b[31mred\x1b[0m two\nlines =HYPERLINK(1) | <script>"
    fit.write_text(json.dumps(data))
    for path in (document, fit):
        table = perflab("show", str(path))
        assert table.returncode == 0, table.stderr
        assert "\x1b" not in table.stdout and "\u202e" not in table.stdout
        markdown = perflab("show", str(path), "--format", "markdown")
        rows = [line for line in markdown.stdout.splitlines() if line.startswith("|")]
        assert len({line.replace("\\|", "").count("|") for line in rows}) <= 2  # two tables
        assert "<script>" not in markdown.stdout and "\x1b" not in markdown.stdout
        cells = [
            c
            for row in csv.reader(io.StringIO(perflab("show", str(path), "--format", "csv").stdout))
            for c in row
        ]
        assert not any(c.startswith(("=", "+", "@")) for c in cells)
    assert "\\x1b[31mred" in perflab("show", str(fit)).stdout  # shown, not obeyed


def test_cmd_with_markup_in_the_command_runs(tmp_path: Path) -> None:
    # was: run and cmd failed with MarkupError after measuring
    result = perflab(
        "cmd",
        "echo closing [/] tag [red]x[/red]",
        "--runs",
        "3",
        "--quiet",
        "--json",
        str(tmp_path / "r.json"),
    )
    assert result.returncode == 0, result.stderr
    assert "echo closing [/] tag [red]x[/red]" in result.stdout


def test_escape_functions() -> None:
    assert escape.terminal("a\x1b[31mb\x9bc") == "a\\x1b[31mb\\x9bc"
    assert escape.markdown_cell("a|b\nc") == "a\\|b\\\\x0ac"
    assert escape.csv_cell("-cmd") == "'-cmd" and escape.csv_cell(-1.5) == "-1.5"
    assert escape.csv_cell(0.1 + 0.2) == "0.3" and escape.csv_cell(2e-4 * 1.0) == "0.0002"
    assert escape.shortest(200e-6 * 1e-0) == "0.0002" and escape.shortest(float("nan")) == ""
    assert escape.html("<a href='x'>&") == "&lt;a href=&#x27;x&#x27;&gt;&amp;"


@pytest.mark.parametrize("shadow", ["rich", "numpy", "json", "fastjsonschema"])
def test_a_module_beside_the_bench_file_does_not_shadow_perflab(
    tmp_path: Path, shadow: str
) -> None:
    # was: ImportError: cannot import name 'box' from 'rich' (in the parent and the worker)
    (tmp_path / f"{shadow}.py").write_text("raise ImportError('the user module was imported')\n")
    (tmp_path / "bench.py").write_text(
        "import perflab\n\n\n@perflab.bench\ndef add():\n    return 1 + 1\n"
    )
    # the installed `perflab` script, as users run it (`python -m` puts the cwd first itself)
    script = Path(sys.executable).with_name("perflab")
    result = subprocess.run(
        [
            str(script),
            "run",
            "bench.py",
            "--budget",
            "1s",
            "--max-processes",
            "5",
            "--quiet",
            "--no-alloc",
            "--json",
            str(tmp_path / "r.json"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "add" in result.stdout


def test_run_with_markup_in_names_on_a_terminal(tmp_path: Path) -> None:
    # was: `run` failed with MarkupError (the live progress parsed the name as markup)
    import os

    (tmp_path / "bench.py").write_text(
        "import perflab\n\n\n@perflab.bench(name='closing [/] tag \\x1b[31m', group='[b]g[/]')"
        "\ndef add():\n    return 1 + 1\n"
    )
    import threading

    leader, follower = os.openpty()  # stderr is a terminal: the progress bars are drawn
    chunks: list[bytes] = []

    def drain() -> None:  # read while it runs, so a full terminal buffer never blocks it
        try:
            while chunk := os.read(leader, 65536):
                chunks.append(chunk)
        except OSError:
            pass

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "perflab",
                "run",
                "bench.py",
                "--budget",
                "0.5s",
                "--max-processes",
                "5",
                "--no-alloc",
                "--json",
                str(tmp_path / "r.json"),
            ],
            stdout=subprocess.PIPE,
            stderr=follower,
            text=True,
            cwd=tmp_path,
            timeout=120,
        )
    finally:
        os.close(follower)
        reader.join(timeout=10)
        os.close(leader)
    drawn = b"".join(chunks)
    assert result.returncode == 0, drawn.decode(errors="replace")[-2000:]
    assert "closing [/] tag \\x1b[31m" in result.stdout
    assert b"closing [/] tag \\x1b[31m" in drawn  # the bar shows the name, escaped
