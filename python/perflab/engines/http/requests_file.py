"""Reading a ``--requests`` file line by line, with memory bounded per request.

A 60 MB file of 4 million one-line requests took 1.45 GB (the whole text, then every
line as a string, then a dict per line) and a minute to read. Here the file's bytes
are read once (at most :data:`perflab.files.MAX_INPUT_BYTES`) and walked line by line;
each distinct line is parsed and checked once, and a line seen before is the same
request object again (a replay log repeats its requests), so a repeated line costs one
list slot. A file holds at most :data:`MAX_REQUESTS` requests and at most
:data:`MAX_DISTINCT` distinct ones: the native engine keeps every request encoded,
about 300 bytes each, so a million distinct requests would take about 0.3 GB there.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from perflab.errors import UsageError

#: the keys a request object may have
_REQUEST_KEYS = {"method", "path", "headers", "body"}
#: Most requests (lines) in one ``--requests`` file.
MAX_REQUESTS = 1_000_000
#: Most distinct requests in one file (each is kept encoded by the engine).
MAX_DISTINCT = 250_000


def load_requests(path: str | Path) -> list[dict[str, Any]]:
    """Read a ``--requests`` file: JSON lines, one request object per line.

    Each object may have ``method`` (default GET), ``path`` (default the URL's path;
    must start with ``/``), ``headers`` (an object or a list of [name, value]) and
    ``body`` (a string). Blank lines and lines starting with ``#`` are skipped; a file
    holding one JSON array of such objects is accepted too. Requests are sent
    round-robin.

    Returns:
        The request dicts, in file order (equal lines share one dict; read line by line
        with memory bounded per request, :func:`read_requests`).

    Raises:
        UsageError: missing file, bad JSON, unknown keys, wrong types, no request, or
            more requests than the file may hold.
    """
    path = Path(path)
    requests = read_requests(path, _json, _check_request)  # line by line, bounded
    if not requests:
        raise UsageError(
            f"--requests {path}: no requests in it; write one JSON object per "
            'line, e.g. {"method": "GET", "path": "/items/1"}'
        )
    return requests


def _json(text: str, path: Path, line: int) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"--requests {path} line {line + exc.lineno - 1}: not valid JSON "
            f"({exc.msg}); write one JSON object per line"
        ) from None


def _check_request(item: Any, path: Path, line: int) -> dict[str, Any]:
    """Check one request object's keys and types. Raises UsageError naming the line."""
    where = f"--requests {path} line {line}"
    if not isinstance(item, dict):
        raise UsageError(
            f"{where}: expected a JSON object like "
            '{"method": "POST", "path": "/x", "body": "..."}'
        )
    unknown = set(item) - _REQUEST_KEYS
    if unknown:
        raise UsageError(
            f"{where}: unknown key(s) {', '.join(sorted(unknown))}; "
            f"use {', '.join(sorted(_REQUEST_KEYS))}"
        )
    for key in ("method", "path", "body"):
        if key in item and not isinstance(item[key], str):
            raise UsageError(f"{where}: {key} must be a string")
    if "path" in item and not item["path"].startswith("/"):
        raise UsageError(f"{where}: path {item['path']!r} must start with '/'")
    headers = item.get("headers", {})
    if isinstance(headers, dict):
        item["headers"] = [(str(k), str(v)) for k, v in headers.items()]
    elif isinstance(headers, list) and all(isinstance(h, list) and len(h) == 2 for h in headers):
        item["headers"] = [(str(k), str(v)) for k, v in headers]
    else:
        raise UsageError(f"{where}: headers must be an object or a list of [name, value]")
    return item


def read_requests(
    path: Path,
    parse: Callable[[str, Path, int], Any],
    check: Callable[[Any, Path, int], dict[str, Any]],
) -> list[dict[str, Any]]:
    """The requests of a ``--requests`` file, in file order.

    Args:
        path: the file (JSON lines, or one JSON array of request objects).
        parse: ``parse(text, path, line)``: the JSON value of one line (raises
            UsageError naming the line).
        check: ``check(value, path, line)``: the checked request dict (raises UsageError).

    Returns:
        One dict per request; equal lines give the same dict object.

    Raises:
        UsageError: an unreadable, oversized or non-UTF-8 file, a bad line, more than
            :data:`MAX_REQUESTS` requests or :data:`MAX_DISTINCT` distinct ones, or none.
    """
    from perflab import files

    data = files.read_bytes(path, f"--requests {path}")
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    pieces = _elements(_text(data, path, 1)) if data.lstrip()[:1] == b"[" else _lines(data, path)
    seen: dict[str | bytes, dict[str, Any]] = {}
    out: list[dict[str, Any]] = []
    for number, piece in pieces:
        request = seen.get(piece)
        if request is None:
            _bound(len(out) + 1, len(seen) + 1, path)
            text = piece if isinstance(piece, str) else _text(piece, path, number)
            request = seen[piece] = check(parse(text, path, number), path, number)
        elif len(out) >= MAX_REQUESTS:
            _bound(len(out) + 1, len(seen), path)
        out.append(request)
    return out


def _lines(data: bytes, path: Path) -> Iterator[tuple[int, bytes]]:
    """(line number, line) of every line that holds a request (not blank, not ``#``)."""
    for number, raw in enumerate(io.BytesIO(data), 1):
        line = raw.strip()
        if line and not line.startswith(b"#"):
            yield number, line


def _elements(text: str) -> Iterator[tuple[int, str]]:
    """(line number, JSON text) of each element of a JSON array, one at a time (the
    whole array is never parsed at once). A malformed array yields the rest of the
    text from the fault, whose parse names the line."""

    decoder = json.JSONDecoder()
    index, line, at = text.index("[") + 1, 1, 0
    while True:
        while index < len(text) and text[index] in " \t\r\n":
            index += 1
        if index < len(text) and text[index] == "]" and not text[index + 1 :].strip():
            return
        line += text.count("\n", at, index)
        at = index
        try:
            _, end = decoder.raw_decode(text, index)
        except json.JSONDecodeError:
            yield line, text[index:]  # its parse raises, naming the line
            return
        yield line, text[index:end]
        index = end
        while index < len(text) and text[index] in " \t\r\n":
            index += 1
        if index < len(text) and text[index] == ",":
            index += 1
        elif index < len(text) and text[index] == "]" and not text[index + 1 :].strip():
            return
        else:
            yield line, text[index:] or "]"  # a missing comma or bracket: its parse raises
            return


def _text(data: bytes, path: Path, line: int) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"--requests {path} line {line}: not UTF-8 text (byte 0x{data[exc.start]:02x}: "
            "a binary file?); write one JSON object per line"
        ) from None


def _bound(requests: int, distinct: int, path: Path) -> None:
    if requests > MAX_REQUESTS:
        raise UsageError(
            f"--requests {path}: more than {MAX_REQUESTS:,} requests; requests are sent "
            "round-robin, so a sample of the file (or its distinct requests) gives the same "
            "mix: pass a smaller file"
        )
    if distinct > MAX_DISTINCT:
        raise UsageError(
            f"--requests {path}: more than {MAX_DISTINCT:,} distinct requests (the engine "
            "keeps each encoded, about 300 bytes); pass a sample of the file"
        )
