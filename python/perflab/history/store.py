"""The history database: SQLite (the standard library's ``sqlite3``), WAL mode, versioned.

Layout (schema version :data:`SCHEMA_VERSION`, kept in ``PRAGMA user_version``):

* ``runs``: one row per recorded invocation: kind (run, cmd, http, doctor), start
  time, git commit/branch/dirty/commit time, the environment fingerprint's hash
  and host, the command line, the count of distinct benchmarks, the results
  file's path, size and SHA-256;
* ``documents``: each run's results file, whole, zlib-compressed (the database is
  the source of truth: a run can be compared or exported after its file is gone);
* ``tags``: the user's ``--tag`` words of each run;
* ``benchmarks``: one summary row per benchmark and metric
  (:class:`perflab.history.rows.SummaryRow`), indexed by benchmark for trend queries.

Every run is inserted in one transaction (``with connection``), so a crash or
Ctrl-C leaves the run wholly in or wholly out. WAL journaling lets readers work
while a run is being recorded. Older databases are migrated forward on open by
the scripts in :data:`MIGRATIONS`; a newer one is refused with a clear message.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import sqlite3
import weakref
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perflab.errors import UsageError
from perflab.history import claim
from perflab.model.summary_row import SummaryRow

if TYPE_CHECKING:
    from perflab.model.history import RunInfo, TrendPoint

SCHEMA_VERSION = 2
#: Migration scripts: MIGRATIONS[v] takes a database from version v to v + 1.
MIGRATIONS: dict[int, str] = {
    0: """
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        kind TEXT NOT NULL,
        created TEXT NOT NULL,
        recorded TEXT NOT NULL,
        git_commit TEXT,
        git_branch TEXT,
        git_dirty INTEGER,
        git_time TEXT,
        fingerprint TEXT NOT NULL,
        hostname TEXT,
        command_line TEXT NOT NULL,
        results_path TEXT,
        sha256 TEXT NOT NULL,
        size_bytes INTEGER NOT NULL,
        document BLOB NOT NULL
    );
    CREATE INDEX runs_created ON runs (created);
    CREATE INDEX runs_commit ON runs (git_commit);
    CREATE TABLE tags (
        run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        tag TEXT NOT NULL,
        PRIMARY KEY (run_id, tag)
    );
    CREATE TABLE benchmarks (
        run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        bench TEXT NOT NULL,
        metric TEXT NOT NULL,
        unit TEXT NOT NULL,
        value REAL,
        ci_low REAL,
        ci_high REAL,
        units INTEGER NOT NULL,
        failed INTEGER NOT NULL,
        PRIMARY KEY (run_id, bench, metric)
    );
    CREATE INDEX benchmarks_bench ON benchmarks (bench, metric, run_id);
    """,
    # 2: the results documents in their own table, so that a run's row is a few hundred
    # bytes (reading a trend or the run list no longer walks past 25 KB blobs), and each
    # run's count of distinct benchmarks in its row (no subquery per listed run)
    1: """
    CREATE TABLE documents (
        run_id INTEGER PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
        document BLOB NOT NULL
    );
    INSERT INTO documents (run_id, document) SELECT id, document FROM runs;
    ALTER TABLE runs DROP COLUMN document;
    ALTER TABLE runs ADD COLUMN bench_count INTEGER NOT NULL DEFAULT 0;
    UPDATE runs SET bench_count = (SELECT COUNT(DISTINCT bench) FROM benchmarks b
                                   WHERE b.run_id = runs.id);
    """,
}
#: How long a writer waits for another one's transaction, ms (a busy database is a
#: warning after this, never a stalled benchmark).
BUSY_TIMEOUT_MS = 3000
#: Longest tag accepted, characters; tags per run at most.
MAX_TAG_CHARS, MAX_TAGS = 100, 50


@dataclass
class RunRecord:
    """What is recorded for one invocation.

    Attributes:
        kind: "run", "cmd", "http" or "doctor".
        created: ISO-8601 start time (UTC) from the results file.
        fingerprint: hash of the comparability fields of the environment
            (:func:`perflab.history.record.fingerprint_hash`), 16 hex digits.
        hostname: the machine's name.
        command_line: the exact argv.
        document: the results file's bytes (UTF-8 JSON).
        results_path: where the file was written, or None (stdout).
        git_commit / git_branch / git_dirty / git_time: see
            :class:`perflab.history.gitinfo.GitState`.
        tags: user words.
        rows: the per-benchmark summary rows.
    """

    kind: str
    created: str
    fingerprint: str
    hostname: str | None
    command_line: list[str]
    document: bytes
    results_path: str | None = None
    git_commit: str | None = None
    git_branch: str | None = None
    git_dirty: bool | None = None
    git_time: str | None = None
    tags: list[str] = field(default_factory=list)
    rows: list[SummaryRow] = field(default_factory=list)


def _nan(value: float | None) -> float:
    return math.nan if value is None else float(value)


def _real(value: float) -> float | None:
    return value if math.isfinite(value) else None


class Store:
    """An open history database. Use as a context manager, or call :meth:`close`.

    Raises (from the constructor):
        UsageError: the path is a folder or not a database, or its schema is newer
            than this perflab knows.
        sqlite3.Error: the database can't be opened or migrated (e.g. read-only, locked).
    """

    def __init__(self, path: str | Path, create: bool = True) -> None:
        self.path = Path(path)
        if self.path.is_dir():
            raise UsageError(
                f"history {self.path}: is a folder; give a file path, e.g. "
                f"{self.path / 'history.sqlite'}"
            )
        if not create and not self.path.exists():
            raise UsageError(
                f"history {self.path}: no such database; record a run first "
                "(perflab run/cmd/http record automatically) or pass --history"
            )
        legacy = claim.check_path(self.path)
        if legacy is None and create:
            legacy = claim.create(self.path, _build)
        self.db = self._connect(create)
        # closed at exit too, even by a caller that never calls close(): the console
        # script exits without the interpreter's teardown (cli.run), and an unclosed
        # WAL database leaves its -wal and -shm files beside it
        self._closer = weakref.finalize(self, self.db.close)
        try:
            self.db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            self.db.execute("PRAGMA foreign_keys = ON")
            # WAL + NORMAL: a commit survives a crash of perflab (not of the OS); each
            # run still goes in whole or not at all
            self.db.execute("PRAGMA synchronous = NORMAL")
            if legacy and create:  # an older perflab's database (claim.check_path): stamp it
                self.db.execute(f"PRAGMA application_id = {claim.APPLICATION_ID}")
            self._migrate()
        except sqlite3.DatabaseError as exc:
            self.db.close()
            if "not a database" in str(exc) or "malformed" in str(exc):
                raise UsageError(
                    f"history {self.path}: is not a perflab history database "
                    f"({exc}); pass another path with --history"
                ) from None
            raise
        except BaseException:
            self.db.close()
            raise

    def _connect(self, create: bool) -> sqlite3.Connection:
        """The connection; a reader in a folder it can't write (read-only, immutable, a
        read-only mount: WAL needs a ``-shm`` file beside the database) falls back to
        reading the file as immutable, which writes nothing."""
        db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        if create:
            return db
        try:
            db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            return db
        except sqlite3.OperationalError:
            db.close()
        except BaseException:  # malformed, not a database…: closed here, never left open
            db.close()
            raise
        from urllib.parse import quote

        uri = f"file:{quote(str(self.path.absolute()))}?immutable=1"
        return sqlite3.connect(uri, uri=True, isolation_level=None)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection (idempotent)."""
        self._closer()

    @property
    def version(self) -> int:
        """The database's schema version."""
        return int(self.db.execute("PRAGMA user_version").fetchone()[0])

    def _migrate(self) -> None:
        version = self.version
        if version > SCHEMA_VERSION:
            raise UsageError(
                f"history {self.path}: schema version {version} is newer than this "
                f"perflab knows ({SCHEMA_VERSION}); upgrade perflab"
            )
        if version == SCHEMA_VERSION:
            return
        self.db.execute("PRAGMA journal_mode = WAL")
        self.db.execute("BEGIN IMMEDIATE")
        try:
            version = self.version  # another process may have migrated meanwhile
            while version < SCHEMA_VERSION:
                for statement in MIGRATIONS[version].split(";"):
                    if statement.strip():
                        self.db.execute(statement)
                version += 1
                self.db.execute(f"PRAGMA user_version = {version}")
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    # ------------------------------------------------------------------ writing

    def add(self, record: RunRecord) -> int:
        """Insert one run, its tags and rows in a single transaction; return its id.

        Raises:
            sqlite3.Error: the insert failed (nothing of the run is kept).
        """
        from perflab.digest import sha256

        recorded = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        tags = sorted({t[:MAX_TAG_CHARS] for t in record.tags})[:MAX_TAGS]
        self.db.execute("BEGIN IMMEDIATE")
        try:
            cursor = self.db.execute(
                "INSERT INTO runs (kind, created, recorded, git_commit, git_branch, git_dirty, "
                "git_time, fingerprint, hostname, command_line, results_path, sha256, "
                "size_bytes, bench_count) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    record.kind,
                    record.created,
                    recorded,
                    record.git_commit,
                    record.git_branch,
                    None if record.git_dirty is None else int(record.git_dirty),
                    record.git_time,
                    record.fingerprint,
                    record.hostname,
                    json.dumps(record.command_line),
                    record.results_path,
                    sha256(record.document).hexdigest(),
                    len(record.document),
                    len({r.bench for r in record.rows}),
                ),
            )
            run_id = int(cursor.lastrowid or 0)
            self.db.execute(
                "INSERT INTO documents (run_id, document) VALUES (?, ?)",
                (run_id, zlib.compress(record.document, 6)),
            )
            self.db.executemany(
                "INSERT INTO tags (run_id, tag) VALUES (?, ?)", [(run_id, t) for t in tags]
            )
            self.db.executemany(
                "INSERT OR REPLACE INTO benchmarks (run_id, bench, metric, unit, value, ci_low, "
                "ci_high, units, failed) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        run_id,
                        r.bench,
                        r.metric,
                        r.unit,
                        _real(r.value),
                        _real(r.ci_low),
                        _real(r.ci_high),
                        r.units,
                        int(r.failed),
                    )
                    for r in record.rows
                ],
            )
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        return run_id

    # ------------------------------------------------------------------ reading

    _RUN_COLUMNS = (
        "r.id, r.kind, r.created, r.git_commit, r.git_branch, r.git_dirty, "
        "r.git_time, r.fingerprint, r.hostname, r.command_line, r.results_path, "
        "r.sha256, r.size_bytes, r.bench_count, "
        "(SELECT group_concat(tag, char(31)) FROM tags t WHERE t.run_id = r.id)"
    )

    @staticmethod
    def _info(row: Sequence[Any], argvs: dict[str, list[str]] | None = None) -> RunInfo:
        """A RunInfo from the :data:`_RUN_COLUMNS` of one row; ``argvs`` memoises parsed
        command lines (runs of one benchmark mostly share theirs)."""
        from perflab.model.history import RunInfo  # here: recording a run never lists one

        text = row[9]
        argv = argvs.get(text) if argvs is not None else None
        if argv is None:
            try:
                parsed = json.loads(text)
            except (TypeError, ValueError):
                parsed = []
            argv = [str(a) for a in parsed] if isinstance(parsed, list) else []
            if argvs is not None:
                argvs[text] = argv
        return RunInfo(
            row[0],
            row[1],
            row[2],
            row[3],
            row[4],
            None if row[5] is None else bool(row[5]),
            row[6],
            row[7],
            row[8],
            list(argv),
            row[10],
            row[11],
            row[12],
            row[13],
            tuple(sorted(row[14].split("\x1f"))) if row[14] else (),
        )

    def runs(
        self,
        *,
        kind: str | None = None,
        bench_glob: str | None = None,
        tag: str | None = None,
        branch: str | None = None,
        fingerprint: str | None = None,
        since: str | None = None,
        until: str | None = None,
        commit: str | None = None,
        limit: int | None = None,
    ) -> list[RunInfo]:
        """Recorded runs, newest first (by start time, then id), filtered.

        Args:
            kind: "run", "cmd", "http" or "doctor".
            bench_glob: a GLOB pattern (``*``, ``?``, ``[…]``, case-sensitive) that
                at least one benchmark id of the run matches.
            tag / branch / commit: exact match (``commit`` may be a prefix).
            fingerprint: the fingerprint hash or a prefix of it.
            since / until: ISO-8601 bounds on the start time (``until`` inclusive of
                that day when only a date is given).
            limit: the most rows returned.

        Returns:
            :class:`RunInfo` list.
        """
        where, params = [], []  # type: ignore[var-annotated]
        if kind:
            where.append("r.kind = ?")
            params.append(kind)
        if bench_glob:
            where.append(
                "EXISTS (SELECT 1 FROM benchmarks b WHERE b.run_id = r.id AND b.bench GLOB ?)"
            )
            params.append(bench_glob)
        if tag:
            where.append("EXISTS (SELECT 1 FROM tags t WHERE t.run_id = r.id AND t.tag = ?)")
            params.append(tag)
        if branch:
            where.append("r.git_branch = ?")
            params.append(branch)
        if commit:
            where.append("r.git_commit LIKE ? ESCAPE '\\'")
            params.append(_like_prefix(commit))
        if fingerprint:
            where.append("r.fingerprint LIKE ? ESCAPE '\\'")
            params.append(_like_prefix(fingerprint))
        if since:
            where.append("r.created >= ?")
            params.append(since)
        if until:
            where.append("r.created <= ?")
            params.append(until + ("T99" if len(until) == 10 else ""))
        sql = f"SELECT {self._RUN_COLUMNS} FROM runs r"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY r.created DESC, r.id DESC"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [self._info(row) for row in self.db.execute(sql, params)]

    def run(self, run_id: int) -> RunInfo | None:
        """The run with this id, or None."""
        row = self.db.execute(
            f"SELECT {self._RUN_COLUMNS} FROM runs r WHERE r.id = ?", (run_id,)
        ).fetchone()
        return None if row is None else self._info(row)

    def document(self, run_id: int) -> bytes:
        """The results file of run ``run_id`` as it was written (bytes).

        Raises:
            UsageError: no such run.
        """
        row = self.db.execute(
            "SELECT document FROM documents WHERE run_id = ?", (run_id,)
        ).fetchone()
        if row is None:
            raise UsageError(f"history {self.path}: no run #{run_id}; see perflab history")
        return zlib.decompress(row[0])

    def rows(self, run_id: int) -> list[SummaryRow]:
        """The summary rows of one run, in benchmark order."""
        return [
            SummaryRow(b, m, u, _nan(v), _nan(lo), _nan(hi), int(n), bool(f))
            for b, m, u, v, lo, hi, n, f in self.db.execute(
                "SELECT bench, metric, unit, value, ci_low, ci_high, units, failed "
                "FROM benchmarks WHERE run_id = ? ORDER BY rowid",
                (run_id,),
            )
        ]

    def benchmarks(self, glob: str = "*") -> list[tuple[str, str, int]]:
        """(benchmark id, metric, runs) for every benchmark matching a GLOB, sorted by id."""
        return [
            (str(b), str(m), int(n))
            for b, m, n in self.db.execute(
                "SELECT bench, metric, COUNT(*) FROM benchmarks WHERE bench GLOB ? "
                "GROUP BY bench, metric ORDER BY bench, metric",
                (glob,),
            )
        ]

    def trend(
        self,
        bench: str,
        metric: str = "time",
        fingerprint: str | None = None,
        before: int | None = None,
    ) -> list[TrendPoint]:
        """Every recorded figure of one benchmark, in commit order.

        Commit order: by the commit's time (runs without git by their start time),
        then by start time and id, so several runs of one commit stay in the order
        they ran.

        Args:
            bench / metric: the benchmark id and metric ("time", "p50", "p99", "rate").
            fingerprint: only runs with this fingerprint hash.
            before: only runs with a smaller id.

        Returns:
            :class:`TrendPoint` list, oldest first.
        """
        sql = (
            f"SELECT {self._RUN_COLUMNS}, b.bench, b.metric, b.unit, b.value, b.ci_low, "
            "b.ci_high, b.units, b.failed FROM benchmarks b JOIN runs r ON r.id = b.run_id "
            "WHERE b.bench = ? AND b.metric = ?"
        )
        params: list[object] = [bench, metric]
        if fingerprint:
            sql += " AND r.fingerprint = ?"
            params.append(fingerprint)
        if before is not None:
            sql += " AND r.id < ?"
            params.append(before)
        sql += " ORDER BY COALESCE(r.git_time, r.created), r.created, r.id"
        from perflab.model.history import TrendPoint

        out, argvs = [], {}  # type: ignore[var-annotated]
        for row in self.db.execute(sql, params):
            b, m, u, v, lo, hi, n, f = row[15:]
            out.append(
                TrendPoint(
                    self._info(row[:15], argvs),
                    SummaryRow(b, m, u, _nan(v), _nan(lo), _nan(hi), int(n), bool(f)),
                )
            )
        return out

    def count(self) -> int:
        """Number of recorded runs."""
        return int(self.db.execute("SELECT COUNT(*) FROM runs").fetchone()[0])


def _build(db: sqlite3.Connection) -> None:
    """Make an empty database perflab's current schema (for :func:`claim.create`)."""
    for version in range(SCHEMA_VERSION):
        for statement in MIGRATIONS[version].split(";"):
            if statement.strip():
                db.execute(statement)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def _like_prefix(text: str) -> str:
    """A LIKE pattern matching values that start with ``text`` literally."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
