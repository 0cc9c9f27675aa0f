"""Automatic recording: what ``run``, ``cmd``, ``http`` and ``doctor`` add to history.

Recording happens *after* the results file is saved, and any failure of it (a
read-only folder, a locked or damaged database, a full disk) is one
``warning:`` line on stderr: history never loses or blocks a measurement.

Where the database is: ``--history PATH``, else ``$PERFLAB_HISTORY``, else
:data:`DEFAULT_PATH` (relative to the current directory, beside the default
results files); ``--no-history`` or ``PERFLAB_HISTORY=off`` skips recording.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from perflab.digest import sha256
from perflab.errors import UsageError

#: The database when neither --history nor PERFLAB_HISTORY says otherwise.
DEFAULT_PATH = Path(".perflab") / "history.sqlite"
#: Values of PERFLAB_HISTORY that turn recording off.
OFF_WORDS = ("off", "no", "none", "0")
#: Fingerprint fields that decide whether two runs are comparable (hashed together).
FINGERPRINT_KEYS = (
    "hostname",
    "machine",
    "cpu_model",
    "cpu_count",
    "virtualization",
    "clocksource.current",
    "governor",
    "kernel",
    "python.implementation",
    "python.version",
    "perflab_version",
)


def database(path: str | Path | None = None, off: bool = False) -> Path | None:
    """The history database to use, or None when recording is off.

    Args:
        path: the ``--history PATH`` given, or None.
        off: ``--no-history`` was given.

    Order: ``off`` (None), ``path``, ``$PERFLAB_HISTORY`` (``off`` turns recording off),
    :data:`DEFAULT_PATH`. ``/dev/null`` turns recording off too (as it discards a
    ``--json``), instead of making a ``/dev/null-journal``.
    """
    if off:
        return None
    if path:
        chosen = Path(path)
    else:
        env = os.environ.get("PERFLAB_HISTORY", "").strip()
        if env.lower() in OFF_WORDS:
            return None
        chosen = Path(env) if env else DEFAULT_PATH
    return None if str(chosen) == os.devnull else chosen


def check_database(path: Path | None) -> None:
    """Before measuring: the history database a measuring command will record into
    (``path``, None when recording is off) is perflab's or absent
    (:func:`perflab.history.claim.check_path`), so that a foreign file is refused with
    one line before anything runs, not after.

    Raises:
        UsageError: a user's own file, an empty file, a device or pipe.
    """
    from perflab.history import claim

    if path is not None:
        claim.check_path(path)


def check_tags(tags: list[str]) -> list[str]:
    """Tags as given, checked: non-empty, one line, at most 100 characters.

    Raises:
        UsageError: a bad tag.
    """
    from perflab.history.store import MAX_TAG_CHARS, MAX_TAGS

    for tag in tags:
        if not tag.strip() or len(tag) > MAX_TAG_CHARS or any(c in tag for c in "\r\n\x00"):
            raise UsageError(
                f"--tag {tag[:40]!r}: a tag is one line of 1 to {MAX_TAG_CHARS} characters"
            )
    if len(tags) > MAX_TAGS:
        raise UsageError(f"--tag: at most {MAX_TAGS} tags per run")
    return [t.strip() for t in tags]


def _dig(env: dict[str, Any], dotted: str) -> Any:
    value: Any = env
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def fingerprint_hash(env: dict[str, Any]) -> str:
    """16 hex digits of SHA-256 over the comparability fields of a fingerprint.

    Args:
        env: an environment fingerprint (:func:`perflab.environment.fingerprint`).

    Returns:
        The hash; runs with equal hashes ran on the same machine, CPU, kernel,
        Python and perflab version (:data:`FINGERPRINT_KEYS`); load averages and
        other per-run figures don't enter it.
    """
    key = {k: _dig(env, k) for k in FINGERPRINT_KEYS}
    return sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:16]


def make_record(
    kind: str,
    document: dict[str, Any],
    rows: list[Any],
    tags: list[str],
    results_path: Any,
    git: bool = True,
) -> Any:
    """A :class:`perflab.history.store.RunRecord` from a results (or doctor) document.

    The git state is read from the current directory when ``git`` is True (False for
    an imported file: the commit it was measured at is unknown, so none is recorded).
    """
    from perflab.history import gitinfo
    from perflab.history.store import RunRecord

    env = document.get("environment") if isinstance(document.get("environment"), dict) else {}
    state = gitinfo.state() if git else gitinfo.GitState()
    argv = document.get("command_line")
    return RunRecord(
        kind=kind,
        created=str(document.get("created") or _now()),
        fingerprint=fingerprint_hash(env),
        hostname=env.get("hostname"),
        command_line=argv if isinstance(argv, list) else [],
        document=json.dumps(document, allow_nan=False, separators=(",", ":")).encode(),
        results_path=None if results_path is None else str(Path(results_path).resolve()),
        git_commit=state.commit,
        git_branch=state.branch,
        git_dirty=state.dirty,
        git_time=state.commit_time,
        tags=tags,
        rows=rows,
    )


def _now() -> str:
    import datetime as dt

    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def record_results(
    db: Path | None,
    tags: list[str],
    results: Any,
    summaries: dict[str, Any] | None,
    destination: Any = None,
) -> int | None:
    """Record a measuring command's results; a failure is a warning, never an error.

    Args:
        db: the history database (:func:`database`; None: recording is off).
        tags: the run's tags (``--tag``, checked by :func:`check_tags`).
        results: the :class:`perflab.model.Results` just saved.
        summaries: benchmark id → summary dict, as written into the file (None:
            recomputed from the raw data).
        destination: the results file's :class:`perflab.files.Destination` (or None).

    Returns:
        The new run id, or None when recording is off or failed.
    """

    def build() -> tuple[dict[str, Any], list[Any]]:
        from perflab.history.rows import recompute, summary_rows

        found = recompute(results) if summaries is None else summaries
        return results.to_dict(found), summary_rows(results, found)

    return _record(db, tags, results.kind, build, destination)


def record_document(
    db: Path | None,
    tags: list[str],
    kind: str,
    document: dict[str, Any],
    destination: Any = None,
) -> int | None:
    """Record a document without benchmark rows (``doctor``) in ``db`` with ``tags`` (as
    :func:`record_results`); failures are warnings.

    Returns:
        The new run id, or None when recording is off or failed.
    """
    return _record(db, tags, kind, lambda: (document, []), destination)


def _record(
    db: Path | None,
    tags: list[str],
    kind: str,
    build: Callable[[], tuple[dict[str, Any], list[Any]]],
    destination: Any,
) -> int | None:
    """Insert the (document, benchmark rows) ``build`` returns into the history database
    ``db`` with ``tags``, unless recording is off (None); any failure (building included) is one
    ``warning:`` line and None, never an exception: history must never fail a measurement."""
    path = db
    if path is None:
        return None
    try:
        document, rows = build()
        return _insert(path, make_record(kind, document, rows, list(tags), _where(destination)))
    except Exception as exc:  # noqa: BLE001 - history must never fail a measurement
        _warn(path, exc)
        return None
        return None


def _where(destination: Any) -> Path | None:
    """The results file's path, None for stdout and stdout-style targets."""
    if destination is None or getattr(destination, "in_place", False):
        return None
    return getattr(destination, "path", None)


def _insert(path: Path, record: Any) -> int:
    from perflab.history.store import Store

    with Store(path) as store:
        return store.add(record)


def _warn(path: Path, exc: BaseException) -> None:
    from perflab.report.escape import terminal

    sys.stderr.write(
        terminal(
            f"warning: not recorded in history {path}: {exc}; the results "
            "file is not affected (record it later with perflab history "
            "--import FILE, or pass --no-history)",
            one_line=True,
        )
        + "\n"
    )
