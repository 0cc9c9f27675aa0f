"""Compiled JSON Schema validators, kept between processes.

fastjsonschema turns a schema into Python source (≈ 480 kB for the results schema) that
Python then compiles: ≈ 0.25 s of CPU in every process that reads a results file, more
than the rest of ``perflab show``. The compiled code object is kept, marshalled, in
perflab's cache directory and loaded by the next process in ≈ 1 ms.

Where: ``$PERFLAB_CACHE_DIR``, else ``$XDG_CACHE_HOME/perflab``, else
``~/.cache/perflab`` (the XDG base directory convention). A cache file's name is a
SHA-256 of what its code depends on: the schema's bytes, fastjsonschema's version and
the interpreter's bytecode magic number, so an edited schema, another fastjsonschema or
another Python never loads stale code. Since loading runs code, a file is used only when
it and its directory belong to this user and nobody else may write to them. Anything
that goes wrong (no home, a read-only or full disk, a corrupt file) falls back to
compiling in this process, as fastjsonschema.compile does: the cache only saves time.
"""

from __future__ import annotations

import contextlib
import importlib.util
import marshal
import os
import re
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import CodeType
from typing import Any

from perflab.digest import sha256

#: Bumped when what a cache file holds changes.
FORMAT = b"perflab-schema-cache-1"
#: A cache file bigger than this is not read (the results schema's is ≈ 0.5 MB).
MAX_BYTES = 16 * 1024 * 1024


def cache_dir() -> Path | None:
    """The directory of perflab's cache files, or None when no home is known."""
    if explicit := os.environ.get("PERFLAB_CACHE_DIR"):
        return Path(explicit)
    if xdg := os.environ.get("XDG_CACHE_HOME"):
        return Path(xdg) / "perflab"
    with contextlib.suppress(RuntimeError, KeyError):
        return Path.home() / ".cache" / "perflab"
    return None


def validator(schema_bytes: bytes) -> Callable[[Any], Any]:
    """A validator for the JSON Schema ``schema_bytes`` (UTF-8 JSON).

    Returns:
        fastjsonschema's validate function: returns the document, raises
        ``fastjsonschema.JsonSchemaValueException`` on the first problem.

    Raises:
        ValueError / fastjsonschema.JsonSchemaDefinitionException: not a valid schema.
    """
    import fastjsonschema

    key = sha256(
        FORMAT
        + importlib.util.MAGIC_NUMBER
        + fastjsonschema.VERSION.encode()
        + b"\0"
        + schema_bytes
    ).hexdigest()
    directory = cache_dir()
    path = directory / f"validator-{key[:32]}.marshal" if directory else None
    loaded = _load(path) if path else None
    if loaded is None:
        import json

        source = fastjsonschema.compile_to_code(json.loads(schema_bytes))
        entry = re.search(r"^def (\w+)\(", source, re.M)
        if entry is None:  # fastjsonschema always generates the root function first
            return fastjsonschema.compile(json.loads(schema_bytes))
        loaded = entry[1], compile(source, "<perflab schema validator>", "exec")
        if path:
            _store(path, loaded)
    name, code = loaded
    namespace: dict[str, Any] = {}
    exec(code, namespace)  # noqa: S102 - fastjsonschema's generated code, or our own cache
    return namespace[name]


def _trusted(st: os.stat_result) -> bool:
    """Owned by this user and writable by nobody else."""
    return st.st_uid == os.getuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _load(path: Path) -> tuple[str, CodeType] | None:
    """The (function name, code object) kept at ``path``, or None."""
    try:
        if (
            not (_trusted(os.stat(path.parent)) and _trusted(st := os.stat(path)))
            or st.st_size > MAX_BYTES
        ):
            return None
        with open(path, "rb") as f:
            name, code = marshal.loads(f.read())
    except (OSError, ValueError, EOFError, TypeError):
        return None
    return (name, code) if isinstance(name, str) and isinstance(code, CodeType) else None


def _store(path: Path, loaded: tuple[str, CodeType]) -> None:
    """Write ``loaded`` to ``path`` whole (a temporary file renamed), or not at all."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not _trusted(os.stat(path.parent)):
            return
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".validator-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(marshal.dumps(loaded))
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError:
        pass
