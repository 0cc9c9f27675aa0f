"""``perflab run FILE.py``: in-process benchmarks of Python functions."""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import fnmatch
import math
import sys
from typing import Any

from perflab import redact
from perflab.commands import options as quick
from perflab.commands.options import apply_quick
from perflab.commands.run_args import add_arguments as add_arguments
from perflab.errors import UsageError
from perflab.report.notice import tell
from perflab.units import parse_positive_duration

#: --min-processes when not given (lowered to --max-processes when that is lower)
DEFAULT_MIN_PROCESSES = 10


def parse_precision(text: str) -> float:
    """ "1%" or "0.01" → 0.01. Raises UsageError outside (0, 1)."""
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise UsageError(f"--precision {text!r} is not a number; write e.g. 1% or 0.005") from None
    if not 0 < value < 1:
        raise UsageError(f"--precision {text!r} must be between 0% and 100%, e.g. 1%")
    return value


def _settings(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from perflab.engines.run.runner import Settings

    apply_quick(args)
    count_processes = _count_options(args)
    if args.min_processes is None:
        args.min_processes = min(DEFAULT_MIN_PROCESSES, args.max_processes)
    if args.min_processes < 1 or args.max_processes < args.min_processes:
        raise UsageError("--min-processes must be ≥ 1 and ≤ --max-processes")
    budget = parse_positive_duration(args.budget, "--budget")
    timeout = parse_positive_duration(args.timeout, "--timeout")
    process = parse_positive_duration(args.process_time, "--process-time")
    if process > budget or process >= timeout:
        raise UsageError(
            f"--process-time {args.process_time} must fit in --budget "
            f"{args.budget} and be below --timeout {args.timeout} (a worker "
            "samples that long); lower it or raise the others"
        )
    return Settings(
        precision=parse_precision(args.precision),
        budget_s=budget,
        timeout_s=timeout,
        min_processes=args.min_processes,
        max_processes=args.max_processes,
        process_seconds=process,
        allocations=not args.no_alloc,
        seed=args.seed,
        randomize=not args.no_randomize,
        event_loop=args.event_loop,
        pairing=args.pairing,
        memory_interval_s=parse_positive_duration(args.memory_interval, "--memory-interval")
        if args.memory or args.max_rss
        else None,
        count=args.count,
        cache_sim=args.cache_sim,
        count_processes=count_processes,
        count_profile=bool(args.count and args.profile),
    )


def _count_options(args: argparse.Namespace) -> int:
    """The counted processes per benchmark of ``--count`` (3, or --min-processes), after
    checking the count options go together and Valgrind is there.

    Raises:
        UsageError: --cache-sim without --count, --count with --memory or --max-rss, no
            Valgrind.
    """
    from perflab.engines import callgrind
    from perflab.engines.run.counted import COUNT_PROCESSES

    if args.cache_sim and not args.count:
        raise UsageError("--cache-sim simulates caches while counting: add --count instructions")
    if not args.count:
        return COUNT_PROCESSES
    if args.memory or args.max_rss:
        option = "--memory" if args.memory else "--max-rss"
        raise UsageError(
            f"{option} reads a timed worker's RSS; under --count the worker runs in "
            "Valgrind: drop one of them"
        )
    try:
        callgrind.valgrind_path()
    except callgrind.ValgrindMissing as exc:
        raise UsageError(str(exc)) from None
    return max(1, args.min_processes) if args.min_processes is not None else COUNT_PROCESSES


def select(cases, patterns):  # type: ignore[no-untyped-def]
    """Cases whose id matches any pattern (shell-style; a plain word matches anywhere).

    Raises:
        UsageError: when nothing matches.
    """
    if not patterns:
        return cases
    globs = [p if any(ch in p for ch in "*?[") else f"*{p}*" for p in patterns]
    chosen = [c for c in cases if any(fnmatch.fnmatchcase(c.id, g) for g in globs)]
    if not chosen:
        raise UsageError(
            f"--filter {' '.join(patterns)} matches no benchmark; ids are like {cases[0].id!r}"
        )
    return chosen


def load_cases(path: str, filters: list[str] | None) -> tuple[Any, list[Any]]:
    """(the benchmark file, its cases that ``filters`` select). What the file prints while
    it is imported (and its parameters expanded) goes to stderr: stdout holds the table,
    or the results file with ``--json -``.

    Raises:
        BenchFileError / UsageError: see :func:`perflab.engines.run.suite.load_file`, :func:`select`.
    """
    import contextlib

    from perflab.engines.run.suite import expand, load_file

    with contextlib.redirect_stdout(sys.stderr):
        bench_file = load_file(path)
        return bench_file, select(expand(bench_file), filters)


def main(args: argparse.Namespace) -> int:
    """Measure, save, print. Exit 1 when a benchmark failed; when Ctrl-C, SIGTERM or
    SIGHUP stopped the run (what was measured is saved and printed), 128 + the signal
    (130, 143, 129). A baseline checked out for ``--compare-to REF`` is removed on the
    way out, whatever the way."""
    import contextlib

    with contextlib.ExitStack() as stack:
        return _main(args, stack)


def _main(args: argparse.Namespace, stack: Any) -> int:
    """:func:`main` with ``stack`` holding the baseline's checkout."""
    from perflab import __version__, environment
    from perflab.commands import profiling
    from perflab.engines import clocks
    from perflab.engines.run.pairs import PairedRunner
    from perflab.files import Destination, results_destination
    from perflab.interrupts import StopSignals
    from perflab.model import Results
    from perflab.report import outputs
    from perflab.units import parse_bytes

    max_rss = parse_bytes(args.max_rss, "--max-rss") if args.max_rss else None
    repeat_limit = quick.n_plus_one(args)
    settings = _settings(args)
    destination = results_destination(args.json, "run")
    files_out = outputs.check(args, others=[destination])
    gate = _gate_options(args)
    settings = dataclasses.replace(settings, threshold=gate[0])  # pairs stop on the verdict
    chart = Destination.check(args.chart, "--chart", "png") if args.chart is not None else None
    profile = profiling.check(args, destination)  # with --count: Callgrind's, per function
    bench_file, cases = load_cases(args.file, args.filter)
    _check_gate(args, cases)
    started = dt.datetime.now(dt.UTC)
    env = environment.fingerprint(__version__)
    measured = _measured_baseline(args, cases, stack)
    baseline_name, baseline, gate = _baseline(args, cases, env, gate, measured is not None)
    timer = clocks.measure_timer()
    target_ns = max(timer.min_sample_ns, settings.min_sample_ns)
    results = Results(
        kind="run",
        command_line=["perflab", *redact.argv(sys.argv[1:])],
        created=started.isoformat(timespec="seconds"),
        perflab_version=__version__,
        environment=env,
        settings={
            **settings.to_dict(),
            "timer": timer.to_dict(),
            "sample_target_ns": target_ns,
            "threshold": gate[0],
            **({"quick": True} if args.quick else {}),
            **({"n_plus_one": repeat_limit} if repeat_limit is not None else {}),
        },
    )
    if not args.quiet and not settings.count:
        sys.stderr.write(
            quick.time_estimate(
                len(cases), settings.budget_s, settings.process_seconds, settings.min_processes
            )
            + "\n"
        )
    progress = _progress(settings.precision, args.quiet)
    with StopSignals() as stop:
        with progress:
            runner = PairedRunner(
                str(bench_file.path),
                cases,
                settings,
                target_ns,
                timer.error_ns,
                progress=progress,
                baseline=measured[1] if measured else None,
            )
            results.benchmarks = runner.run()
            if profile is not None and not runner.interrupted:
                runner.interrupted = profiling.profile_run(
                    bench_file, cases, results.benchmarks, settings, profile, args.quiet
                )
        stop.shield()
        _attach_units(results.benchmarks, bench_file)
        if measured is not None:
            baseline_name, baseline = _measured_results(measured[0], runner, results)
        results.interrupted = runner.interrupted
        environment.finish(env)
        judged = _save_and_print(results, args, destination, files_out)
        profiling.outputs(results.benchmarks, destination, args.format, args.quiet)
        if args.verbose and not settings.count:
            profiling.print_slow_calls(results.benchmarks, destination, args.format)
        if chart is not None and not settings.count:
            from perflab.report.run_chart import run_chart, write_chart

            write_chart(chart, lambda out: run_chart(results.benchmarks, judged, out))
        tripped = [s.id for s in judged if s.verdict in gate[1]]
        if baseline is not None:
            code = _compare_to(
                baseline_name,
                baseline,
                results,
                args.format,
                *gate,
                also_tripped=tripped,
                paired=measured is not None,
            )
        else:
            from perflab.report.compare_table import gate as apply_gate

            code = apply_gate(tripped, gate[1])
        code = max(code, _rss_gate(results.benchmarks, max_rss))
    stopped = stop.exit_code(runner.interrupted)
    if stopped is not None:
        return stopped
    return 1 if code or any(b.failed for b in results.benchmarks) else 0


def _rss_gate(benches: Any, limit: float | None) -> int:
    """``--max-rss``: the memory limit gate over each benchmark's highest worker RSS
    peak (:func:`perflab.analyze.memory.peak_rss_bytes`); 1 when it tripped."""
    from perflab.analyze.memory import peak_rss_bytes
    from perflab.report.compare_table import rss_gate

    if limit is None:
        return 0
    return rss_gate([(b.label, peak_rss_bytes(b)) for b in benches], limit, "benchmark(s)")


def _gate_options(args: argparse.Namespace) -> tuple[float, list[str]]:
    """(threshold, fail-on verdicts) of the verdicts, checked before anything runs.

    Raises:
        UsageError: a bad value.
    """
    from perflab.analyze.compare.suite import parse_fail_on
    from perflab.analyze.decisions import parse_threshold

    auto = args.threshold.strip().lower() == "auto"
    return (
        math.nan if auto else parse_threshold(args.threshold),
        parse_fail_on(args.fail_on) if args.fail_on else [],
    )


def _compare_to(
    baseline_name: str,
    baseline: Any,
    results: Any,
    fmt: str,
    threshold: float,
    fail_on: list[str],
    note: str | None = None,
    also_tripped: list[str] | None = None,
    paired: bool = False,
) -> int:
    """``--compare-to``: print the comparison of this run with its baseline in ``fmt``
    (``note``, how an automatic threshold was chosen, heads the footnotes) and apply the
    ``--fail-on`` gate as ``perflab compare`` does; ``also_tripped``: ids the run's own
    verdicts (against a baseline benchmark) tripped, named on the same single ``gate:``
    line. ``paired``: the baseline was measured in this run, paired with it (its ratios
    are the paired ones). Returns 1 when the gate tripped, else 0.

    Raises:
        UsageError: no benchmark in common.
    """
    from perflab.analyze.compare.suite import compare_results
    from perflab.analyze.counts import user_count_threshold
    from perflab.report.compare_table import gate, print_comparison

    suite = compare_results(
        baseline,
        results,
        threshold,
        names=(baseline_name, "this run"),
        count_threshold=user_count_threshold(f"{threshold}", sys.argv[1:]),
        paired=paired,
    )
    if note:
        suite.warnings.insert(0, note)
    tripped = print_comparison(suite, baseline_name, "this run", fmt, None, fail_on)
    return gate([*(also_tripped or []), *tripped], fail_on, held=suite.held_reason(fail_on))


def _check_gate(args: argparse.Namespace, cases) -> None:  # type: ignore[no-untyped-def]
    """--fail-on has something to judge: a baseline benchmark or --compare-to.

    Raises:
        UsageError: neither (the gate could never trip).
    """
    groups: dict[str, list] = {}  # type: ignore[type-arg]
    for case in cases:
        groups.setdefault(case.spec.group, []).append(case.spec)
    judged = any(
        any(s.baseline for s in specs) and not any(s.stage for s in specs)
        for specs in groups.values()
    )
    if "memory" in args.fail_on.lower() and not args.compare_to:
        raise UsageError(
            "--fail-on memory compares this run's allocations and RSS with a baseline's: "
            "give --compare-to A.json (or a git ref)"
        )
    if args.fail_on and not args.compare_to and not judged:
        raise UsageError(
            "--fail-on has nothing to judge: mark the reference benchmark of a "
            "group (not a staged one) with @perflab.bench(baseline=True), or "
            "give --compare-to A.json (the results to compare with)"
        )


def _baseline(args: argparse.Namespace, cases, env, gate, measured: bool = False):  # type: ignore[no-untyped-def]
    """(name, results, gate) of --compare-to (None, None without it, or when the
    baseline is ``measured`` in this run), resolved before anything is measured: a file
    or a run from history. An automatic threshold (NaN in ``gate``) is set from history;
    with --compare-to its explanation is added to the gate as its third item (the
    comparison's first footnote), else it goes to stderr."""
    from perflab.commands.options import history_database
    from perflab.history import baseline

    db = history_database(args)
    threshold, fail_on = gate
    note = None
    if math.isnan(threshold):
        threshold, note = baseline.threshold_before_run(db, [c.id for c in cases], env)
    if measured:
        return None, None, (threshold, fail_on, note)
    if not args.compare_to:
        if note:
            tell(f"note: {note}")
        return None, None, (threshold, fail_on)
    name, results = baseline.baseline_for(db, args.compare_to, "run", {c.id for c in cases})
    return name, results, (threshold, fail_on, note)


def _measured_baseline(args: argparse.Namespace, cases, stack):  # type: ignore[no-untyped-def]
    """``--compare-to REF`` (a git ref) or ``DIR``: the baseline's checkout and code
    (:func:`perflab.engines.run.baseline.load_baseline`); None without --compare-to, or
    for a results file or a run from history."""
    from perflab.engines.run.baseline import load_baseline

    if not args.compare_to:
        return None
    return load_baseline(args.compare_to, args.file, {c.id for c in cases}, stack)


def _measured_results(base, runner, results):  # type: ignore[no-untyped-def]
    """After a run with a measured baseline: see
    :func:`perflab.engines.run.baseline.baseline_results`."""
    from perflab.engines.run.baseline import baseline_results

    return baseline_results(base, [s.bench for s in runner.baseline_states], results)


def _progress(precision: float, quiet: bool):  # type: ignore[no-untyped-def]
    """The live display on stderr, or a silent one with --quiet."""
    if quiet:
        from perflab.engines.progress import NullProgress

        return NullProgress()
    from perflab.report.progress import RichProgress

    return RichProgress(precision)


def _attach_units(benches, bench_file) -> None:  # type: ignore[no-untyped-def]
    units = {m.name: m.unit for m in bench_file.metrics}
    for bench in benches:
        bench.metric_units = {k: units.get(k, "") for p in bench.processes for k in p.metrics}


def _save_and_print(results, args, destination, files_out):  # type: ignore[no-untyped-def]
    """Save, write the --markdown/--csv files, print (a failed save is raised after the
    table is printed). Returns every summary, with its verdict against its group's
    baseline ([] with --count: counts are judged by --compare-to)."""
    from perflab import model
    from perflab.commands.options import history_database
    from perflab.files import Deferred
    from perflab.history.record import record_results
    from perflab.report import outputs

    if results.settings.get("count"):
        summaries, tables, records, show, judged = _count_outputs(results, args)
    else:
        summaries, tables, records, show, judged = _timed_outputs(results, args)
    later = Deferred()
    later.run(model.save, results, destination, summaries)
    outputs.write(later, files_out, "run", tables, records)
    if not destination.stdout:
        show()
    record_results(history_database(args), args.tag, results, summaries, destination)
    later.raise_()
    if not destination.stdout:
        tell(f"results saved to {destination}")
    return judged


def _timed_outputs(results, args):  # type: ignore[no-untyped-def]
    """(summaries, tables, records, print, judged summaries) of a timed run."""
    from perflab.analyze.results_figures import run_figures
    from perflab.report.run_output import print_run, run_output_records, run_output_tables

    figures = run_figures(results)  # with the run's precision, min processes, threshold
    grouped, groups, threshold = figures.grouped, figures.groups, figures.threshold
    return (
        {s.id: s.to_dict() for group in grouped.values() for s in group},
        lambda: run_output_tables(
            groups, figures.memory, args.verbose, threshold, quick=args.quick
        ),
        lambda: run_output_records(groups, figures.memory),
        lambda: print_run(
            groups, args.format, args.verbose, threshold, memory=figures.memory, quick=args.quick
        ),
        [s for group in grouped.values() for s in group],
    )


def _count_outputs(results, args):  # type: ignore[no-untyped-def]
    """The same for ``--count``: the count table; failed benchmarks on stderr."""
    from perflab.analyze.counts import count_figures
    from perflab.report.count_table import count_records, count_tables, print_counts

    rows = count_figures(results.benchmarks)

    def show() -> None:
        print_counts(rows, results.benchmarks, args.format)
        for bench in results.benchmarks:
            if bench.error:
                tell(f"error: {bench.error}")

    return (
        {bench_id: s.to_dict() for bench_id, s in rows},
        lambda: count_tables(rows, results.benchmarks),
        lambda: count_records(rows),
        show,
        [],
    )
