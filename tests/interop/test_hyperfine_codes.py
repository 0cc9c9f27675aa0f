"""hyperfine's exit codes: one per time, as hyperfine writes them; a file whose codes and
times disagree is refused with one line, and perflab's own export never writes one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from perflab import model

DATA = Path(__file__).parent.parent / "data" / "interop"


def _with_codes(tmp_path: Path, codes: Any, tool: str | None = None) -> Path:
    raw = json.loads((DATA / "hyperfine.json").read_text())
    result = raw["results"][0]
    result["exit_codes"] = codes(len(result["times"]))
    if tool:
        raw["tool"] = tool
    path = tmp_path / "h.json"
    path.write_text(json.dumps(raw))
    return path


def test_codes_and_times_that_disagree_are_refused(tmp_path: Path, perflab_cli: Any) -> None:
    for codes in (lambda n: [0] * (n + 2), lambda n: [0] * (n - 1), lambda n: []):
        shown = perflab_cli("show", str(_with_codes(tmp_path, codes)))
        errors = [ln for ln in shown.stderr.splitlines() if ln.startswith("error:")]
        assert shown.returncode == 2 and len(errors) == 1, shown.stderr
        assert "times but" in errors[0] and "one exit code per run" in errors[0]


def test_non_zero_codes_are_runs_kept_with_i(tmp_path: Path) -> None:
    path = _with_codes(tmp_path, lambda n: [1] * n)
    bench = model.load(path).benchmarks[0]
    assert all(r.ok and r.exit_code == 1 for r in bench.runs)


def test_perflabs_export_has_one_code_per_time(tmp_path: Path, perflab_cli: Any) -> None:
    out = tmp_path / "e.json"
    done = perflab_cli(
        "cmd", "--runs", "4", "--no-history", "--quiet", "--export-json", str(out),
        "--json", str(tmp_path / "r.json"), "sh -c 'exit 3'", "-i=3",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (result,) = json.loads(out.read_text())["results"]
    assert len(result["exit_codes"]) == len(result["times"]) == 4
    assert set(result["exit_codes"]) == {3} and result["failed_exit_codes"] == []
    assert model.load(out).benchmarks[0].runs[0].exit_code == 3  # and reads back
