"""Which existing files are perflab's own, so that it may replace them (perflab.files).

A file is perflab's when it is empty or starts like the output perflab writes of that
kind: a PNG, the HTML report's and Markdown's first line, the CSV headers, the exports'
marks; a JSON file must also parse as one of perflab's documents, with the real schema
markers of its kind, so a user's file with a ``"tool": "perflab"`` key is not replaced.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

#: Largest results (JSON) file perflab reads, bytes (perflab.files re-exports it).
MAX_RESULTS_BYTES = 256 * 2**20
#: How much of an existing export (github-action-benchmark, hyperfine JSON, .hgrm) is read to
#: find perflab's mark in it before replacing it, bytes.
_EXPORT_HEAD = 1 << 20
#: JSON text up to a key of the object just opened (scalars and whole strings only, so
#: the key is that object's own, not one nested in a value).
_FLAT = rb'(?:"(?:[^"\\]|\\.)*"|[^{}\[\]"])*?'
#: A JSON document perflab wrote (results, compare, fit, doctor, the hyperfine export):
#: ``"tool": "perflab"`` among the top-level keys before the first nested value (it is
#: first or second). A file that only mentions perflab (a package.json) is not ours.
_JSON_MARK = re.compile(rb"\s*\{" + _FLAT + rb'"tool"\s*:\s*"perflab"')
#: The exports perflab wrote (report.peer_formats): a perflab JSON document (hyperfine),
#: a github-action-benchmark list whose first entry's "extra" starts "perflab", an .hlog's
#: first line, an .hgrm's header followed by its closing "#[perflab: …" line.
_EXPORT_MARKS = (
    _JSON_MARK,
    re.compile(rb"\s*\[\s*\{" + _FLAT + rb'"extra"\s*:\s*"perflab[ :]'),
    re.compile(rb"#\[perflab http latency histograms"),
    re.compile(rb"\s*Value\s+Percentile\s+TotalCount[^\n]*\n(?:.*\n)*?#\[perflab: "),
)
#: How each kind of output file perflab writes starts (what makes an existing file "ours"):
#: a CSV file by the first columns of its header, as the CSV records of ``run``
#: (report.run_table.summary_records), ``cmd`` (report.cmd_table), ``http``
#: (report.http_table.step_records), ``compare``, ``fit`` and ``doctor`` begin;
#: tests/reliability/test_output_files.py checks they do.
_SIGNATURES = {
    "json": (b"{",),
    "png": (b"\x89PNG\r\n\x1a\n",),
    "html": (b"<!DOCTYPE html><!-- perflab report -->",),
    "markdown": (b"<!-- perflab",),
    "asciidoc": (b"// perflab",),
    "orgmode": (b"# perflab",),
    "csv": (
        b"id,group,benchmark,stage,",
        b"id,label,runs,failed,",
        b"step,mode,offered_rate,",
        b"id,kind,metric,unit,",
        b"series,x_label,y_label,",
        b"series,param,",
        b"name,status,detail,",
    ),
}


def ours(path: Path, kind: str) -> bool:
    """True for an empty file or one that starts like a perflab output of ``kind``; a JSON
    file must also parse as one of perflab's documents (:func:`_perflab_document`)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(_EXPORT_HEAD if kind == "export" else 4096)
            if kind == "json" and head and _JSON_MARK.match(head):
                head += fh.read(MAX_RESULTS_BYTES + 1 - len(head))
    except OSError:
        return False
    if not head:
        return True
    if kind == "export":  # peers' formats written by perflab.report.peer_formats: marked inside
        return any(mark.match(head) for mark in _EXPORT_MARKS)
    if kind == "json":
        return bool(_JSON_MARK.match(head)) and _perflab_document(head)
    return head.startswith(_SIGNATURES.get(kind, (b"",)))


#: The kinds of JSON document perflab writes → the top-level keys and the types each one
#: always has besides ``"tool": "perflab"`` (its real schema markers: a user's file with a
#: ``"tool": "perflab"`` key of its own is not perflab's).
_DOCUMENT_MARKS: dict[str | None, dict[str, type | tuple[type, ...]]] = {
    "run": {"schema_version": int, "benchmarks": list, "perflab_version": str},
    "cmd": {"schema_version": int, "benchmarks": list, "perflab_version": str},
    "http": {"schema_version": int, "benchmarks": list, "perflab_version": str},
    "trace": {"schema_version": int, "benchmarks": list, "perflab_version": str},
    "doctor": {"doctor_schema_version": int, "perflab_version": str},
    "compare": {"format_version": (int, str), "rows": list},
    "history": {"history_schema_version": int, "perflab_version": str},
    None: {"fits": list, "perflab_version": str},  # fit (no kind of its own)
}


def _perflab_document(data: bytes) -> bool:
    """True when ``data`` parses as a JSON document of perflab's: ``"tool": "perflab"``
    and the markers of its kind (:data:`_DOCUMENT_MARKS`), or the hyperfine export
    (``{"tool": "perflab", "results": [{"command": …, "times": […]}, …]}``)."""
    if len(data) > MAX_RESULTS_BYTES:
        return False
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):
        return False
    if not isinstance(doc, dict) or doc.get("tool") != "perflab":
        return False
    if set(doc) == {"tool", "results"}:  # the hyperfine export (report.cmd_table)
        rows = doc["results"]
        return isinstance(rows, list) and all(
            isinstance(r, dict) and "command" in r and isinstance(r.get("times"), list)
            for r in rows
        )
    # a fit document's "kind" is its fit's ("complexity", "usl", …): the fit markers
    marks = _DOCUMENT_MARKS.get(doc.get("kind")) or _DOCUMENT_MARKS[None]
    return bool(marks) and all(
        isinstance(doc.get(key), types) and not isinstance(doc.get(key), bool)
        for key, types in marks.items()
    )
