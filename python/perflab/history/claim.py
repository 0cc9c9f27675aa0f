"""Which files perflab may open as its history database, and how it creates one.

perflab writes only into a database it created: a new one carries ``PRAGMA
application_id`` :data:`APPLICATION_ID` from its first byte on disk (it is built under
a temporary name and hard-linked into place, so no half-made or empty file is ever
seen under the user's name); an older perflab database (no application id yet) is
recognised by exactly perflab's tables at its schema version. Anything else (a user's
own SQLite file, an empty file, a device such as ``/dev/null``, a pipe) is refused
with one line before anything is written, so no ``-journal``/``-wal`` sibling appears.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

from perflab.errors import UsageError

#: ``PRAGMA application_id`` of perflab's history databases ("pflb").
APPLICATION_ID = 0x70666C62
#: The tables of a perflab database at each schema version (how an older database
#: without the application id is recognised as perflab's).
TABLES = {1: {"runs", "tags", "benchmarks"}, 2: {"runs", "tags", "benchmarks", "documents"}}
#: The first 16 bytes of every SQLite 3 database file.
_SQLITE_MAGIC = b"SQLite format 3\x00"


def foreign(path: Path, why: str) -> str:
    """The message refusing ``path`` as a history database, ``why`` in brackets."""
    return (
        f"history {path}: is not a perflab history database ({why}); perflab never "
        "writes into a file it did not create: pass another path with --history"
    )


def check_path(path: Path) -> bool | None:
    """Whether perflab may open ``path`` as its history database, without touching it
    (only its 100-byte SQLite header is read).

    Returns:
        None: nothing is there (perflab may create it); False: perflab's database;
        True: a database of an older perflab (no application id: its tables decide).

    Raises:
        UsageError: a device, pipe or other non-regular file, an empty or non-SQLite
            file, or a database with another application id.
    """
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UsageError(f"history {path}: can't use it ({exc.strerror})") from None
    if not stat.S_ISREG(info.st_mode):
        raise UsageError(
            f"history {path}: is not a regular file (a device, pipe or socket); give a "
            "file path, or --no-history"
        )
    try:
        with open(path, "rb") as fh:
            header = fh.read(100)
    except OSError as exc:
        raise UsageError(f"history {path}: can't read it ({exc.strerror})") from None
    if len(header) < 100 or not header.startswith(_SQLITE_MAGIC):
        raise UsageError(foreign(path, "an empty file" if not header else "not an SQLite file"))
    application_id = int.from_bytes(header[68:72], "big")
    if application_id == APPLICATION_ID:
        return False
    if application_id != 0:
        raise UsageError(foreign(path, f"application id {application_id:#x}"))
    if _tables(path) not in TABLES.values():
        raise UsageError(foreign(path, "it holds another program's tables"))
    return True


def _tables(path: Path) -> set[str] | None:
    """The table names of the SQLite file ``path``, read as immutable (no lock, no
    ``-shm`` or ``-journal`` sibling, nothing written); None when it can't be read."""
    from urllib.parse import quote

    uri = f"file:{quote(str(path.absolute()))}?immutable=1"
    try:
        db = sqlite3.connect(uri, uri=True)
        try:
            return {
                str(row[0])
                for row in db.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' "
                    "AND name NOT LIKE 'sqlite_%'"
                )
            }
        finally:
            db.close()
    except sqlite3.Error:
        return None


def create(path: Path, build: Callable[[sqlite3.Connection], None]) -> bool:
    """Create a complete perflab database at ``path`` atomically.

    It is built (``build(connection)`` makes the schema) under a temporary name beside
    ``path``, stamped with :data:`APPLICATION_ID`, switched to WAL, closed, then
    hard-linked into place, which fails if anything appeared there meanwhile (another
    perflab's database: then that one is checked as usual).

    Returns:
        :func:`check_path` of what is at ``path`` afterwards.

    Raises:
        OSError, sqlite3.Error: the folder can't be made or written.
        UsageError: what appeared at ``path`` meanwhile is not perflab's.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".new", dir=path.parent)
    os.close(fd)
    try:
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(name, 0o666 & ~mask)
        db = sqlite3.connect(name, isolation_level=None)
        try:
            db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            build(db)
            db.execute("PRAGMA journal_mode = WAL")
        finally:
            db.close()
        try:
            os.link(name, path)
        except FileExistsError:
            pass
        except OSError:  # no hard links on this filesystem
            if not os.path.lexists(path):
                os.replace(name, path)
    finally:
        Path(name).unlink(missing_ok=True)
    return bool(check_path(path))
