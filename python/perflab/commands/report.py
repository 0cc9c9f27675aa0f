"""``perflab report [FILES…] [--history [PATTERN]] -o report.html``: one self-contained page.

The page holds each results file's tables and charts by kind (run, cmd, http; a
doctor JSON file shows its checks, a ``compare --json`` file its verdicts and ratio
forest plot, a ``fit --json`` file its tables and fitted curves), the environment
fingerprint and exact command line of each, the doctor's verdicts from the newest doctor run recorded
on the same machine, and with ``--history`` the trends and change points of the
recorded benchmarks. Without FILES, the newest recorded run is shown. No script,
no network: see :mod:`perflab.report.html.page`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from perflab.errors import UsageError

#: Most trends drawn by ``--history`` (a chart each).
MAX_TRENDS = 24


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``perflab report``."""
    parser.add_argument(
        "files",
        nargs="*",
        metavar="FILE",
        help="results files (run, cmd, "
        "http), or documents written by doctor, compare or fit with --json; "
        "none: the newest run in history",
    )
    parser.add_argument(
        "-o",
        "--output",
        default="report.html",
        metavar="FILE",
        help="the HTML file to write (report.html)",
    )
    parser.add_argument(
        "--history",
        nargs="?",
        const="*",
        metavar="PATTERN",
        help="add the trends and change points of the recorded benchmarks "
        "matching PATTERN (all when omitted)",
    )
    parser.add_argument(
        "--database",
        metavar="PATH",
        help="the history database (default: $PERFLAB_HISTORY or .perflab/history.sqlite)",
    )


def _database(args: argparse.Namespace) -> Path | None:
    from perflab.history import record

    return record.database(args.database)


#: Kinds of perflab JSON documents (not results files) the page can show.
DOCUMENT_KINDS = ("doctor", "compare", "fit")


def _load(name: str) -> tuple[Any, dict[str, Any] | None]:
    """(Results, None) for a results file, (None, document) for a doctor, compare or fit
    document (checked against its schema).

    Raises:
        ResultsFileError / UsageError: neither, or a document that does not match its schema.
    """
    from perflab import files, model, schema
    from perflab.errors import ResultsFileError

    try:
        return model.load(name), None
    except ResultsFileError:
        try:
            document = model.parse_json(files.read_bytes(name, name, files.MAX_RESULTS_BYTES), name)
        except (ResultsFileError, UsageError):
            document = None
        if not (
            isinstance(document, dict)
            and document.get("tool") == "perflab"
            and document.get("kind") in DOCUMENT_KINDS
        ):
            raise
        problem = schema.validate(document, str(document["kind"]))
        if problem:
            raise ResultsFileError(
                f"{name}: {problem}; the file was damaged or edited: use "
                f"the file perflab {document['kind']} wrote"
            ) from None
        return None, document


def main(args: argparse.Namespace) -> int:
    """Build the page and write it. Exit 2 on bad input or nothing to report."""
    from perflab import __version__
    from perflab.analyze.results_figures import results_figures
    from perflab.files import Destination, save
    from perflab.report.html import page, sections, summary

    destination = Destination.check(args.output, "-o", "html")
    loaded = [(name, *_load(name)) for name in args.files]
    db = _database(args)
    store = _open(db) if (args.history or not args.files) else None
    body: list[page.Section] = []
    findings: list[summary.Finding] = []
    try:
        if not loaded:
            loaded = _newest(store)
        for name, results, document in loaded:
            if results is not None:
                figures = results_figures(results)
                body += sections.results_sections(results, figures, name)
                findings += summary.results_findings(results, figures, name)
            else:
                body += sections.document_sections(document, name)
                findings += summary.document_findings(document, name)
        given = any(d is not None and d.get("kind") == "doctor" for _, _, d in loaded)
        doctor = None if given else _doctor(db, [r for _, r, _ in loaded if r is not None])
        if doctor is not None:  # the machine's checks once: a doctor FILE given wins
            body.append(doctor[0])
            findings += summary.doctor_findings(doctor[1], "history")
        if args.history:
            body += _trends(store, args.history)
    finally:
        if store is not None:
            store.close()
    from perflab.report.html.page import page as render

    text = render(
        "perflab report",
        [
            f"written by perflab {__version__} from "
            + (", ".join(page.short_paths(n) for n, _, _ in loaded) or "history")
            + (f"; history {db}" if args.history else "")
        ],
        [summary.summary_section(findings), *body],
    )
    save(destination, text.encode("utf-8"), "report")
    sys.stderr.write(f"report saved to {destination} ({len(text.encode()) / 1024:,.0f} KiB)\n")
    return 0


def _open(db: Path | None) -> Any:
    from perflab.history.store import Store

    if db is None:
        raise UsageError(
            "history is off (PERFLAB_HISTORY=off): give results FILES, or "
            "--database PATH for --history"
        )
    return Store(db, create=False)


def _newest(store: Any) -> list[tuple[str, Any, None]]:
    from perflab.history.baseline import MEASURED_KINDS, load_run

    run = next((r for r in store.runs() if r.kind in MEASURED_KINDS), None)
    if run is None:
        raise UsageError(
            f"history {store.path} holds no run yet, and no FILES were given; "
            "run perflab run/cmd/http first"
        )
    base = load_run(store, run)
    return [(base.label, base.results, None)]


def _doctor(db: Path | None, results: list[Any]) -> tuple[Any, dict[str, Any]] | None:
    """The newest doctor run recorded on the first results' fingerprint: (its section,
    its document), or None."""
    from perflab.history.record import fingerprint_hash
    from perflab.history.store import Store
    from perflab.report.html.sections import doctor_section

    if db is None or not db.exists() or not results:
        return None
    try:
        with Store(db, create=False) as store:
            fingerprint = fingerprint_hash(results[0].environment)
            run = next(iter(store.runs(kind="doctor", fingerprint=fingerprint, limit=1)), None)
            if run is None:
                return None
            document = json.loads(store.document(run.id))
    except (UsageError, ValueError, OSError):
        return None
    if not isinstance(document, dict):
        return None
    return doctor_section(document, f"history #{run.id}"), document


def _trends(store: Any, pattern: str) -> list[Any]:
    from perflab.history import trend
    from perflab.report.html.sections import history_sections

    pairs = trend.matching(store, pattern)
    built = [t for t in (trend.build(store, b, m) for b, m in pairs[:MAX_TRENDS]) if t.points]
    return history_sections(built, max(0, len(pairs) - MAX_TRENDS))
