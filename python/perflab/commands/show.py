"""``perflab show FILE``: re-render a saved results file."""

from __future__ import annotations

import argparse
import json
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``perflab show``."""
    parser.add_argument("file", help="a results file written with --json")
    parser.add_argument("--format", choices=["table", "markdown", "csv"], default="table")
    parser.add_argument("--env", action="store_true", help="also print the environment "
                        "fingerprint and the settings")
    parser.add_argument("--verbose", action="store_true", help="every warning of every "
                        "benchmark in full (by default warnings are grouped by kind)")


def print_environment(results: Any) -> None:
    """Print the command line, the environment fingerprint in words, and the settings."""
    from perflab.environment import describe
    from perflab.report.escape import terminal

    print(terminal("command line: " + " ".join(results.command_line), one_line=True))
    print(terminal("created: " + results.created, one_line=True))
    print("environment:")
    for label, text in describe(results.environment):
        print(terminal(f"  {label + ':':<16} {text}", one_line=True))
    print(terminal("settings: " + json.dumps(results.settings, indent=2)))


def main(args: argparse.Namespace) -> int:
    """Load, summarize and print. Exit 2 on a bad file."""
    from perflab import model
    from perflab.analyze.summary import summarize_benchmarks
    from perflab.report.run_output import print_run

    results = model.load(args.file)
    if args.env:
        print_environment(results)
    if results.kind == "cmd":
        from perflab.analyze import cmd
        from perflab.report.cmd_table import print_cmd

        print_cmd(results, cmd.summarize_results(results), args.format)
        return 0
    if results.kind == "http":
        from perflab.analyze import http
        from perflab.report.http_table import print_http

        print_http(results, http.summarize_results(results), args.format)
        return 0
    if results.kind == "trace":
        from perflab.report.trace_table import print_trace

        print_trace(results, args.format)
        return 0
    grouped = summarize_benchmarks(results.benchmarks,
                                   precision=results.settings.get("precision"),
                                   min_processes=results.settings.get("min_processes"))
    print_run(results, grouped, args.format, args.verbose)
    return 0
