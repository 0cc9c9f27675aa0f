"""The options of ``perflab cmd``: its argparse definitions (the command is
:mod:`perflab.commands.cmd`; typed option values are :mod:`perflab.commands.options`)."""

from __future__ import annotations

import argparse

from perflab.commands.options import Commands as _Commands
from perflab.commands.options import IgnoreFailure as _IgnoreFailure
from perflab.commands.options import Scan as _Scan
from perflab.report import hyperfine_habits


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``perflab cmd`` (hyperfine's names where they exist)."""
    from perflab.commands import profiling

    profiling.add_arguments(parser, "command")
    parser.add_argument(
        "commands",
        nargs="*",
        action=_Commands,
        default=None,
        metavar="COMMAND",
        help="commands to benchmark; {name} is replaced by -P/-L values",
    )
    parser.add_argument(
        "--shell",
        nargs="?",
        const="default",
        dest="shell_option",
        metavar="SHELL",
        help="run commands through a shell (sh, or SHELL; 'none': no shell, as hyperfine's "
        "--shell=none; default: no shell, split like sh)",
    )
    hyperfine_habits.add_arguments(parser)
    parser.add_argument(
        "-N",
        "--no-shell",
        action="store_true",
        help="no shell (hyperfine's -N; already the default)",
    )
    parser.add_argument(
        "-n",
        "--command-name",
        action="append",
        default=[],
        dest="names",
        metavar="NAME",
        help="name of a command in tables and files, in the "
        "order of the commands; repeatable; {param} placeholders are filled",
    )
    parser.add_argument("--shell-path", default="sh", metavar="SHELL", help="the shell (sh)")
    parser.add_argument(
        "-S",
        dest="shell_option",
        metavar="SHELL",
        help="hyperfine's -S: run commands through SHELL (a name or path; "
        "'default': sh), or 'none': no shell (as -N)",
    )
    parser.add_argument(
        "-P",
        "--parameter-scan",
        nargs="+",
        action=_Scan,
        default=[],
        dest="scans",
        metavar=("NAME LO HI", "STEP"),
        help="a numeric parameter: NAME takes LO, LO+STEP, … HI (STEP 1)",
    )
    parser.add_argument(
        "-D",
        "--parameter-step-size",
        dest="step",
        metavar="STEP",
        help="the STEP of -P, as hyperfine writes it: -P n 0 100 -D 10",
    )
    parser.add_argument(
        "-L",
        "--parameter-list",
        nargs=2,
        action="append",
        default=[],
        dest="lists",
        metavar=("NAME", "A,B,C"),
        help="a parameter of listed values",
    )
    for short, hook, text in (
        ("-s", "setup", "before all runs of each command"),
        ("-p", "prepare", "before each run (untimed), e.g. to drop caches"),
        (None, "conclude", "after each run (untimed)"),
        ("-c", "cleanup", "after all runs of each command"),
    ):
        parser.add_argument(
            *filter(None, (short, f"--{hook}")), metavar="CMD", help=f"shell command run {text}"
        )
    parser.add_argument(
        "-w",
        "--warmup",
        type=int,
        default=0,
        metavar="N",
        help="untimed runs of each command first (0)",
    )
    parser.add_argument(
        "--no-interleave",
        action="store_true",
        help="run all of A, then all of B (default: randomized blocks)",
    )
    parser.add_argument(
        "--precision", default="1%", help="target 95%% CI half-width of each median and ratio (1%%)"
    )
    parser.add_argument(
        "-m", "--min-runs", type=int, default=10, metavar="N", help="timed runs at least (10)"
    )
    parser.add_argument(
        "-M", "--max-runs", type=int, default=1000, metavar="N", help="timed runs at most (1000)"
    )
    parser.add_argument(
        "-r", "--runs", type=int, metavar="N", help="exactly N runs (min = max = N)"
    )
    parser.add_argument("--budget", default="10s", help="time each command may spend (10s)")
    parser.add_argument(
        "--timeout",
        default="10m",
        help="kill a run (or hook) lasting longer and count it failed (10m; 0 = never)",
    )
    parser.add_argument(
        "-i",
        "--ignore-failure",
        nargs="?",
        action=_IgnoreFailure,
        metavar="CODES",
        help="non-zero exits don't fail the benchmark; =1,2 accepts only those codes",
    )
    parser.add_argument(
        "--show-output",
        action="store_true",
        help="let commands print to the terminal (default: discarded)",
    )
    parser.add_argument("--input", metavar="FILE", help="feed FILE to each run's stdin")
    parser.add_argument(
        "--count",
        choices=["instructions"],
        help="after the timed runs, count each command's instructions under Valgrind's "
        "Callgrind, its children included, in 3 runs with different layouts (docs/count.md)",
    )
    parser.add_argument(
        "--cache-sim", action="store_true", help="with --count: also simulate the caches"
    )
    parser.add_argument(
        "--memory",
        action="store_true",
        help="read each run's summed resident memory (the command and all it "
        "starts) every --memory-interval: peak and growth columns",
    )
    parser.add_argument(
        "--memory-interval",
        default="10ms",
        metavar="INTERVAL",
        help="with --memory: time between readings (10ms)",
    )
    parser.add_argument(
        "--reference",
        metavar="CMD",
        help="ratios against this command (its "
        "text, name, or 1-based number); default: the fastest",
    )
    parser.add_argument(
        "--threshold",
        default="2%",
        help="noise threshold t of the verdicts: a ratio within ±t counts as the same (2%%)",
    )
    parser.add_argument(
        "--fail-on",
        default="",
        metavar="VERDICTS",
        help="exit 1 when a command gets one of these verdicts against the "
        "reference, comma separated: slower, faster, inconclusive, failed "
        "(as perflab compare --fail-on)",
    )
    parser.add_argument(
        "--max-rss",
        metavar="SIZE",
        help="exit 1 when a command's peak resident memory (the largest max RSS over its "
        "runs) is above SIZE, e.g. 200MB or 1.5GiB: a memory limit gate",
    )
    parser.add_argument(
        "--json",
        metavar="FILE",
        help="write the results file here "
        "(default: .perflab/cmd-<time>.json); '-': JSON on stdout, no table",
    )
    parser.add_argument(
        "--format",
        choices=["table", "markdown", "csv"],
        default="table",
        help="how to print the results on stdout",
    )
    for kind, what in (
        (
            "json",
            "hyperfine's JSON (results: command, mean, stddev, median, "
            "user, system, min, max, times, exit_codes, parameters; seconds)",
        ),
        ("markdown", "the table as Markdown"),
        ("csv", "one CSV line per command (seconds, bytes)"),
    ):
        aliases = [f"--{kind}"] if kind != "json" else []  # every command's --markdown/--csv
        parser.add_argument(
            f"--export-{kind}",
            *aliases,
            metavar="FILE",
            help=f"also write {what} to FILE; any of them at once",
        )
    parser.add_argument(
        "--seed", type=int, help="seed the block order, the environment offsets and the bootstrap"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress display")
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="every warning of every command in full (by default warnings are grouped by kind)",
    )
    parser.add_argument(
        "--chart", metavar="PNG", help="draw each command's wall times per run into this PNG"
    )
    from perflab.commands.options import add_history_arguments

    add_history_arguments(parser)
