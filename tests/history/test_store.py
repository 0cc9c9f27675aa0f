"""The SQLite history store: schema, migrations, one transaction per run, queries."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path

import pytest

from perflab.errors import UsageError
from perflab.history import store as store_module
from perflab.history.store import RunRecord, Store
from perflab.model.history import SummaryRow
from tests.history.helpers import add, results


def test_a_new_database_is_at_the_current_schema_in_wal_mode(tmp_path: Path) -> None:
    with Store(tmp_path / "sub" / "h.sqlite") as store:
        assert store.version == store_module.SCHEMA_VERSION
        assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert store.count() == 0


def test_a_database_from_a_newer_perflab_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    Store(path).close()
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {store_module.SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(UsageError, match="newer than this perflab"):
        Store(path)


def test_migrations_run_in_order_and_are_recorded(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "h.sqlite"
    Store(path).close()
    now = store_module.SCHEMA_VERSION
    monkeypatch.setitem(store_module.MIGRATIONS, now, "ALTER TABLE runs ADD COLUMN note TEXT")
    monkeypatch.setattr(store_module, "SCHEMA_VERSION", now + 1)
    with Store(path) as store:
        assert store.version == now + 1
        assert "note" in [r[1] for r in store.db.execute("PRAGMA table_info(runs)")]


def test_a_version_1_database_gains_each_runs_benchmark_count(tmp_path: Path) -> None:
    """Schema 2 keeps the count of distinct benchmarks in the run's row; the migration
    fills it for the runs already recorded."""
    path = tmp_path / "h.sqlite"
    db = sqlite3.connect(path)
    db.executescript(store_module.MIGRATIONS[0] + "; PRAGMA user_version = 1;")
    db.execute(
        "INSERT INTO runs (id, kind, created, recorded, fingerprint, command_line, "
        "sha256, size_bytes, document) VALUES (1, 'run', '2026-01-01', '2026-01-01', "
        "'f', '[]', 'x', 2, x'00')"
    )
    db.executemany(
        "INSERT INTO benchmarks (run_id, bench, metric, unit, units, failed) "
        "VALUES (1, ?, ?, 's', 1, 0)",
        [("a", "time"), ("b", "p50"), ("b", "p99")],
    )
    db.commit()
    db.close()
    with Store(path) as store:
        assert store.version == store_module.SCHEMA_VERSION >= 2
        assert store.runs()[0].benchmarks == 2
        add(store, results({"x": 1e-6, "y": 2e-6, "z": 3e-6}))
        assert [r.benchmarks for r in store.runs()] == [3, 2]


def test_a_file_that_is_not_a_database_is_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    path.write_text("hello, not sqlite at all " * 100)
    with pytest.raises(UsageError, match="not a perflab history database"):
        Store(path)
    with pytest.raises(UsageError, match="is a folder"):
        Store(tmp_path)
    with pytest.raises(UsageError, match="no such database"):
        Store(tmp_path / "missing.sqlite", create=False)


def test_a_failed_insert_leaves_nothing_of_the_run(tmp_path: Path) -> None:
    with Store(tmp_path / "h.sqlite") as store:
        add(store, results({"a": 1e-6}))
        bad = RunRecord(
            "run",
            "2026-01-02T00:00:00+00:00",
            "f" * 16,
            "ci",
            ["perflab"],
            b"{}",
            rows=[SummaryRow("a", "time", "s", 1.0), SummaryRow(None, "time", "s", 2.0)],
        )  # type: ignore[arg-type]
        with pytest.raises(sqlite3.IntegrityError):
            store.add(bad)
        assert store.count() == 1
        assert store.db.execute("SELECT COUNT(*) FROM benchmarks").fetchone()[0] == 1


def test_documents_rows_and_tags_round_trip(tmp_path: Path) -> None:
    res = results({"fast": 1e-6, "slow": 2e-6})
    with Store(tmp_path / "h.sqlite") as store:
        run_id = add(store, res, commit="a" * 40, tags=["nightly", "x"])
        from perflab import model

        loaded = model.load_bytes(store.document(run_id), "stored")
        assert [b.id for b in loaded.benchmarks] == ["g/fast", "g/slow"]
        rows = store.rows(run_id)
        assert [r.bench for r in rows] == ["g/fast", "g/slow"]
        assert rows[0].value == pytest.approx(1e-6, rel=0.02)
        assert rows[0].ci_low < rows[0].value < rows[0].ci_high
        assert rows[0].units == 6 and not rows[0].failed
        info = store.run(run_id)
        assert info is not None and info.tags == ("nightly", "x") and info.benchmarks == 2


def test_filters_and_newest_first(tmp_path: Path) -> None:
    with Store(tmp_path / "h.sqlite") as store:
        one = add(store, results({"a": 1e-6}, created="2026-01-01T00:00:00+00:00"), tags=["t"])
        two = add(store, results({"b": 1e-6}, created="2026-02-01T00:00:00+00:00"), commit="b" * 40)
        three = add(
            store, results({"a": 1e-6}, created="2026-03-01T00:00:00+00:00", cpu_model="Other")
        )
        assert [r.id for r in store.runs()] == [three, two, one]
        assert [r.id for r in store.runs(bench_glob="g/a")] == [three, one]
        assert [r.id for r in store.runs(tag="t")] == [one]
        assert [r.id for r in store.runs(branch="main")] == [two]
        assert [r.id for r in store.runs(commit="bbbb")] == [two]
        assert [r.id for r in store.runs(since="2026-02-01")] == [three, two]
        assert [r.id for r in store.runs(until="2026-02-01")] == [two, one]
        fp = store.run(three).fingerprint  # type: ignore[union-attr]
        assert [r.id for r in store.runs(fingerprint=fp[:6])] == [three]
        assert [r.id for r in store.runs(limit=1)] == [three]
        # LIKE wildcards in a user's prefix are literal
        assert store.runs(commit="%") == []


def test_trend_is_in_commit_order_then_start_time(tmp_path: Path) -> None:
    with Store(tmp_path / "h.sqlite") as store:
        late = add(
            store,
            results({"a": 1e-6}, created="2026-01-01T00:00:00+00:00"),
            commit="2" * 40,
            time="2026-01-05T00:00:00+00:00",
        )
        early = add(
            store,
            results({"a": 2e-6}, created="2026-01-02T00:00:00+00:00"),
            commit="1" * 40,
            time="2026-01-03T00:00:00+00:00",
        )
        points = store.trend("g/a")
        assert [p.run.id for p in points] == [early, late]
        assert math.isclose(points[0].row.value, 2e-6, rel_tol=0.02)
        assert store.trend("g/a", before=late) == []
        assert store.benchmarks("g/*") == [("g/a", "time", 2)]


def test_a_truncated_database_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    # the console script exits without the interpreter's teardown (cli.run), so a
    # connection left open by the refusal would leave -wal and -shm files beside it
    path = tmp_path / "h.sqlite"
    with Store(path) as store:
        add(store, results({"a": 1.0}))
    path.write_bytes(path.read_bytes()[:150])
    with pytest.raises(sqlite3.DatabaseError, match="malformed") as refused:
        Store(path, create=False)
    assert refused.traceback  # the frames (and what they hold) are still alive here
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h.sqlite"]
