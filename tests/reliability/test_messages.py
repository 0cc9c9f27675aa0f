"""Issue 12 §6: the remaining internal errors and misleading messages, each now exit 2 with
one line that says what to do."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.reliability.samples import clean_failure, perflab, write_valid


@pytest.mark.parametrize(
    "argv, words",
    [
        (["run", "x.py", "--budget", "-1s"], "--budget must be above zero"),
        (["run", "x.py", "--precision", "-1%"], "must be between 0% and 100%"),
        (["cmd", "true", "--timeout", "-3s"], "--timeout must be above zero"),
        (["compare", "a", "b", "--threshold", "-5%"], "must be at least 0%"),
        (["http", "http://127.0.0.1:9/", "--rate", "1", "--duration", "-2s"], "above zero"),
    ],
)
def test_negative_looking_values_are_rejected_by_meaning(argv: list[str], words: str) -> None:
    # was: "expected one argument"
    assert words in clean_failure(perflab(*argv))


@pytest.mark.parametrize(
    "argv, words",
    [
        (["doctor", "--duration", "1e12s"], "a year at most"),
        (["doctor", "--duration", "2d"], "not a duration"),
        (["http", "http://[::1", "--rate", "1"], "malformed"),
        (["http", "http://127.0.0.1:0/", "--rate", "1"], "port 0"),
        (["cmd", "--ignore-failure=abc", "true"], "exit codes are whole numbers"),
    ],
)
def test_former_internal_errors(argv: list[str], words: str) -> None:
    # was: OverflowError, ValueError, "cannot connect to 127.0.0.1:80", "command 'abc'"
    # refused before measuring: a doctor probe of 1e12 s would hang past perflab()'s bound
    assert words in clean_failure(perflab(*argv, timeout=120))


def test_folders_are_called_folders(tmp_path: Path) -> None:
    # was: "no such file" for a folder; chmod +x advised for a folder
    (tmp_path / "b.py").mkdir()
    assert "is a folder" in clean_failure(perflab("run", str(tmp_path / "b.py")))
    assert "is a folder" in clean_failure(perflab("cmd", "true", "--input", str(tmp_path)))
    line = clean_failure(perflab("cmd", str(tmp_path)))
    assert "is a folder" in line and "chmod" not in line


def test_binary_bench_file(tmp_path: Path) -> None:
    # was: ":None:" for a line number, a raw "utf-8 codec" message
    path = tmp_path / "b.py"
    path.write_bytes(b"import x\x00\xff\xfe")
    line = clean_failure(perflab("run", str(path)))
    assert "not Python source" in line and "None" not in line and "codec" not in line


def test_fit_refuses_extra_cells(tmp_path: Path) -> None:
    # was: extra cells in a CSV row silently ignored
    csv = tmp_path / "p.csv"
    csv.write_text("N,X\n1,100\n2,190,7\n4,350\n")
    assert "p.csv:3: 3 cells but the header names 2" in clean_failure(perflab("fit", str(csv)))


def test_fit_csv_number_and_shortest_csv_output(tmp_path: Path) -> None:
    # issue 14 §4: CSV numbers in their shortest exact form
    run = write_valid(tmp_path, "run")
    out = perflab("show", str(run), "--format", "csv").stdout
    assert "0.00019999999999999998" not in out and "e-05" not in out.split("\n")[0]
    assert all(len(cell) < 24 for row in out.splitlines() for cell in row.split(","))
