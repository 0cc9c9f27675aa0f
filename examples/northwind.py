"""Load the Northwind sample database (examples/data/northwind.sql, Ms-PL) into Python rows.

The dump is PostgreSQL syntax; its CREATE TABLE and INSERT statements are also
valid SQLite, so the standard library's sqlite3 loads it in memory without a
database server. Other statements (SET, ALTER TABLE ONLY …) are skipped.
"""

from __future__ import annotations

import functools
import re
import sqlite3
from pathlib import Path
from typing import Any

DUMP = Path(__file__).resolve().parent / "data" / "northwind.sql"
_STATEMENT = re.compile(r"^(CREATE TABLE .*?\);|INSERT INTO .*?\);)\s*$", re.S | re.M)


def _connect(dump: Path = DUMP) -> sqlite3.Connection:
    """An in-memory SQLite database holding the dump's tables and rows."""
    db = sqlite3.connect(":memory:")
    db.row_factory = sqlite3.Row
    text = dump.read_text(encoding="utf-8")
    db.executescript("\n".join(m.group(1) for m in _STATEMENT.finditer(text)))
    return db


@functools.lru_cache(maxsize=1)
def load_tables(dump: Path = DUMP) -> dict[str, list[dict[str, Any]]]:
    """Every table of the dump as a list of row dicts (str, int, float or None values).

    Returns:
        table name → rows, e.g. ``{"orders": [{"order_id": 10248, …}, …], …}``.

    Raises:
        FileNotFoundError: the dump is missing.
    """
    db = _connect(dump)
    names = [
        r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")
    ]
    return {name: [dict(row) for row in db.execute(f"SELECT * FROM {name}")] for name in names}


@functools.lru_cache(maxsize=1)
def json_rows() -> list[bytes]:
    """Every row of every table as compact JSON bytes (3,362 rows, 43–894 B, mean 173 B):
    the values the cache and queue examples store and send."""
    import json

    return [
        json.dumps(row, separators=(",", ":")).encode()
        for rows in load_tables().values()
        for row in rows
    ]


if __name__ == "__main__":
    for table, rows in load_tables().items():
        print(f"{table:24} {len(rows):5} rows")
