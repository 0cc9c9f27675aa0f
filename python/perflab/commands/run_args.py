"""The options of ``perflab run``: its argparse definitions (the command is
:mod:`perflab.commands.run`; typed option values are :mod:`perflab.commands.options`)."""

from __future__ import annotations

import argparse

from perflab.commands import options as quick


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``perflab run``."""
    parser.add_argument("file", help="a .py file of @perflab.bench functions")
    parser.add_argument(
        "--json",
        metavar="FILE",
        help="write the results file here "
        "(default: .perflab/run-<time>.json); '-': JSON on stdout, no table",
    )
    parser.add_argument(
        "--filter",
        metavar="PATTERN",
        action="append",
        help="run only benchmarks whose id matches (shell pattern; a plain "
        "word matches anywhere); repeatable",
    )
    parser.add_argument(
        "--precision",
        default="1%",
        help="target 95%% CI half-width of each median, e.g. 1%% or 0.5%% (default 1%%)",
    )
    parser.add_argument("--budget", default="10s", help="time budget per benchmark (10s)")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a first look in a fraction of the time (as pyperf's --fast): "
        f"--budget {quick.QUICK['budget']}, --min-processes "
        f"{quick.QUICK['min_processes']}, --max-processes {quick.QUICK['max_processes']}, "
        f"--process-time {quick.QUICK['process_time']} unless given; wider CIs, and the table says it was quick",
    )
    parser.add_argument(
        "--timeout",
        default="60s",
        help="kill a worker process running longer than this and fail the benchmark (60s)",
    )
    parser.add_argument(
        "--min-processes",
        type=int,
        default=None,
        help="fresh processes "
        "per benchmark at least (10, or --max-processes if lower): the CI is "
        "estimated from the spread between processes, so it needs several",
    )
    parser.add_argument("--max-processes", type=int, default=60, help="at most (60)")
    parser.add_argument("--process-time", default="100ms", help="sampling time per process")
    parser.add_argument(
        "--seed",
        type=int,
        help="seed the interleaving order and each "
        "process's layout randomization (repeats them exactly)",
    )
    parser.add_argument(
        "--no-randomize",
        action="store_true",
        help="give every worker "
        "process the same memory layout (no padding variable, inherited hash "
        "seed, no heap padding); by default each gets its own",
    )
    parser.add_argument("--no-alloc", action="store_true", help="skip the tracemalloc pass")
    parser.add_argument(
        "--count",
        choices=["instructions"],
        help="count instead of time: each benchmark runs under Valgrind's Callgrind in 3 "
        "processes with different memory layouts (--min-processes N: N), and perflab "
        "reports instructions per op (Ir), the layout band, the fixed cost and the cold "
        "count (docs/count.md); needs valgrind",
    )
    parser.add_argument(
        "--cache-sim",
        action="store_true",
        help="with --count: also simulate the caches: L1 and LL misses per op and "
        "estimated cycles (an estimate from Valgrind's cache model)",
    )
    parser.add_argument(
        "--event-loop",
        choices=["asyncio", "uvloop"],
        default="asyncio",
        help="the event loop async def benchmarks run on (asyncio)",
    )
    parser.add_argument(
        "--memory",
        action="store_true",
        help="sample each worker's "
        "resident memory: RSS start, peak, end and growth per 1,000 ops, with "
        "a leak warning; its timeline every --memory-interval",
    )
    parser.add_argument(
        "--memory-interval",
        default="10ms",
        metavar="INTERVAL",
        help="with --memory: time between timeline readings (10ms)",
    )
    parser.add_argument(
        "--max-rss",
        metavar="SIZE",
        help="a memory limit gate: exit 1 naming each benchmark whose worker RSS peak "
        "(the highest over its processes) is above SIZE, e.g. 200MB or 1.5GiB; turns "
        "the RSS reading of --memory on",
    )
    parser.add_argument(
        "--format",
        choices=["table", "markdown", "csv"],
        default="table",
        help="how to print the results on stdout",
    )
    from perflab.report import outputs

    outputs.add_arguments(parser, "one line per benchmark")
    parser.add_argument("--quiet", action="store_true", help="no progress display")
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="every warning of every benchmark in full (by default warnings are grouped by kind)",
    )
    parser.add_argument(
        "--compare-to",
        metavar="REF|DIR|A.json|last|RUN",
        help="compare this run with a baseline: a git ref or a folder holding the "
        "baseline's code is measured now, in this run, paired with the current code "
        "(REF checked out into a temporary git worktree); a results file, or from "
        "history the newest earlier run or a run id, is compared as perflab compare does",
    )
    parser.add_argument(
        "--pairing",
        choices=["auto", "lockstep", "off"],
        default="auto",
        help="how the benchmarks a verdict compares are measured: auto: both in one "
        "worker process, alternately, sample by sample (two processes in lock-step "
        "when they can't share one); lockstep: always two processes, a barrier before "
        "every sample; off: apart, as the other benchmarks (ratio of medians)",
    )
    parser.add_argument(
        "--threshold",
        default="2%",
        help="noise threshold t of the "
        "verdicts, against each group's baseline benchmark and --compare-to: "
        "a ratio within ±t counts as the same (2%%); auto: from the "
        "run-to-run spread recorded in history",
    )
    parser.add_argument(
        "--fail-on",
        metavar="VERDICTS",
        default="",
        help="exit 1 when a "
        "verdict against a group's baseline or --compare-to is one of these, "
        "comma separated: slower, faster, inconclusive, failed (and missing "
        "and memory with --compare-to: memory trips when B allocates or holds "
        "more), e.g. slower,inconclusive (as perflab compare --fail-on)",
    )
    parser.add_argument(
        "--chart",
        metavar="PNG",
        help="draw each benchmark's samples and per-process medians into this PNG",
    )
    from perflab.commands import profiling
    from perflab.commands.options import add_history_arguments, add_n_plus_one

    add_n_plus_one(parser)
    profiling.add_arguments(parser, "benchmark")
    add_history_arguments(parser)
