"""``perflab compare A.json B.json``: faster, slower, same or inconclusive, with a CI gate."""

from __future__ import annotations

import argparse
import sys

from perflab import interop
from perflab.commands.options import add_from_argument
from perflab.errors import UsageError

_FORMATS = ("table", "markdown", "csv")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``perflab compare``."""
    parser.add_argument(
        "files",
        nargs="*",
        metavar="FILE",
        help="A.json B.json: the baseline "
        "and the results to judge against it; with --to: at most B.json",
    )
    parser.add_argument(
        "--to",
        metavar="last|RUN|REF",
        help="pick the baseline A from "
        "history: the newest earlier run, a run id (perflab history lists "
        "them) or a git ref; B is the file given, else the newest recorded run",
    )
    parser.add_argument(
        "--threshold",
        default="2%",
        help="noise threshold t: changes "
        "within ±t count as the same, e.g. 2%% or 0.05 (default 2%%); auto: "
        "from the run-to-run spread recorded in history on this machine",
    )
    parser.add_argument(
        "--format",
        choices=_FORMATS,
        default="table",
        help="table on the terminal, markdown for a pull-request comment, csv",
    )
    parser.add_argument(
        "--json",
        nargs="?",
        const="-",
        metavar="FILE",
        help="write the comparison as JSON to FILE; alone (or '-'): print "
        "JSON on stdout instead of the table",
    )
    from perflab.report import outputs

    outputs.add_arguments(parser, "one line per compared metric")
    parser.add_argument(
        "--fail-on",
        default="",
        metavar="VERDICTS",
        help="exit 1 when a benchmark gets one of these verdicts, comma "
        "separated: slower, faster, inconclusive, failed, missing; memory: a "
        "memory figure (allocated/op, allocs/op, RSS peak, growth) reads more "
        "(e.g. slower or slower,memory)",
    )
    parser.add_argument(
        "--percentiles",
        default="50,90,99,99.9",
        help="latency percentiles compared for HTTP steps (50,90,99,99.9)",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="bootstrap seed (0); the same seed prints the same CIs"
    )
    parser.add_argument(
        "--chart",
        metavar="PNG",
        help="draw B/A with its CI per benchmark (a forest plot) into this PNG",
    )
    from perflab.commands.options import add_history_arguments

    add_history_arguments(parser, recording=False)
    add_from_argument(parser)


def parse_percentiles(text: str) -> list[float]:
    """ "50,99,99.9" → [50.0, 99.0, 99.9]. Raises UsageError outside (0, 100]."""
    try:
        values = [float(p) for p in text.split(",") if p.strip()]
    except ValueError:
        raise UsageError(f"--percentiles {text!r}: write numbers like 50,99,99.9") from None
    if not values or any(not 0 < p <= 100 for p in values):
        raise UsageError(f"--percentiles {text!r}: each must be above 0 and at most 100")
    return values


def main(args: argparse.Namespace) -> int:
    """Load both files, compare, print; exit 1 when the --fail-on gate trips, 2 on bad input."""
    from perflab.analyze.compare.suite import compare_results, parse_fail_on
    from perflab.analyze.counts import user_count_threshold
    from perflab.analyze.decisions import parse_threshold
    from perflab.analyze.profile import profile_changes
    from perflab.commands.options import history_database
    from perflab.files import Deferred, Destination
    from perflab.history.baseline import compare_sides
    from perflab.report import outputs
    from perflab.report.compare_table import comparison_tables, csv_records, gate, print_comparison

    if args.threshold.strip().lower() != "auto":
        parse_threshold(args.threshold)
    fail_on = parse_fail_on(args.fail_on)
    percentiles = parse_percentiles(args.percentiles)
    json_to = Destination.check(args.json, "--json") if args.json is not None else None
    files_out = outputs.check(args, others=[json_to])
    chart = Destination.check(args.chart, "--chart", "png") if args.chart is not None else None
    sides = compare_sides(history_database(args), args.to, args.files, args.threshold, args.source)
    suite = compare_results(
        sides.a,
        sides.b,
        sides.threshold,
        seed=args.seed,
        percentiles=percentiles,
        names=(sides.name_a, sides.name_b),
        count_threshold=user_count_threshold(args.threshold, sys.argv[1:]),
    )
    suite.profiles = profile_changes(sides.a.benchmarks, sides.b.benchmarks)
    if sides.note:
        suite.warnings.insert(0, sides.note)
    suite.warnings[:0] = interop.note_lines(sides.a) + interop.note_lines(sides.b)
    later = Deferred()
    outputs.write(
        later,
        files_out,
        "compare",
        lambda: comparison_tables(suite, sides.name_a, sides.name_b),
        lambda: csv_records(suite),
    )
    tripped = print_comparison(suite, sides.name_a, sides.name_b, args.format, json_to, fail_on)
    if suite.profiles and args.format != "csv" and not (json_to and json_to.stdout):
        from perflab.report.profile_table import print_changes

        print_changes(suite.profiles, args.format)
    later.raise_()
    if chart is not None:
        from perflab.report.run_chart import compare_chart, write_chart

        write_chart(chart, lambda out: compare_chart(suite, sides.name_a, sides.name_b, out))
    return gate(tripped, fail_on, held=suite.held_reason(fail_on))
