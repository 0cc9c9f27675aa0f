"""``perflab cmd 'A' 'B' …``: whole-command benchmarks, interleaved, with CPU and memory.

The command line only: options → specs (:mod:`perflab.engines.cmd.parameters`) and
settings, then the engine (:mod:`perflab.engines.cmd.commands`), the statistics
(:mod:`perflab.analyze.cmd`), the table (:mod:`perflab.report.cmd_table`), the results
file and the exit code.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import sys
from typing import Any

from perflab import redact
from perflab.commands.cmd_args import add_arguments as add_arguments
from perflab.errors import UsageError, option_name
from perflab.report import hyperfine_habits
from perflab.report.notice import tell
from perflab.units import parse_positive_duration


def _parameters(args: argparse.Namespace) -> list[Any]:
    from perflab.engines.cmd.parameters import parse_list, parse_scan

    scans = [list(t) for t in args.scans]
    if args.step is not None:
        step = option_name(args, "step", "-D")
        if not scans:
            raise UsageError(
                f"{step} {args.step}: it is the step of a -P NAME LO HI scan; "
                "add one, e.g. -P n 0 100 -D 10"
            )
        if any(len(t) == 4 for t in scans):
            raise UsageError(
                f"{step} {args.step} and a -P with its own STEP: give the step "
                "once, e.g. -P n 0 100 10 or -P n 0 100 -D 10"
            )
        scans = [[*t, args.step] for t in scans]
    return [parse_scan(t) for t in scans] + [parse_list(t) for t in args.lists]


def _settings(args: argparse.Namespace, specs: list[Any]) -> Any:
    """Settings from the options. Raises UsageError on bad values."""
    from perflab.engines import callgrind
    from perflab.engines.cmd.commands import CommandSettings, parse_codes
    from perflab.units import parse_fraction

    if args.cache_sim and not args.count:
        raise UsageError("--cache-sim simulates caches while counting: add --count instructions")
    if args.count and not callgrind.shutil.which("valgrind"):
        raise UsageError(str(callgrind.ValgrindMissing(callgrind.MISSING)))

    def named(dest: str) -> str:
        return f"{option_name(args, dest, '--' + dest.replace('_', '-'))} {getattr(args, dest)}"

    for dest in ("runs", "min_runs"):
        if getattr(args, dest) is not None and getattr(args, dest) < 2:
            raise UsageError(f"{named(dest)}: a CI needs at least 2 timed runs; give 2 or more")
    if args.runs is not None:
        args.min_runs = args.max_runs = args.runs
    elif args.max_runs < args.min_runs:
        raise UsageError(
            f"{named('max_runs')} is below {named('min_runs')}; give a maximum "
            "at least the minimum (or exactly N runs: -r N)"
        )
    if args.warmup < 0:
        raise UsageError(f"{named('warmup')}: untimed warmup runs are 0 or more")
    codes = parse_codes(None if args.ignore_failure in (None, "all") else args.ignore_failure)
    timeout = (
        None
        if args.timeout.strip() in ("0", "0s")
        else parse_positive_duration(args.timeout, "--timeout")
    )
    precision = parse_fraction(args.precision, "--precision", "1%", "0.005")
    return CommandSettings(
        precision=precision,
        min_runs=args.min_runs,
        max_runs=args.max_runs,
        budget_s=parse_positive_duration(args.budget, "--budget"),
        timeout_s=timeout,
        warmup=args.warmup,
        interleave=not args.no_interleave,
        ignore_all=args.ignore_failure == "all",
        ignore_codes=codes or frozenset(),
        reference=_reference_index(args.reference, specs),
        seed=args.seed,
    )


def _reference_index(text: str | None, specs: list[Any]) -> int | None:
    """Index of --reference among the specs (by name, text or 1-based number)."""
    if text is None:
        return None
    for i, spec in enumerate(specs):
        if text in (spec.name, spec.text, spec.to_benchmark().label):
            return i
    if text.isdigit() and 1 <= int(text) <= len(specs):
        return int(text) - 1
    raise UsageError(
        f"--reference {text!r} is none of the commands; give one of them "
        f"exactly, e.g. {specs[0].name!r}, or its number 1–{len(specs)}"
    )


def _specs(args: argparse.Namespace) -> list[Any]:
    """Commands × parameters, resolved; the --reference command added when it is new."""
    from perflab.engines.cmd.commands import HOOKS
    from perflab.engines.cmd.parameters import expand_commands

    hooks = {h: getattr(args, h) for h in HOOKS}
    _shell_option(args)
    if args.shell and args.no_shell:
        raise UsageError("--shell and -N (no shell) contradict each other; give one")
    shell = args.shell_path if args.shell else None
    commands, names = list(args.commands or []), list(args.names)
    if len(names) > len(commands):
        raise UsageError(
            f"{len(names)} names (-n) for {len(commands)} commands; give at "
            "most one name per command, in the commands' order"
        )
    if args.reference and not args.reference.isdigit() and args.reference not in commands:
        probe = (
            expand_commands(commands, _parameters(args), hooks, shell, names) if commands else []
        )
        if not any(args.reference in (s.name, s.text) for s in probe):
            commands.insert(0, args.reference)
            names = [args.reference, *names] if names else []
    return expand_commands(commands, _parameters(args), hooks, shell, names)


def _shell_option(args: argparse.Namespace) -> None:
    """hyperfine's ``-S SHELL`` / ``--shell[=SHELL]`` onto perflab's options: ``none`` is
    -N, ``default`` (or a bare --shell) --shell-path, anything else the shell at that
    name or path."""
    choice = args.shell_option
    args.shell = False
    if choice is None:
        return
    if choice.strip() == "none":
        args.no_shell = True
    else:
        args.shell = True
        args.shell_path = args.shell_path if choice.strip() == "default" else choice


def _check_input(path: str | None) -> None:
    """--input is a regular readable file. Raises UsageError (missing, a folder, a device)."""
    import os
    import stat

    if path is None:
        return
    try:
        mode = os.stat(path).st_mode
    except OSError:
        raise UsageError(
            f"--input {path}: no such file; give a readable file to feed to stdin"
        ) from None
    if stat.S_ISDIR(mode):
        raise UsageError(f"--input {path}: is a folder; give a file to feed to stdin")
    if not stat.S_ISREG(mode) or not os.access(path, os.R_OK):
        raise UsageError(
            f"--input {path}: is not a readable regular file; save the input "
            "to a file and pass that"
        )


def main(args: argparse.Namespace) -> int:
    """Measure, save, print. Exit 1 when a command failed, 2 on bad input; when Ctrl-C,
    SIGTERM or SIGHUP stopped the run (what was measured is saved and printed), 128 + the
    signal (130, 143, 129)."""
    from perflab import __version__, environment
    from perflab.analyze.compare.suite import parse_fail_on
    from perflab.analyze.decisions import parse_threshold
    from perflab.commands import profiling
    from perflab.engines.cmd.commands import CommandRunner
    from perflab.engines.cmd.parameters import resolve_executable
    from perflab.engines.cmd.spawn import PosixSpawner
    from perflab.files import Destination, results_destination
    from perflab.interrupts import StopSignals
    from perflab.model import Results
    from perflab.units import parse_bytes

    hyperfine_habits.apply(args)
    specs = _specs(args)
    settings = _settings(args, specs)
    threshold = parse_threshold(args.threshold)
    fail_on = parse_fail_on(args.fail_on)
    max_rss = parse_bytes(args.max_rss, "--max-rss") if args.max_rss else None
    _check_input(args.input)
    destination = results_destination(args.json, "cmd")
    profile = profiling.check(args, destination)
    chart = Destination.check(args.chart, "--chart", "png") if args.chart is not None else None
    exports = _exports(args, [destination, chart])
    shell = resolve_executable(args.shell_path, "--shell") if args.shell else None
    overhead = (shell, "-c", "") if shell else (resolve_executable("true", "true"),)
    memory_s = (
        parse_positive_duration(args.memory_interval, "--memory-interval") if args.memory else None
    )
    env = environment.fingerprint(__version__)
    results = Results(
        kind="cmd",
        command_line=["perflab", *redact.argv(sys.argv[1:])],
        created=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        perflab_version=__version__,
        environment=env,
        settings={
            **settings.to_dict(),
            "shell": shell,
            "input": args.input,
            "show_output": args.show_output,
            "threshold": threshold,
            "memory_interval_s": memory_s,
        },
    )
    spawner = PosixSpawner(
        show_output=args.show_output,
        input_path=args.input,
        seed=args.seed,
        memory_interval_s=memory_s,  # stdout may carry --json - etc.
        output_to_stderr=any(d.stdout for d in [destination, *exports.values()]),
    )
    with StopSignals() as stop:
        with _progress(settings.precision, args.quiet or args.show_output) as progress:
            runner = CommandRunner(specs, settings, spawner, overhead, progress)
            results.benchmarks = runner.run()
            if args.count and not runner.interrupted:
                _count(results.benchmarks, specs, settings, args)
            if profile is not None and not runner.interrupted:
                stopped = profiling.profile_commands(
                    results.benchmarks, specs, settings, profile, args
                )
                runner.interrupted = runner.interrupted or stopped
        stop.shield()  # a second signal no longer stops the save
        spawner.close()
        results.spawn_overhead_ns = runner.spawn_overhead_ns
        results.interrupted = runner.interrupted
        results.rss_floor_bytes = runner.rss_floor_bytes
        environment.finish(env)
        summaries = _save_and_print(results, args, destination, exports)
        profiling.outputs(results.benchmarks, destination, args.format, args.quiet)
        if chart is not None:
            from perflab.report.run_chart import cmd_chart, write_chart

            write_chart(chart, lambda out: cmd_chart(results.benchmarks, out))
    stopped = stop.exit_code(runner.interrupted)
    if stopped is not None:
        return stopped
    code = _exit_code(results, runner)
    if code:
        return code
    from perflab.report.compare_table import rss_gate

    peaks = [(s.label, s.max_rss_peak_bytes) for s in summaries]
    return max(_gate(summaries, fail_on), rss_gate(peaks, max_rss, "command(s)"))


def _count(benchmarks: Any, specs: Any, settings: Any, args: argparse.Namespace) -> None:
    """``--count``: each command's counted runs (engines/cmd/counted.py) into its benchmark;
    a failed counted run is one line on stderr."""
    from perflab.engines.cmd.counted import count_benchmarks

    accepts = None if settings.ignore_all else frozenset({0, *settings.ignore_codes})
    timeout = None if settings.timeout_s is None else settings.timeout_s * 10
    for line in count_benchmarks(
        benchmarks,
        [s.argv for s in specs],
        seed=args.seed,
        cache_sim=args.cache_sim,
        timeout_s=timeout,
        accepts=accepts,
        input_path=args.input,
        profile=args.profile,
    ):
        tell(f"note: --count: {line}")


def _exit_code(results: Any, runner: Any) -> int:
    if runner.start_errors:
        return 2
    return 1 if any(b.failed for b in results.benchmarks) else 0


def _gate(summaries: Any, fail_on: list[str]) -> int:
    """``--fail-on``: 1 (one ``gate:`` line on stderr) when a command's verdict against
    the reference is one of ``fail_on``, as ``perflab compare --fail-on`` gates."""
    from perflab.report.compare_table import gate

    return gate([s.label for s in summaries if s.verdict in fail_on], fail_on)


def _exports(args: argparse.Namespace, others: list[Any]) -> dict[str, Any]:
    """The checked ``--export-*`` destinations (hyperfine's options), by format: JSON
    here, Markdown and CSV as every command's output files (:mod:`perflab.report.outputs`);
    none may share a place with another or with ``others`` (``--json``, ``--chart``)."""
    from perflab.files import Destination
    from perflab.report import outputs

    json_to = (
        {"json": Destination.check(args.export_json, "--export-json")}
        if args.export_json is not None
        else {}
    )  # no alias: --json is the results file
    base = {
        **json_to,
        **outputs.check(args, "--export-{kind}", "export_{kind}", [*others, *json_to.values()]),
    }
    return {**base, **hyperfine_habits.check_exports(args, [*others, *base.values()])}


def _progress(precision: float, quiet: bool) -> Any:
    if quiet:
        return contextlib.nullcontext(None)
    from perflab.report.progress import RichProgress

    return RichProgress(precision, unit="runs")


def _save_and_print(
    results: Any, args: argparse.Namespace, destination: Any, exports: dict[str, Any]
) -> list[Any]:
    """Save, write the exports, print; a failed save is raised after the table is
    printed and the other files are written. Returns the summaries."""
    from perflab import model
    from perflab.analyze.cmd import spawn_overhead, summarize_results
    from perflab.analyze.counts import count_figures
    from perflab.commands.options import history_database
    from perflab.files import Deferred, save
    from perflab.history.record import record_results
    from perflab.report import outputs
    from perflab.report.cmd_table import cmd_tables, hyperfine_json, print_cmd, summary_records
    from perflab.report.count_table import print_counts

    summaries = summarize_results(results)
    overhead = spawn_overhead(results.spawn_overhead_ns)
    later = Deferred()
    # compact JSON: the C encoder keeps saving thousands of runs fast
    later.run(model.save, results, destination, {s.id: s.to_dict() for s in summaries}, indent=None)
    exports = dict(exports)
    habits = {k: exports.pop(k) for k in list(exports) if k in hyperfine_habits.EXPORTS}
    hyperfine_habits.write_exports(later, habits, lambda: cmd_tables(results, summaries, overhead))
    if "json" in exports:
        later.run(
            save,
            exports.pop("json"),
            lambda: hyperfine_json(results, summaries).encode(),
            "json export",
        )
    outputs.write(
        later,
        exports,
        "cmd",
        lambda: cmd_tables(results, summaries, overhead),
        lambda: summary_records(summaries),
    )
    if not destination.stdout and hyperfine_habits.prints_table(args):
        print_cmd(results, summaries, overhead, args.format, args.verbose)
        print_counts(count_figures(results.benchmarks), results.benchmarks, args.format)
    record_results(
        history_database(args),
        args.tag,
        results,
        {s.id: s.to_dict() for s in summaries},
        destination,
    )
    later.raise_()
    if not destination.stdout:
        tell(f"results saved to {destination}")
    return summaries
