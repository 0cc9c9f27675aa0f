"""``perflab compare A.json B.json``: faster, slower, same or inconclusive, with a CI gate."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from perflab.errors import UsageError

_FORMATS = ("table", "markdown", "csv")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``perflab compare``."""
    parser.add_argument("a", metavar="A.json", help="the baseline results file")
    parser.add_argument("b", metavar="B.json", help="the results to judge against A")
    parser.add_argument("--threshold", default="2%", help="noise threshold t: changes "
                        "within ±t count as the same, e.g. 2%% or 0.05 (default 2%%)")
    parser.add_argument("--format", choices=_FORMATS, default="table",
                        help="table on the terminal, markdown for a pull-request comment, csv")
    parser.add_argument("--json", nargs="?", const="-", metavar="FILE",
                        help="write the comparison as JSON to FILE; alone (or '-'): print "
                        "JSON on stdout instead of the table")
    parser.add_argument("--fail-on", default="", metavar="VERDICTS",
                        help="exit 1 when a benchmark gets one of these verdicts, comma "
                        "separated: slower, faster, inconclusive, failed, missing "
                        "(e.g. slower or slower,inconclusive)")
    parser.add_argument("--percentiles", default="50,90,99,99.9",
                        help="latency percentiles compared for HTTP steps (50,90,99,99.9)")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (0); the same "
                        "seed prints the same CIs")


def parse_threshold(text: str) -> float:
    """"2%" or "0.02" → 0.02. Raises UsageError outside [0, 1)."""
    from perflab.units import parse_fraction

    return parse_fraction(text, "--threshold", "2%", "0.02", allow_zero=True)


def parse_fail_on(text: str) -> list[str]:
    """"slower,inconclusive" → ["slower", "inconclusive"]. Raises UsageError on other words."""
    from perflab.analyze.compare import fail_on_words

    words = [w.strip().lower() for w in text.split(",") if w.strip()]
    bad = [w for w in words if w not in fail_on_words()]
    if bad:
        raise UsageError(f"--fail-on {', '.join(bad)}: not a verdict; use some of "
                         f"{', '.join(fail_on_words())}, comma separated")
    return words


def parse_percentiles(text: str) -> list[float]:
    """"50,99,99.9" → [50.0, 99.0, 99.9]. Raises UsageError outside (0, 100]."""
    try:
        values = [float(p) for p in text.split(",") if p.strip()]
    except ValueError:
        raise UsageError(f"--percentiles {text!r}: write numbers like 50,99,99.9") from None
    if not values or any(not 0 < p <= 100 for p in values):
        raise UsageError(f"--percentiles {text!r}: each must be above 0 and at most 100")
    return values


def emit(suite: Any, name_a: str, name_b: str, fmt: str, json_to: Any,
         fail_on: list[str]) -> list[str]:
    """Print the comparison (and write its JSON to the checked destination ``json_to``,
    a :class:`perflab.files.Destination` or None); return the ids that tripped the gate.

    Raises:
        SaveError: the JSON could not be written (after the table is printed).
    """
    from perflab.files import Deferred, save
    from perflab.model import json_types
    from perflab.report import compare_table, console

    tripped = suite.tripped(fail_on)
    later = Deferred()
    if json_to is not None:
        document = compare_table.comparison_document(suite, name_a, name_b, fail_on, tripped)
        later.run(save, json_to, (json.dumps(json_types(document), indent=1, allow_nan=False)
                                  + "\n").encode(), "comparison")
    if json_to is None or not json_to.stdout:
        console.emit(fmt, lambda: compare_table.comparison_tables(suite, name_a, name_b),
                     lambda: compare_table.csv_records(suite))
    later.raise_()
    return tripped


def gate(tripped: list[str], fail_on: list[str]) -> int:
    """Exit code of the CI gate: 1 (with one stderr line) when something tripped, else 0."""
    if not tripped:
        return 0
    from perflab.report.escape import terminal

    shown = ", ".join(terminal(t, one_line=True) for t in tripped[:5]) + (
        f" and {len(tripped) - 5} more" if len(tripped) > 5 else "")
    sys.stderr.write(f"gate: --fail-on {','.join(fail_on)} tripped by {len(tripped)} "
                     f"benchmark(s): {shown}\n")
    return 1


def main(args: argparse.Namespace) -> int:
    """Load both files, compare, print; exit 1 when the --fail-on gate trips, 2 on bad input."""
    from perflab import model
    from perflab.analyze.compare import compare_results
    from perflab.files import Destination

    threshold = parse_threshold(args.threshold)
    fail_on = parse_fail_on(args.fail_on)
    percentiles = parse_percentiles(args.percentiles)
    json_to = Destination.check(args.json, "--json") if args.json is not None else None
    a, b = model.load(args.a), model.load(args.b)
    suite = compare_results(a, b, threshold, seed=args.seed, percentiles=percentiles,
                            names=(args.a, args.b))
    return gate(emit(suite, args.a, args.b, args.format, json_to, fail_on), fail_on)


def compare_after_run(baseline_path: str, baseline: Any, results: Any, fmt: str,
                      threshold: float = 0.02, fail_on: list[str] | None = None) -> int:
    """``perflab run --compare-to A.json``: compare fresh results with a loaded baseline.

    Prints the comparison in ``fmt`` (table, markdown or csv) against noise
    threshold ``threshold`` and applies the ``fail_on`` gate as ``perflab
    compare --fail-on`` does.

    Returns:
        1 when the gate tripped (one ``gate:`` line on stderr), else 0.

    Raises:
        UsageError: no benchmark in common.
    """
    from perflab.analyze.compare import compare_results

    fail_on = fail_on or []
    suite = compare_results(baseline, results, threshold, names=(baseline_path, "this run"))
    return gate(emit(suite, baseline_path, "this run", fmt, None, fail_on), fail_on)
