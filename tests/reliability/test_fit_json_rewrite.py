"""`perflab fit … --json FILE` twice: the second run replaces the first's document (a
one-series fit document carries its fit's "kind", "complexity", which once made perflab
call its own file foreign: exit 2), while a user's JSON that only claims to be perflab's
is still refused."""

from __future__ import annotations

import json
from pathlib import Path

COST = Path(__file__).parents[1] / "golden" / "data" / "cost.csv"


def test_fit_replaces_its_own_document(tmp_path: Path, perflab_cli) -> None:
    out = tmp_path / "fit.json"
    for _ in range(2):
        proc = perflab_cli("fit", str(COST), "--model", "complexity", "--json", str(out))
        assert proc.returncode == 0, proc.stderr
    assert json.loads(out.read_text())["tool"] == "perflab"


def test_a_foreign_json_claiming_a_fit_kind_is_kept(tmp_path: Path, perflab_cli) -> None:
    out = tmp_path / "fit.json"
    mine = '{"tool": "perflab", "kind": "complexity", "notes": "my own file"}'
    out.write_text(mine)
    proc = perflab_cli("fit", str(COST), "--model", "complexity", "--json", str(out))
    assert proc.returncode == 2 and "not written by perflab" in proc.stderr
    assert out.read_text() == mine
