"""``--profile`` of ``run`` and ``cmd``, shared by both commands (no command itself): the
options, their checks before anything is measured, and the profile's outputs after the
results file is saved (the top-functions tables on stdout, the collapsed-stack and
speedscope files beside the results file). See docs/profile.md."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from perflab.errors import UsageError
from perflab.units import parse_positive_duration


def add_arguments(parser: argparse.ArgumentParser, what: str) -> None:
    """Add ``--profile`` and ``--profile-time`` (``what``: the measured things' name)."""
    parser.add_argument(
        "--profile",
        action="store_true",
        help=f"after timing, sample where each {what} spends its time with py-spy, in "
        "processes of their own (timed figures untouched); prints the top functions and "
        "writes collapsed stacks and speedscope files beside the results file; with "
        "--count instructions: Callgrind's instructions per function instead",
    )
    parser.add_argument(
        "--profile-time",
        default="1s",
        metavar="DURATION",
        help=f"time each {what} is profiled, summed over its profile processes (1s)",
    )


def check(args: argparse.Namespace, destination: Any) -> Any:
    """Before measuring: py-spy found (not needed under ``--count``: the counted runs'
    Callgrind files give the instructions per function), ``--profile-time`` parsed, the
    profile folder beside the results file free or perflab's.

    Args:
        args: the options.
        destination: the results file's checked destination.

    Returns:
        (py-spy :class:`perflab.engines.profiler.Sampler` or None when counting,
        profile seconds), or None without ``--profile``.

    Raises:
        UsageError: py-spy missing, a bad duration, the folder not perflab's.
    """
    if not getattr(args, "profile", False):
        return None
    from perflab.engines.profiler import find_sampler
    from perflab.model.profile import FOLDER_MARK, profile_folder

    seconds = parse_positive_duration(args.profile_time, "--profile-time")
    counting = bool(getattr(args, "count", None))
    if destination.path is not None and not destination.in_place:
        folder = profile_folder(destination.path)
        if folder.exists() and not (folder / FOLDER_MARK).is_file():
            raise UsageError(
                f"--profile: {folder} exists and was not made by perflab; the profile "
                "files go there: remove it or choose another --json path"
            )
    return (None if counting else find_sampler()), seconds


def outputs(benches: Sequence[Any], destination: Any, fmt: str, quiet: bool = False) -> None:
    """After saving: the top-functions table of each profiled benchmark on stdout
    (``fmt``: table, markdown, csv; nothing when the results go to stdout), and the
    profile files beside the results file (a note on stderr when they can't be
    written: the profiles stay in the results file)."""
    from perflab.analyze.profile import profiled
    from perflab.model.profile import write_files
    from perflab.report.profile_table import print_profiles

    shown = profiled(benches)
    for bench in benches:
        if bench.profile is not None and not bench.profile.total and bench.profile.note:
            sys.stderr.write(f"note: {bench.label}: no profile: {bench.profile.note}\n")
    if not shown or destination.path is None:
        return
    print_profiles(shown, fmt)
    if destination.in_place:
        return
    try:
        written = write_files(Path(destination.path), [(label, f.profile) for label, f in shown])
    except OSError as exc:
        sys.stderr.write(
            f"note: profile files not written ({exc}); the profiles are kept in the results file\n"
        )
        return
    if written and not quiet:
        sys.stderr.write(f"profiles written to {written[0].parent}/\n")


def profile_run(
    bench_file: Any,
    cases: Sequence[Any],
    benches: Sequence[Any],
    settings: Any,
    profile: Any,
    quiet: bool = False,
) -> bool:
    """``run --profile``: every case that did not fail profiled after the timed run
    (:func:`perflab.engines.run.profile.profile_cases`), a line on stderr per case;
    with ``--count instructions`` nothing here: the counted workers' Callgrind files
    gave the instruction profile (:func:`perflab.engines.run.counted.keep_profile`).
    Returns True when Ctrl-C (or SIGTERM, SIGHUP) stopped it: what was measured and
    profiled so far is kept, the rest is not profiled."""
    from perflab.engines.run.profile import ProfileSettings, profile_cases

    sampler, seconds = profile
    if sampler is None:
        return False
    return _stoppable(
        lambda: profile_cases(
            str(bench_file.path),
            cases,
            benches,
            ProfileSettings(
                seconds=seconds, timeout_s=settings.timeout_s, event_loop=settings.event_loop
            ),
            sampler,
            on_case=None if quiet else lambda b: sys.stderr.write(f"profiling {b.label} …\n"),
        )
    )


def _stoppable(work: Any) -> bool:
    """Run ``work()``; True when a stop signal (KeyboardInterrupt) ended it, with a note."""
    try:
        work()
    except KeyboardInterrupt:
        sys.stderr.write("note: --profile stopped; the benchmarks not yet profiled have none\n")
        return True
    return False


def profile_commands(
    benches: Sequence[Any], specs: Sequence[Any], settings: Any, profile: Any, args: Any
) -> bool:
    """``cmd --profile``: each command that did not fail run under py-spy, children
    followed, after the timed runs (:func:`perflab.engines.cmd.profiled.profile_command`);
    with ``--count instructions`` nothing here: the counted runs' Callgrind files give
    the instruction profile (:mod:`perflab.engines.cmd.counted`). Returns True when a
    stop signal ended it (what was profiled is kept)."""
    from perflab.engines.cmd.profiled import profile_command

    sampler, seconds = profile
    if sampler is None:
        return False

    def work() -> None:
        for bench, spec in zip(benches, specs, strict=True):
            if bench.failed or not bench.runs:
                continue
            if not args.quiet:
                sys.stderr.write(f"profiling {bench.label} …\n")
            bench.profile = profile_command(
                spec.argv, seconds, sampler, timeout_s=settings.timeout_s, input_path=args.input
            )

    return _stoppable(work)


def print_slow_calls(benches: Sequence[Any], destination: Any, fmt: str) -> None:
    """``run --verbose``: each benchmark's slowest samples and what happened during them
    (not in CSV, nor when the results go to stdout)."""
    from perflab.analyze.slow_calls import slow_calls
    from perflab.report.slow_table import print_slow

    if fmt == "csv" or destination.path is None:
        return
    print_slow([c for b in benches if (c := slow_calls(b)) is not None], fmt)
