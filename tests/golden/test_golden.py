"""Golden files: saved results of every kind render to the stored snapshots, byte for byte.

Each case runs perflab in-process on the files in ``tests/golden/data`` (``perflab show``,
``compare``, ``fit``; the doctor's tables from a saved doctor document; the summaries a
results file is saved with) and compares its exit code, stdout and stderr with
``tests/golden/snapshots/<case>.txt``. A refactor must leave every snapshot as it is.
Every table case is rendered at 200 columns and again at 80, 100 and 120
(``<case>-<width>``); :func:`test_tables_fit` checks at each width what the width
policy promises (no line too long, no name cut, no unit lost).

After an intended change of the output, regenerate the snapshots with one command and
read their diff before committing it::

    PERFLAB_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/golden

How the data files were made is in tests/golden/README.md.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from perflab import cli, model

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
SNAPSHOTS = HERE / "snapshots"
UPDATE = os.environ.get("PERFLAB_UPDATE_GOLDEN") == "1"
FORMATS = ("table", "markdown", "csv")
RESULTS = (
    "run-a",
    "run-b",
    "run-synthetic-a",
    "run-synthetic-b",
    "cmd-a",
    "cmd-b",
    "cmd-c",
    "http-open",
    "http-closed",
    "http-closed-b",
)
COMPARISONS = {
    "run": ("run-a", "run-b"),
    "run-synthetic": ("run-synthetic-a", "run-synthetic-b"),
    "cmd": ("cmd-b", "cmd-c"),
    "http": ("http-closed", "http-closed-b"),
}
FITS = {
    "complexity-run": ["run-a.json", "--model", "complexity", "--series", "sum_range"],
    "breakeven-run": ["run-a.json", "--between", "sum_range", "sum_list"],
    "usl-threads": ["run-a.json", "--model", "usl"],
    "usl-http": ["http-closed.json"],
    "usl-csv": ["usl.csv"],
    "complexity-csv": ["cost.csv", "--model", "complexity"],
    "breakeven-csv": ["cost.csv", "--between", "scan", "index"],
}
#: Significant digits kept of the floats of JSON documents: the last bits of a fit or a
#: bootstrap may differ between BLAS builds, the figures a reader sees may not.
DIGITS = 6


def _rounded(value: Any) -> Any:
    """JSON with floats to :data:`DIGITS` significant digits and no timestamps."""
    if isinstance(value, float):
        return float(f"{value:.{DIGITS}g}") if math.isfinite(value) else str(value)
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    if isinstance(value, dict):
        return {k: "<time>" if k == "created" else _rounded(v) for k, v in value.items()}
    return value


def _json_text(text: str) -> str:
    return json.dumps(_rounded(json.loads(text)), indent=1, ensure_ascii=False) + "\n"


def _perflab(*argv: str) -> Callable[[], int]:
    """A case that runs ``perflab ARGV`` in ``tests/golden/data``."""

    def run() -> int:
        return cli.main(list(argv))

    run.argv = argv  # type: ignore[attr-defined]
    return run


def doctor_report(document: dict[str, Any]) -> Any:
    """A DoctorReport rebuilt from a saved ``perflab doctor --json`` document."""
    from perflab.model.doctor import DoctorReport

    return DoctorReport.from_dict(document)


def _doctor(fmt: str) -> Callable[[], int]:
    def run() -> int:
        from perflab.commands.doctor import print_report

        report = doctor_report(json.loads((DATA / "doctor.json").read_text()))
        if fmt == "json":
            print(json.dumps(model.json_types(report.to_dict())))
        else:
            print_report(report, fmt)
        return 0

    return run


def _summaries(name: str) -> Callable[[], int]:
    """The summaries a results file is saved with, recomputed from its raw data."""

    def run() -> int:
        from perflab.analyze import cmd, http
        from perflab.analyze.run.ratios import summarize_benchmarks

        results = model.load(DATA / f"{name}.json")
        if results.kind == "run":
            grouped = summarize_benchmarks(
                results.benchmarks, precision=results.settings.get("precision")
            )
            out = {s.id: s.to_dict() for group in grouped.values() for s in group}
        elif results.kind == "cmd":
            out = {s.id: s.to_dict() for s in cmd.summarize_results(results)}
        else:
            out = {"steps": [s.to_dict() for s in http.summarize_results(results).steps]}
        print(json.dumps(model.json_types(out)))
        return 0

    return run


def _shown(*argv: str) -> Callable[[], int]:
    """A case that runs ``perflab ARGV --json FILE`` quietly (a compare or fit document,
    written to a temp folder), then ``perflab show FILE`` and any further options."""

    def run(*show_options: str) -> int:
        import contextlib
        import io
        import tempfile

        with tempfile.TemporaryDirectory() as folder:
            document = str(Path(folder) / "document.json")
            with (
                contextlib.redirect_stdout(io.StringIO()),
                contextlib.redirect_stderr(io.StringIO()),
            ):
                cli.main([*argv, "--format", "csv", "--json", document])
            return cli.main(["show", document, *show_options])

    return run


def _show_document(argv: tuple[str, ...], fmt: str) -> Callable[[], int]:
    call = _shown(*argv)
    return lambda: call("--format", fmt)


def _cases() -> dict[str, tuple[Callable[[], int], bool]]:
    """Case name → (the call, whether its stdout is JSON)."""
    cases: dict[str, tuple[Callable[[], int], bool]] = {}
    for name in RESULTS:
        for fmt in FORMATS:
            cases[f"show-{name}.{fmt}"] = (_perflab("show", f"{name}.json", "--format", fmt), False)
        cases[f"summaries-{name}.json"] = (_summaries(name), True)
    cases["show-run-a-env.table"] = (_perflab("show", "run-a.json", "--env"), False)
    for fmt in FORMATS:
        cases[f"show-doctor.{fmt}"] = (_perflab("show", "doctor.json", "--format", fmt), False)
    for kind, (a, b) in COMPARISONS.items():
        for fmt in FORMATS:
            cases[f"compare-{kind}.{fmt}"] = (
                _perflab("compare", f"{a}.json", f"{b}.json", "--format", fmt),
                False,
            )
        cases[f"compare-{kind}.json"] = (
            _perflab("compare", f"{a}.json", f"{b}.json", "--json"),
            True,
        )
        for fmt in FORMATS:
            cases[f"show-compare-{kind}.{fmt}"] = (
                _show_document(("compare", f"{a}.json", f"{b}.json"), fmt),
                False,
            )
    cases["compare-run-gate.table"] = (
        _perflab("compare", "run-a.json", "run-b.json", "--fail-on", "slower,inconclusive"),
        False,
    )
    for name, argv in FITS.items():
        for fmt in FORMATS:
            cases[f"fit-{name}.{fmt}"] = (_perflab("fit", *argv, "--format", fmt), False)
        cases[f"fit-{name}.json"] = (_perflab("fit", *argv, "--json", "-"), True)
        for fmt in FORMATS:
            cases[f"show-fit-{name}.{fmt}"] = (_show_document(("fit", *argv), fmt), False)
    for fmt in FORMATS:
        cases[f"doctor.{fmt}"] = (_doctor(fmt), False)
    cases["doctor.json"] = (_doctor("json"), True)
    return cases


#: Terminal widths every table case is also rendered at (its plain case is at 200).
WIDTHS = (80, 100, 120)
#: Case name → (the call, whether its stdout is JSON, COLUMNS).
CASES = {name: (call, is_json, 200) for name, (call, is_json) in _cases().items()}
CASES.update(
    {
        f"{name}-{width}": (call, False, width)
        for name, (call, is_json) in _cases().items()
        if name.endswith(".table")
        for width in WIDTHS
    }
)


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden(
    case: str, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The case's exit code, stdout and stderr are its snapshot's."""
    call, is_json, width = CASES[case]
    monkeypatch.chdir(DATA)
    monkeypatch.setenv("COLUMNS", str(width))
    monkeypatch.setattr(sys, "argv", ["perflab", *getattr(call, "argv", ())])
    code = call()
    out, err = capfd.readouterr()
    text = f"exit {code}\n--- stdout\n{_json_text(out) if is_json else out}--- stderr\n{err}"
    path = SNAPSHOTS / f"{case}.txt"
    if UPDATE:
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"no snapshot {path.name}; make it with PERFLAB_UPDATE_GOLDEN=1"
    assert text == path.read_text(), (
        f"{case} renders differently from its snapshot; if "
        "the change is intended, PERFLAB_UPDATE_GOLDEN=1"
    )


@pytest.mark.parametrize(
    "case", sorted(c for c in CASES if c.startswith(("show-compare-", "show-fit-")))
)
def test_show_of_a_document_prints_what_its_command_printed(case: str) -> None:
    """``perflab show`` of a compare or fit document rebuilds, from the JSON alone, exactly
    the tables (and CSV) that the command printed when it wrote the document."""
    shown = SNAPSHOTS / f"{case}.txt"
    original = SNAPSHOTS / f"{case.removeprefix('show-')}.txt"
    assert shown.read_text() == original.read_text()


def test_every_snapshot_has_a_case() -> None:
    """No stale snapshot lingers after a case is renamed or removed."""
    stale = {p.name[:-4] for p in SNAPSHOTS.glob("*.txt")} - set(CASES)
    assert not stale


@pytest.mark.parametrize(
    "case", sorted(c for c in CASES if c.endswith(".table") or c.rsplit("-", 1)[-1].isdigit())
)
def test_tables_fit(
    case: str, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """At every width, each line fits, every identifying cell and headline figure shows
    whole (units included), every word of the notes shows, nothing is cut with "…", and
    the columns folded away are named under their table."""
    from rich.cells import cell_len

    from perflab.report import console
    from perflab.report.table import KEY, NOTE

    call, _, width = CASES[case]
    printed: list[Any] = []
    real = console.print_tables

    def record(tables: Any, *args: Any) -> None:
        printed.extend(tables)
        real(tables, *args)

    monkeypatch.chdir(DATA)
    monkeypatch.setenv("COLUMNS", str(width))
    monkeypatch.setattr(console, "print_tables", record)
    call()
    out = capfd.readouterr().out
    assert printed
    lines = out.splitlines()
    assert all(cell_len(line.rstrip()) <= width for line in lines), case
    made = "".join(
        t.title + "".join(t.footnotes) + "".join(c for r in t.rows for c in r) for t in printed
    )
    assert out.count("…") <= made.count("…"), "rich cut a cell"
    for table in printed:
        ranks = table.fold or [KEY] * len(table.columns)
        shown, narrowest = console.fit_columns(table, width)
        for i, (name, rank) in enumerate(zip(table.columns, ranks)):
            if rank == NOTE and i in console.empty_notes(table):
                assert i not in shown, name  # an empty notes column takes no room
            elif rank in (KEY, NOTE):
                assert i in shown, name
                right = table.align and table.align[i] == "r"
                column = console.text_widths(table, shown, narrowest, width).get(i)
                for cell in (row[i] for row in table.rows):
                    if right or column is None:  # never wraps: the whole cell on one line
                        assert any(cell in line for line in lines), (name, cell)
                        continue
                    pieces = [
                        w[k : k + column]
                        for w in cell.split()  # wrapped, or folded
                        for k in range(0, len(w), column)
                    ]
                    assert all(p in out for p in pieces), (name, cell)
            elif i not in shown:
                flowing = " ".join(out.split())  # footnotes wrap
                assert f"folded away to fit {width} columns:" in flowing and name in flowing
