"""Peers' result files in: pyperf, hyperfine and pytest-benchmark JSON read into perflab's
results model (:class:`perflab.model.Results`).

Reading (:func:`read`): :func:`perflab.model.load` hands every JSON document that is not a
perflab file here, so ``show``, ``compare``, ``fit``, ``perflab.load`` and ``run
--compare-to`` accept the peers' files too. The format is detected from the document's
shape (:func:`detect`) or named by the caller (``--from``: ``model.load(path, format)``). Each document is
untrusted: it is size-bounded by the loader, checked against its own JSON Schema
(``perflab/schemas/{pyperf,hyperfine,pytest-benchmark}.schema.json``: types, finite
non-negative times, at most 10 000 benchmarks and 1 000 000 values) before anything is built,
and every problem is one ``error:`` line with exit code 2.

What each format carries, and what it can't (also in ``Results.settings["imported"]
["notes"]``, printed above the tables by :mod:`perflab.report.imported`, and in
docs/interop.md). Writing peers' formats is :mod:`perflab.report.peer_formats`.

- pyperf: every run is a fresh process, its values are samples (seconds per loop
  iteration, ``loops × inner_loops`` calls each): the statistics are perflab's own,
  process first. No CPU time, GC, cold call, loop overhead or allocations per sample.
- hyperfine ``--export-json``: each time is one run of the command. User and system CPU
  are kept only as means (every run carries the mean); no max RSS, no interleaving
  blocks (ratios pair nothing).
- pytest-benchmark: every round ran in one process, so the CI is the within-process
  bootstrap, which leaves out between-process variation (flagged). Files without raw
  data (autosave without ``--benchmark-save-data``) hold summary statistics only:
  ``show`` prints them with no CI; ``compare`` and ``fit`` refuse them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from perflab.errors import ResultsFileError

#: The formats ``--from`` accepts.
FORMATS = ("pyperf", "hyperfine", "pytest-benchmark")


def detect(document: Any) -> str | None:
    """The peer format a parsed JSON document looks like, or None.

    Shapes (each tool's documented output): pyperf ``{"version", "benchmarks": [{"runs":
    …}]}``; hyperfine ``{"results": [{"command", "times"|"mean", …}]}``; pytest-benchmark
    ``{"machine_info", "benchmarks": [{"stats": …}]}``.
    """
    if not isinstance(document, dict):
        return None
    results = document.get("results")
    if (
        isinstance(results, list)
        and results
        and isinstance(results[0], dict)
        and "command" in results[0]
    ):
        return "hyperfine"
    benches = document.get("benchmarks")
    if isinstance(benches, list) and benches and isinstance(benches[0], dict):
        if "stats" in benches[0] and ("machine_info" in document or "fullname" in benches[0]):
            return "pytest-benchmark"
        if "runs" in benches[0] and "version" in document:
            return "pyperf"
    return None


def _readers() -> dict[str, Callable[[dict[str, Any], str, str], Any]]:
    from perflab.interop import hyperfine, pyperf, pytest_benchmark

    return {
        "pyperf": pyperf.read,
        "hyperfine": hyperfine.read,
        "pytest-benchmark": pytest_benchmark.read,
    }


def is_foreign(document: Any, format: str | None = None) -> bool:
    """True when ``document`` should be read by :func:`read`: a ``format`` is given
    (``--from``), or it is not a perflab document and looks like a peer's."""
    if format is not None:
        return True
    if (
        isinstance(document, dict)
        and document.get("tool") == "perflab"
        and "schema_version" in document
    ):
        return False  # perflab's results (its hyperfine export is marked "tool" too)
    return detect(document) is not None


def read(document: Any, where: str, created: str, format: str | None = None) -> Any:
    """Build :class:`perflab.model.Results` from a peer's parsed JSON document.

    Args:
        document: the parsed (strict, finite) JSON.
        where: the file's name, for messages.
        created: ISO-8601 time to use when the document has none (the file's mtime).
        format: the format to read it as (one of :data:`FORMATS`, from ``--from``), or
            None to detect it (:func:`detect`).

    Returns:
        Results of kind "run" (pyperf, pytest-benchmark) or "cmd" (hyperfine), with
        ``settings["imported"] = {"format", "file", "notes"}``.

    Raises:
        ResultsFileError: the document is not valid for its format (the JSON path named),
            holds nothing perflab can use, or (pytest-benchmark) has no raw data.
    """
    from perflab import schema

    source = format or detect(document)
    if source is None:
        raise ResultsFileError(
            f"{where}: not a perflab, pyperf, hyperfine or "
            "pytest-benchmark results file; pass one of those, or say "
            "which with --from"
        )
    problem = schema.validate(document, source)
    if problem:
        raise ResultsFileError(
            f"{where}: not a valid {source} file: {problem}; pass the file "
            f"{source} wrote" + ("" if format else ", or force another format with --from")
        )
    return _readers()[source](document, where, created)


def note_lines(results: Any) -> list[str]:
    """One line per note on where imported results came from and what they lack ([] for
    perflab's own results), e.g. "pyperf file a.json: each pyperf run is a fresh process…"."""
    settings = getattr(results, "settings", None)
    info = settings.get("imported") if isinstance(settings, dict) else None
    if not isinstance(info, dict):
        return []
    return [
        f"{info.get('format')} file {info.get('file')}: {note}" for note in info.get("notes", [])
    ]
