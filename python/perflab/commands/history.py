"""``perflab history [BENCHMARK]``: recorded runs, a benchmark's trend, import and export.

Without BENCHMARK: the recorded runs, newest first, filtered by kind, tag,
branch, fingerprint and date. With BENCHMARK (a shell pattern; a plain word
matches anywhere): each matching benchmark's trend in commit order with its
change points, and with ``--chart PNG`` the trend chart. ``--import FILES…``
records existing results files; ``--export FOLDER`` writes the selected runs'
results files back out.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from perflab.errors import UsageError
from perflab.report.notice import tell

_KINDS = ("run", "cmd", "http", "doctor")
_METRICS = ("time", "p50", "p99", "rate")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``perflab history``."""
    from perflab.commands.options import add_history_arguments

    parser.add_argument(
        "benchmark",
        nargs="?",
        metavar="BENCHMARK",
        help="show the trend of "
        "the benchmarks whose id matches (shell pattern, e.g. 'northwind/*'; "
        "a plain word matches anywhere)",
    )
    add_history_arguments(parser, recording=False)
    parser.add_argument("--kind", choices=_KINDS, help="only runs of this command")
    parser.add_argument("--tag", help="only runs with this tag")
    parser.add_argument(
        "--exclude-dirty",
        action="store_true",
        help="with BENCHMARK: leave runs made with uncommitted changes out of the "
        "change-point search (they stay in the table, marked)",
    )
    parser.add_argument(
        "--exclude-tag",
        action="append",
        default=[],
        metavar="TAG",
        help="with BENCHMARK: leave runs with this tag (e.g. busy) out of the change-point "
        "search; repeat for several tags",
    )
    parser.add_argument("--branch", help="only runs on this git branch")
    parser.add_argument("--commit", help="only runs at this commit (or an id prefix)")
    parser.add_argument(
        "--fingerprint",
        help="only runs with this fingerprint hash (or a "
        "prefix); the trend then ignores runs from other machines",
    )
    parser.add_argument(
        "--since",
        metavar="DATE",
        help="only runs started at or after DATE (ISO 8601, e.g. 2026-11-01)",
    )
    parser.add_argument("--until", metavar="DATE", help="only runs started up to DATE")
    parser.add_argument(
        "--metric",
        choices=_METRICS,
        help="with BENCHMARK: the figure followed (default: time; p50 for HTTP steps)",
    )
    parser.add_argument(
        "--limit",
        type=int,
        default=30,
        help="rows shown per table and runs "
        "per chart (30; 0: all); change points always use the whole history",
    )
    parser.add_argument(
        "--chart",
        nargs="?",
        const="trend.png",
        metavar="PNG",
        help="with BENCHMARK: draw the trend chart into PNG (trend.png)",
    )
    parser.add_argument("--format", choices=["table", "markdown", "csv"], default="table")
    parser.add_argument(
        "--json",
        nargs="?",
        const="-",
        metavar="FILE",
        help="write the run list (or the trends) as JSON to FILE; alone (or "
        "'-'): print JSON on stdout instead of the table; perflab show FILE "
        "prints it again",
    )
    from perflab.report import outputs

    outputs.add_arguments(parser, "one line per run, or per point of a trend")
    parser.add_argument(
        "--import",
        dest="import_files",
        nargs="+",
        metavar="FILE",
        help="record these results files (run, cmd, http) in history",
    )
    parser.add_argument(
        "--export",
        metavar="FOLDER",
        help="write the selected runs' results files into FOLDER as <kind>-<run>.json",
    )
    parser.add_argument(
        "--import-tag",
        action="append",
        default=[],
        metavar="WORD",
        help="with --import: tag the imported runs",
    )


def _database(args: argparse.Namespace) -> Path:
    from perflab.commands.options import history_database

    path = history_database(args)
    if path is None:
        raise UsageError("history is off (PERFLAB_HISTORY=off); pass --history PATH")
    return path


def main(args: argparse.Namespace) -> int:
    """List, trend, chart, import or export. Exit 2 on bad input or a missing database."""
    from perflab.history.store import Store

    if args.limit < 0:
        raise UsageError("--limit must be 0 (all) or more")
    if args.import_files:
        return _import(args)
    if (args.exclude_dirty or args.exclude_tag) and not args.benchmark:
        raise UsageError(
            "--exclude-dirty and --exclude-tag leave runs out of a trend's change-point "
            "search: give BENCHMARK, e.g. perflab history 'northwind/*' --exclude-dirty"
        )
    chart = None
    if args.chart:
        if not args.benchmark:
            raise UsageError(
                "--chart draws a benchmark's trend: give BENCHMARK, e.g. "
                "perflab history 'northwind/*' --chart trend.png"
            )
        from perflab.files import Destination

        chart = Destination.check(args.chart, "--chart", "png")
    outputs = _outputs(args, chart)
    with Store(_database(args), create=False) as store:
        if args.export:
            return _export(args, store)
        if args.benchmark:
            return _trends(args, store, chart, outputs)
        runs = store.runs(**_filters(args), limit=args.limit or None)
        total = store.count()
    from perflab import __version__
    from perflab.model.history import runs_document
    from perflab.report.history_table import run_records, runs_table

    _emit(
        args,
        outputs,
        lambda: runs_document(runs, total, store.path, __version__),
        lambda: [runs_table(runs, total, store.path)],
        lambda: run_records(runs),
    )
    return 0


def _outputs(args: argparse.Namespace, chart: Any) -> dict[str, Any]:
    """The checked ``--json``, ``--markdown`` and ``--csv`` destinations, by kind."""
    from perflab.files import Destination
    from perflab.report import outputs

    json_to = {"json": Destination.check(args.json, "--json")} if args.json is not None else {}
    return {**json_to, **outputs.check(args, others=[*json_to.values(), chart])}


def _emit(
    args: argparse.Namespace, destinations: dict[str, Any], document: Any, tables: Any, records: Any
) -> None:
    """Write the output files (JSON: ``document()``), then print the tables in
    --format, unless the JSON went to stdout. A failed write is raised after printing."""
    from perflab.files import Deferred, save
    from perflab.model import json_document
    from perflab.report import console, outputs

    files = dict(destinations)
    json_to = files.pop("json", None)
    later = Deferred()
    if json_to is not None:
        later.run(save, json_to, lambda: json_document(document()), "history document")
    outputs.write(later, files, "history", tables, records)
    if json_to is None or not json_to.stdout:
        console.emit(args.format, tables, records)
    later.raise_()


def _filters(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "kind": args.kind,
        "tag": args.tag,
        "branch": args.branch,
        "fingerprint": args.fingerprint,
        "since": parse_date(args.since, "--since"),
        "until": parse_date(args.until, "--until"),
        "commit": args.commit,
    }


def parse_date(text: str | None, option: str) -> str | None:
    """``--since``/``--until`` as the database compares start times: a date as given
    (``2026-11-01``: ``--until`` then takes the whole day), a time as UTC ISO 8601
    (``2026-11-01T14:30+02:00`` → ``2026-11-01T12:30:00+00:00``; without an offset,
    UTC, as the runs table shows them). None stays None.

    Raises:
        UsageError: not an ISO 8601 date or time ("yesterday", "2026-13-45" matched
            nothing, silently).
    """
    import datetime as dt

    if text is None:
        return None
    try:
        when = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise UsageError(
            f"{option} {text!r} is not a date; write it in ISO 8601, e.g. "
            "2026-11-01 or 2026-11-01T14:30 (UTC)"
        ) from None
    if len(text.strip()) == 10:
        return text.strip()
    utc = when.replace(tzinfo=dt.UTC) if when.tzinfo is None else when.astimezone(dt.UTC)
    return utc.isoformat(timespec="seconds")


def _trends(args: argparse.Namespace, store: Any, chart: Any, outputs: dict[str, Any]) -> int:
    from perflab import __version__
    from perflab.history import trend
    from perflab.model.history import trends_document
    from perflab.report.history_table import trend_records, trend_table

    pairs = trend.matching(store, args.benchmark, args.metric)
    if not pairs:
        known = [b for b, _, _ in store.benchmarks()][:3]
        raise UsageError(
            f"no recorded benchmark matches {args.benchmark!r}"
            + (
                f"; ids are like {', '.join(repr(k) for k in known)}"
                if known
                else "; history holds no benchmark yet"
            )
        )
    trends = [
        trend.build(
            store,
            bench,
            metric,
            args.fingerprint,
            exclude_dirty=args.exclude_dirty,
            exclude_tags=tuple(args.exclude_tag),
        )
        for bench, metric in pairs
    ]
    trends = [t for t in trends if t.points]
    _emit(
        args,
        outputs,
        lambda: trends_document(trends, args.limit or None, store.path, __version__),
        lambda: [trend_table(t, args.limit or None) for t in trends],
        lambda: trend_records(trends),
    )
    if chart is not None:
        from perflab.files import save_file
        from perflab.report.history_chart import MAX_PANELS, trend_chart

        shown = [trend.window(t, args.limit) for t in trends]
        save_file(chart, lambda out: trend_chart(shown, out), "chart")
        more = (
            f" (the first {MAX_PANELS} of {len(trends)} benchmarks)"
            if len(trends) > MAX_PANELS
            else ""
        )
        tell(f"chart saved to {chart}{more}")
    return 0


def _import(args: argparse.Namespace) -> int:
    """Record results files; each bad file is one error line, the others still go in."""
    from perflab import model
    from perflab.errors import PerflabError
    from perflab.history import record
    from perflab.history.rows import recompute, summary_rows
    from perflab.history.store import Store
    from perflab.report.escape import terminal

    tags = record.check_tags(args.import_tag)
    failed = 0
    with Store(_database(args)) as store:
        for name in args.import_files:
            try:
                results = model.load(name)
                summaries = recompute(results)
                made = record.make_record(
                    results.kind,
                    results.to_dict(summaries),
                    summary_rows(results, summaries),
                    tags,
                    name,
                    git=False,
                )
                run_id = store.add(made)
            except PerflabError as exc:
                failed += 1
                tell(f"error: {terminal(exc, one_line=True)}")
                continue
            sys.stderr.write(terminal(f"recorded {name} as run #{run_id}", one_line=True) + "\n")
    return 2 if failed else 0


def _export(args: argparse.Namespace, store: Any) -> int:
    """Write each selected run's results file into the folder (perflab's own files only)."""
    from perflab.files import Destination, save

    folder = Path(args.export)
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"--export {folder}: is a file; give a folder")
    runs = store.runs(**_filters(args), limit=args.limit or None)
    for run in runs:
        target = Destination.check(folder / f"{run.kind}-{run.id}.json", "--export")
        save(target, store.document(run.id) + b"\n", f"{run.kind} results")
    tell(f"exported {len(runs)} runs to {folder}")
    return 0
