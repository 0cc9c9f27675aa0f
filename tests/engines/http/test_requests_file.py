"""--requests files read line by line (engines/http/requests_file.py): equal lines share
one request, arrays are read element by element, counts are bounded, faults name the line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perflab.engines.http import requests_file
from perflab.engines.http.requests_file import load_requests
from perflab.errors import UsageError


def test_equal_lines_share_one_request(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text('{"path": "/a"}\n\n# a note\n{"path": "/b"}\n{"path": "/a"}\n' * 1000)
    found = load_requests(path)
    assert [r["path"] for r in found[:3]] == ["/a", "/b", "/a"] and len(found) == 3000
    assert len({id(r) for r in found}) == 2


def test_an_array_is_read_element_by_element(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    items = [{"path": f"/{i % 3}", "headers": {"X-N": str(i % 3)}} for i in range(30)]
    path.write_text("\ufeff" + json.dumps(items, indent=1))
    found = load_requests(path)
    assert [r["path"] for r in found] == [i["path"] for i in items]
    assert found[0]["headers"] == [("X-N", "0")] and len({id(r) for r in found}) == 3
    path.write_text("[]")
    with pytest.raises(UsageError, match="no requests in it"):
        load_requests(path)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('[{"path": "/a"},\n {"path": "/b"}\n {"path": "/c"}]', "line 2"),
        ('[{"path": "/a"},\n\n {"path": 1}]', "line 3: path must be a string"),
        ('{"path": "/a"}\n{"path": "/a"\n', "line 2: not valid JSON"),
        ('{"path": "/a"}\n{"path": "/\xff"}\n', "line 2: not UTF-8"),
    ],
)
def test_a_fault_names_its_line(tmp_path: Path, text: str, said: str) -> None:
    path = tmp_path / "r.jsonl"
    path.write_bytes(text.encode("latin-1") if "\xff" in text else text.encode())
    with pytest.raises(UsageError, match=said):
        load_requests(path)


def test_counts_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(requests_file, "MAX_REQUESTS", 100)
    monkeypatch.setattr(requests_file, "MAX_DISTINCT", 10)
    path = tmp_path / "r.jsonl"
    path.write_text('{"path": "/a"}\n' * 100)
    assert len(load_requests(path)) == 100
    path.write_text('{"path": "/a"}\n' * 101)
    with pytest.raises(UsageError, match="more than 100 requests"):
        load_requests(path)
    path.write_text("".join(f'{{"path": "/{i}"}}\n' for i in range(11)))
    with pytest.raises(UsageError, match="more than 10 distinct requests"):
        load_requests(path)
