"""`perflab history` writes its outputs as every command does (issue 14): `--json -` is JSON
on stdout and nothing else, `--json FILE`, `--markdown FILE` and `--csv FILE` at once while
the table prints, and `perflab show` prints a history document's tables again."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from perflab import cli
from perflab.history.store import Store
from tests.history.helpers import add, results


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """Eight synthetic runs of g/a, with a 25% step after the fourth, and one of g/b."""
    path = tmp_path / "h.sqlite"
    with Store(path) as store:
        for i in range(8):
            add(
                store,
                results({"a": 1e-3 * (1.25 if i >= 4 else 1.0)}, seed=i),
                commit=f"{i:x}" * 40,
                time=f"2026-01-{i + 1:02d}T00:00:00+00:00",
            )
        add(
            store,
            results({"b": 2e-3}, seed=99),
            commit="9" * 40,
            time="2026-01-20T00:00:00+00:00",
            tags=["night|ly"],
        )
    return path


def _perflab(capfd: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out = capfd.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("pattern", [None, "g/a"])
def test_json_on_stdout_and_show_prints_the_same_tables(
    db: Path, tmp_path: Path, capfd, pattern: str | None
) -> None:
    args = ["history", *([pattern] if pattern else []), "--history", str(db)]
    code, printed, _ = _perflab(capfd, *args)
    assert code == 0
    code, out, _ = _perflab(capfd, *args, "--json", "-")
    assert code == 0
    document = json.loads(out)  # the whole of stdout is the document
    assert document["tool"] == "perflab" and document["kind"] == "history"
    if pattern:
        (trend,) = document["trends"]
        assert len(trend["points"]) == 8 and [c["index"] for c in trend["changes"]] == [4]
    else:
        assert document["total_runs"] == 9 and document["runs"][0]["tags"] == ["night|ly"]
    saved = tmp_path / "history.json"
    saved.write_text(out)
    for fmt in ("table", "markdown", "csv"):
        code, shown, err = _perflab(capfd, "show", str(saved), "--format", fmt)
        assert code == 0, err
        code, direct, _ = _perflab(capfd, *args, "--format", fmt)
        assert shown == direct
    assert shown and printed


def test_several_outputs_at_once_while_the_table_prints(db: Path, tmp_path: Path, capfd) -> None:
    files = {k: tmp_path / f"h.{k}" for k in ("json", "md", "csv")}
    code, out, err = _perflab(
        capfd,
        "history",
        "--history",
        str(db),
        "--json",
        str(files["json"]),
        "--markdown",
        str(files["md"]),
        "--csv",
        str(files["csv"]),
    )
    assert code == 0, err
    assert "9 of 9 runs" in out
    assert json.loads(files["json"].read_text())["total_runs"] == 9
    assert (
        files["md"].read_text().startswith("<!-- perflab history -->")
        and "night\\|ly" in files["md"].read_text()
    )
    assert len(list(csv.DictReader(io.StringIO(files["csv"].read_text())))) == 9
    code, _, err = _perflab(capfd, "history", "--history", str(db), "--json", "-", "--csv", "-")
    assert code == 2 and err.startswith("error:")


def test_a_damaged_history_document_is_one_error_line(tmp_path: Path, capfd) -> None:
    bad = tmp_path / "h.json"
    bad.write_text(
        json.dumps(
            {
                "tool": "perflab",
                "kind": "history",
                "history_schema_version": 1,
                "database": "x",
                "runs": [{}],
                "total_runs": 1,
            }
        )
    )
    code, _, err = _perflab(capfd, "show", str(bad))
    assert code == 2 and err.startswith("error:") and len(err.splitlines()) == 1
