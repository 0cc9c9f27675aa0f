"""Results files: writing (:func:`save`, atomic) and reading (:func:`load`, untrusted).

Files are plain JSON (never pickle: a results file must be safe to open from a
stranger). :func:`load` checks them against the published JSON Schema
(``perflab/schemas/results.schema.json``, described in docs/results-format.md);
summaries stored in a file are ignored on load and always recomputed.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from perflab.errors import ResultsFileError, UsageError
from perflab.files import Destination
from perflab.model.http_step import STEP_HISTOGRAMS, Histogram, ServerTiming
from perflab.model.json_form import json_types
from perflab.model.results import Results
from perflab.model.trace_spans import SpanHistogram
from perflab.model.versions import migrate

#: The benchmark kind each results kind holds.
BENCHMARK_KIND = {"run": "python", "cmd": "command", "http": "http", "trace": "trace"}
_HISTOGRAMS = STEP_HISTOGRAMS


def save(
    results: Results,
    path: str | Path | Destination,
    summaries: dict[str, dict[str, Any]] | None = None,
    indent: int | None = 1,
    rescue_on_failure: bool = True,
) -> Path | None:
    """Write ``results`` as JSON: atomically (temp file, fsync, rename) or to stdout.

    Args:
        results: what to write.
        path: destination (checked with :meth:`perflab.files.Destination.check` when a
            plain path is given); ``-`` writes to stdout; parent folders are created.
        summaries: derived summaries by benchmark id, written for convenience.
        indent: JSON indentation; None writes compact JSON with the C encoder
            (about 10× faster for files of many thousand raw records).
        rescue_on_failure: see :func:`perflab.files.save`.

    Returns:
        The path written, None for stdout.

    Raises:
        UsageError: the destination is unusable (a folder, a device, a foreign file).
        SaveError: the write failed; the data is in the rescue file the error names.
    """
    from perflab import files

    dest = path if isinstance(path, Destination) else Destination.check(path, "--json")
    files.save(
        dest,
        lambda: (
            json.dumps(readable(results.to_dict(summaries)), indent=indent, allow_nan=False) + "\n"
        ).encode(),
        f"{results.kind} results",
        rescue_on_failure,
    )
    return dest.path


def readable(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` as it is written: when the reader would refuse it (a 120 KB header
    value, a Server-Timing figure of 1e19), the oversize values are bounded to the
    schema (:func:`perflab.schema.fit`) with a ``note:`` line on stderr naming them, so
    that every file perflab writes, perflab reads back."""
    from perflab import schema

    if not (schema.validate(document) or _check_kinds(document)):
        return document
    bounded, cuts = schema.fit(document)
    if cuts:
        shown = ", ".join(cuts[:3]) + (f" and {len(cuts) - 3} more" if len(cuts) > 3 else "")
        sys.stderr.write(
            f"note: {len(cuts)} value(s) too large for the results format were cut to fit, "
            f"so that the file reads back: {shown}\n"
        )
    return bounded


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def json_document(value: Any) -> bytes:
    """The bytes of a JSON document as perflab writes its files (doctor, compare, fit
    and history documents): :func:`perflab.model.results.json_types` of ``value``,
    indented by one space, UTF-8, a final newline.

    Raises:
        ValueError: a value JSON can't hold (``allow_nan=False`` after NaN became null).
        TypeError: an object of a type that ``json_types`` does not convert.
    """
    return (json.dumps(json_types(value), indent=1, allow_nan=False) + "\n").encode()


def _gunzip(data: bytes, where: str) -> bytes:
    """The contents of gzip-compressed bytes (pyperf writes ``-o FILE.json.gz`` so), at
    most ``MAX_RESULTS_BYTES`` of them: a larger (or bomb) payload is refused unread.

    Raises:
        ResultsFileError: corrupt gzip, or more than the limit once decompressed.
    """
    import zlib

    from perflab.files import MAX_RESULTS_BYTES

    inflater = zlib.decompressobj(wbits=31)
    try:
        out = inflater.decompress(data, MAX_RESULTS_BYTES + 1)
    except zlib.error as exc:
        raise ResultsFileError(
            f"{where}: a damaged gzip file ({exc}); pass the file as written"
        ) from None
    if len(out) > MAX_RESULTS_BYTES or inflater.unconsumed_tail:
        raise ResultsFileError(
            f"{where}: more than the {MAX_RESULTS_BYTES >> 20} MiB perflab "
            "reads once decompressed; pass a smaller file"
        )
    return out


def parse_json(data: bytes, where: str) -> Any:
    """Strict JSON (no NaN or Infinity, finite floats) from untrusted bytes, plain or
    gzip-compressed (:func:`_gunzip`, bounded).

    Raises:
        ResultsFileError: not UTF-8, not valid JSON, nested too deeply, or a number
            out of range; a damaged or oversized gzip; the message names ``where`` and
            what to do.
    """
    if data[:2] == b"\x1f\x8b":
        data = _gunzip(data, where)

    def finite(text: str) -> float:
        value = float(text)
        if not math.isfinite(value):
            raise ValueError(f"number {text[:20]} is out of range")
        return value

    try:
        return json.loads(
            data.decode("utf-8-sig"), parse_constant=_reject_constant, parse_float=finite
        )
    except UnicodeDecodeError:
        raise ResultsFileError(
            f"{where}: is not text (a binary file?); pass a results file written by perflab --json"
        ) from None
    except json.JSONDecodeError as exc:
        raise ResultsFileError(
            f"{where}: not valid JSON (truncated?) at line {exc.lineno}: "
            f"{exc.msg}; re-run the benchmark to write it again"
        ) from None
    except RecursionError:
        raise ResultsFileError(f"{where}: nested too deeply to be a perflab file") from None
    except ValueError as exc:
        raise ResultsFileError(f"{where}: not valid JSON ({exc})") from None


def _check_kinds(data: dict[str, Any]) -> str | None:
    """Cross-field checks the schema can't state; one line or None."""
    expected = BENCHMARK_KIND[data["kind"]]
    for i, bench in enumerate(data["benchmarks"]):
        kind = bench.get("kind", "python")
        if kind != expected:
            return (
                f"benchmarks[{i}].kind: is {kind!r} in a {data['kind']!r} file, which holds "
                f"{expected!r} benchmarks only"
            )
        if kind == "python" and "processes" not in bench:  # perflab always writes the list
            return f"benchmarks[{i}]: has no 'processes' (its measured data)"
    reference = data.get("settings", {}).get("reference")
    if reference is not None and reference >= len(data["benchmarks"]):
        return f"settings.reference: {reference} is not the index of a benchmark"
    if data["kind"] == "http" and len(data["benchmarks"]) > 1:
        return "benchmarks: an 'http' file holds one benchmark"
    return None


_SUMMARY_KEYS = ("min", "mean", "p50", "p90", "p99", "p999", "max")


def _trusted(owner: Any, name: str, where: str, unit: str) -> None:
    """Replace ``owner.name`` (a :class:`Histogram`, or a :class:`SpanHistogram` when
    ``unit`` is "ns") by one whose count and percentiles are recomputed from its encoding.

    Raises:
        ResultsFileError: an encoding that isn't a bounded HdrHistogram (``where`` named).
    """
    from perflab import _core

    cls = SpanHistogram if unit == "ns" else Histogram
    hist = getattr(owner, name)
    if not hist.encoded:
        setattr(owner, name, cls())
        return
    try:
        decoded = _core.hdr_decode(hist.encoded)  # unit-agnostic; its keys say _us
    except ValueError as exc:
        raise ResultsFileError(f"{where}.{name}.encoded: {exc}") from None
    setattr(
        owner,
        name,
        cls(
            hist.encoded,
            decoded["count"],
            **{
                f"{k}_{unit}": decoded[f"{k}_us"] if decoded["count"] else math.nan
                for k in _SUMMARY_KEYS
            },
        ),
    )


def _trust_histograms(results: Results) -> None:
    """Recompute every histogram's stored count and percentiles from its encoding.

    Raises:
        ResultsFileError: an encoding that isn't a bounded HdrHistogram (JSON path named).
    """
    for i, bench in enumerate(results.benchmarks):
        steps = [(f"steps[{j}]", step) for j, step in enumerate(bench.steps)]
        steps += [
            (f"steps[{j}].agents[{k}].step", a.step)
            for j, step in enumerate(bench.steps)
            for k, a in enumerate(step.agents)
            if a.step is not None
        ]
        for where, step in steps:
            for name in _HISTOGRAMS:
                _trusted(step, name, f"benchmarks[{i}].{where}", "us")
            if step.server_timing is not None:
                _trust_server_timing(step.server_timing, f"benchmarks[{i}].{where}.server_timing")
        if bench.span is not None:
            for name in ("duration", "self_time"):
                _trusted(bench.span, name, f"benchmarks[{i}].span", "ns")


def _trust_server_timing(timing: ServerTiming, where: str) -> None:
    """:func:`_trusted` for every histogram of a step's Server-Timing figures."""
    for name in ("app_total", "outside_app"):
        _trusted(timing, name, where, "us")
    for metric, hist in timing.metrics.items():
        box = SimpleNamespace(**{repr(metric): hist})  # repr: escapes the file's name
        _trusted(box, repr(metric), f"{where}.metrics", "us")
        timing.metrics[metric] = getattr(box, repr(metric))


def load(path: str | Path, format: str | None = None) -> Results:
    """Read a results file written by any perflab version up to this one.

    The file is size-limited before it is read, parsed as strict JSON, checked
    against the published schema (``perflab/schemas/results.schema.json``) and
    for cross-field consistency; stored summaries are ignored and histogram
    percentiles recomputed from the encoded histograms. pyperf, hyperfine and
    pytest-benchmark JSON files are read too (:mod:`perflab.interop`): detected from the
    document's shape, or read as ``format`` when given (one of
    :data:`perflab.interop.FORMATS`, a command's ``--from``).

    Raises:
        ResultsFileError: missing, unreadable, too large, not JSON, foreign, too new,
            or invalid; the message names the file, the JSON path and what to do.
    """
    from perflab import files

    path = Path(path)
    try:
        data = files.read_bytes(path, str(path), files.MAX_RESULTS_BYTES)
    except UsageError as exc:
        raise ResultsFileError(str(exc)) from None
    return load_bytes(data, path, format)


def _modified(path: str | Path) -> str:
    """The file's modification time, ISO-8601 UTC ("" when it can't be read)."""
    import datetime as dt

    try:
        stamp = Path(path).stat().st_mtime
    except OSError:
        return ""
    return dt.datetime.fromtimestamp(stamp, dt.UTC).isoformat(timespec="seconds")


def load_bytes(data: bytes, path: str | Path, format: str | None = None) -> Results:
    """Like :func:`load`, from a results file's bytes (e.g. kept in the history database);
    ``path`` names it in messages, ``format`` as for :func:`load`. Raises ResultsFileError
    as :func:`load` does.

    A peer's file (pyperf, hyperfine, pytest-benchmark JSON; see :mod:`perflab.interop`)
    is detected and converted here, so every reader of results accepts those too."""
    from perflab import files, interop, schema

    if len(data) > files.MAX_RESULTS_BYTES:
        raise ResultsFileError(
            f"{path}: larger than the {files.MAX_RESULTS_BYTES >> 20} MiB perflab reads"
        )
    document = parse_json(data, str(path))
    if interop.is_foreign(document, format):  # pyperf, hyperfine, pytest-benchmark, --from
        return interop.read(document, str(path), _modified(path), format)
    try:
        document = migrate(document)
    except ResultsFileError as exc:
        raise ResultsFileError(f"{path}: {exc}") from None
    problem = schema.validate(document) or _check_kinds(document)
    if problem:
        raise ResultsFileError(
            f"{path}: {problem}; the file was damaged or edited: use "
            "the file perflab wrote, or re-run the benchmark"
        )
    results = Results.from_dict(document)
    try:
        _trust_histograms(results)
    except ResultsFileError as exc:
        raise ResultsFileError(f"{path}: {exc}; the file was damaged or edited") from None
    return results
