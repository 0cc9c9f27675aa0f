"""``perflab http URL``: HTTP load at fixed rates, a rate sweep, or a closed loop."""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import sys
from typing import Any, Self

from perflab.commands.http_args import add_arguments as add_arguments
from perflab.errors import UsageError
from perflab.report.notice import tell


def main(args: argparse.Namespace) -> int:
    """Check, measure step by step (saving after each), print, chart.

    Exit codes: 0 done, 1 the target stopped answering or no request succeeded, or the
    --fail-on gate tripped (by default: a step missed the --slo), 2 bad input or an
    unreachable target; when Ctrl-C, SIGTERM or SIGHUP stopped it (what was measured is
    kept), 128 + the signal (130, 143, 129).
    """
    from perflab.commands.options import http_plan, n_plus_one
    from perflab.files import Deferred, Destination, results_destination
    from perflab.interrupts import StopSignals
    from perflab.report import outputs

    plan = http_plan(args, check=args.agents is None)
    slo_s = _slo(args.slo)
    if slo_s and "rss" in slo_s and not (args.watch or args.watch_cmd):
        raise UsageError(
            "--slo rss=… bounds the watched server's memory: name it with --watch PID "
            "or --watch-cmd NAME"
        )
    fail_on = _fail_on(args.fail_on, slo_s)
    repeat_limit = n_plus_one(args)
    path = results_destination(args.json, "http")
    files_out = outputs.check(args, others=[path])
    chart = Destination.check(args.chart, "--chart", "png") if args.chart is not None else None
    watcher = _watcher(args)
    # the stop signals are ours from before Ray starts (its own SIGTERM handler exits
    # 15 and saves nothing) until the results are saved: shielded once measuring ends
    with StopSignals() as stop:
        with _load(args, plan) as (run_sweep, agents):
            results = _results(plan, args, slo_s)
            results.agents = agents
            if repeat_limit is not None:
                results.settings["n_plus_one"] = repeat_limit
            steps_saved = Deferred()  # a step's save may fail (disk full): measuring goes on

            def step_done(o: Any) -> None:
                if watcher is not None:
                    o.steps[-1].watched = watcher.cut()
                # after the last local step the final save follows at once: one save, not two
                last = args.agents is None and len(o.steps) >= plan.steps
                _step_done(results, o, path, live, None if last else steps_saved)

            with _live(args.quiet, plan) as live, watcher or contextlib.nullcontext():
                outcome = run_sweep(plan, progress=live.update if live else None, on_step=step_done)
            stop.shield()  # stopping the agents, saving and printing are not cut short
        _finish(args, results, outcome, path, files_out, chart)
    code = stop.exit_code(results.interrupted) or _exit_code(results)
    return _gate(results, fail_on) if code == 0 else code


def _finish(
    args: argparse.Namespace, results: Any, outcome: Any, path: Any, files_out: Any, chart: Any
) -> None:
    """Save the results file, write --markdown/--csv, print, record in history, chart."""
    from perflab.files import Deferred

    later = Deferred()
    summaries = later.run(_save, results, outcome, path)  # None when the save failed
    _write_outputs(later, results, files_out)
    if not path.stdout:
        render(results, args.format)
    if results.benchmarks[0].steps:
        from perflab.commands.options import history_database
        from perflab.history.record import record_results

        record_results(history_database(args), args.tag, results, summaries, path)
    later.raise_()
    if not path.stdout:
        tell(f"results saved to {path}")
    if chart is not None and results.benchmarks[0].steps:
        _chart(results, chart)


def _load(args: argparse.Namespace, plan: Any) -> Any:
    """Where the load comes from, as a context yielding (run_sweep, agents): this
    machine's engine, or load agents on Ray (``--agents``, see
    :mod:`perflab.engines.http.cluster`). Raises UsageError: an unreachable target, or a
    cluster option without --agents."""
    if args.agents is not None:
        from perflab.engines.http.cluster.sweep import distributed

        return distributed(
            args,
            plan,
            tell=None if args.quiet else lambda line: tell(f"perflab http: {line}"),
        )
    from perflab.engines.http.engine import check_reachable, run_sweep

    if args.cluster or args.agents_per_node or args.fail_fast or args.split:
        raise UsageError(
            "--cluster, --agents-per-node, --fail-fast and --split go with "
            "--agents N (distributed load)"
        )
    if plan.config.get("protocol") != "http3":  # QUIC is UDP: a TCP check tells nothing
        check_reachable(plan.target, plan.connect_timeout_s)
    return contextlib.nullcontext((run_sweep, []))


def _watcher(args: argparse.Namespace) -> Any:
    """A :class:`perflab.engines.http.watch.Watcher` of --watch/--watch-cmd, or None.
    Raises UsageError for a pid or name that is not running."""
    if not (args.watch or args.watch_cmd):
        return None
    from perflab.engines.http.watch import Watcher, resolve

    return Watcher(resolve(args.watch, args.watch_cmd))


#: What ``--fail-on`` of ``perflab http`` may name.
FAIL_ON_WORDS = ("slo", "saturated", "errors", "generator-limited")


def _slo(text: str | None) -> dict[str, float] | None:
    """``--slo``: "100ms" → {"p99": 0.1}; "p99=10ms,error=0.1%" → {"p99": 0.01,
    "error": 0.001}. Raises UsageError on an unknown key or a bad value."""
    from perflab.analyze.http_slo import SLO_KEYS
    from perflab.units import parse_bytes, parse_fraction, parse_positive_duration

    if text is None:
        return None
    if "=" not in text:
        return {"p99": parse_positive_duration(text, "--slo")}
    limits = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, _, value = part.partition("=")
        key = key.strip().lower()
        if key not in SLO_KEYS or not value.strip():
            raise UsageError(
                f"--slo {part!r}: write KEY=VALUE with a key of "
                f"{', '.join(SLO_KEYS)}, e.g. p99=10ms,error=0.1%"
            )
        if key == "error":
            limits[key] = parse_fraction(value, f"--slo {key}", "0.1%", "0.001", allow_zero=True)
        elif key == "rss":
            limits[key] = parse_bytes(value, "--slo rss")
        else:
            limits[key] = parse_positive_duration(value, f"--slo {key}")
    if not limits:
        raise UsageError("--slo: no limit given; e.g. --slo 100ms or --slo p99=10ms,error=1%")
    return limits


def _fail_on(text: str | None, slo: dict[str, float] | None) -> list[str]:
    """``--fail-on`` words (default: ["slo"] with an SLO). Raises UsageError."""
    if text is None:
        return ["slo"] if slo else []
    words = [w.strip().lower() for w in text.split(",") if w.strip()]
    if words == ["none"]:
        return []
    bad = [w for w in words if w not in FAIL_ON_WORDS]
    if bad:
        raise UsageError(
            f"--fail-on {', '.join(bad)}: use some of {', '.join(FAIL_ON_WORDS)} "
            "(comma separated), or none"
        )
    if "slo" in words and not slo:
        raise UsageError("--fail-on slo needs an --slo to judge the steps by; e.g. --slo 100ms")
    return words


def _gate(results: Any, fail_on: list[str]) -> int:
    """1 (one ``gate:`` line on stderr) when a step is one of ``fail_on``, as ``perflab
    compare --fail-on`` gates; else 0."""
    if not fail_on:
        return 0
    from perflab.analyze.http import summarize_results
    from perflab.analyze.http_slo import slo_misses
    from perflab.report.compare_table import gate

    sweep = summarize_results(results)
    tripped = [
        s.label
        for s in sweep.steps
        if ("slo" in fail_on and slo_misses(s, sweep.slo)) or s.verdict in fail_on
    ]
    return gate(tripped, fail_on, noun="step(s)")


def _results(plan: Any, args: argparse.Namespace, slo_s: dict[str, float] | None) -> Any:
    """An empty results object with the settings and the benchmark to fill."""
    from perflab import __version__, environment, redact
    from perflab.engines.http.engine import request_label
    from perflab.model import Benchmark, Results

    config = plan.config
    settings = {k: v for k, v in config.items() if k not in ("body", "requests", "headers")}
    settings.update(
        rates=plan.rates,
        shape=plan.shape,
        connections_list=plan.connections,
        slo_s=(slo_s or {}).get("p99"),
        slo=slo_s,
        requests_file=args.requests,
        body_bytes=len(config.get("body") or b""),
        headers=redact.headers(config.get("headers", []), args.redact),
        url=redact.url(config["url"]),
    )
    name = redact.url(request_label(config, args.requests, config.get("requests")))
    return Results(
        kind="http",
        command_line=["perflab", *redact.argv(sys.argv[1:], args.redact)],
        created=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        perflab_version=__version__,
        environment=environment.fingerprint(__version__),
        settings=settings,
        benchmarks=[Benchmark(name=name, kind="http")],
    )


def _save(results: Any, outcome: Any, path: Any, rescue_on_failure: bool = True) -> dict[str, Any]:
    """Copy the outcome into the results and write the file (atomic, every step); returns
    the summaries written beside the raw data (benchmark id → ``{"steps": [...]}``), which
    the history record reuses instead of computing them again."""
    from perflab import model
    from perflab.analyze.http import summarize_results

    bench = _fill(results, outcome)
    steps = summarize_results(results).steps
    summaries = {bench.id: {"steps": [s.to_dict() for s in steps]}}
    model.save(results, path, summaries, rescue_on_failure=rescue_on_failure)
    return summaries


def _fill(results: Any, outcome: Any) -> Any:
    """Copy the outcome so far into the results; returns its one benchmark."""
    bench = results.benchmarks[0]
    bench.steps = list(outcome.steps)
    results.interrupted = outcome.interrupted
    results.settings["address"] = outcome.address
    bench.stop_reason = (
        "interrupted"
        if outcome.interrupted
        else "failed"
        if outcome.target_lost or outcome.agents_lost
        else "done"
    )
    bench.error = outcome.target_lost or outcome.agents_lost
    return bench


def _step_done(results: Any, outcome: Any, path: Any, live: _Live | None, saved: Any) -> None:
    """Save the results so far (``saved``: the Deferred of the step saves; None: no save
    here, the final one follows) and show the step's line on the live display."""
    _fill(results, outcome)
    # a stream gets the whole file once, at the end
    if saved is not None and not (path.stdout or path.in_place):
        saved.run(_save, results, outcome, path, False)  # the final save rescues
    if live is not None:
        live.step_done(results, list(outcome.steps))


def _exit_code(results: Any) -> int:
    bench = results.benchmarks[0]
    # a success that came while a step drained is a success too
    succeeded = any(s.ok_responses or s.drained for s in bench.steps)
    return 1 if bench.error or not succeeded else 0


def _write_outputs(later: Any, results: Any, files_out: dict[str, Any]) -> None:
    """The --markdown / --csv files: the tables and step records ``render`` prints."""
    if not files_out:
        return
    from perflab.analyze.http import summarize_results
    from perflab.report import outputs
    from perflab.report.http_table import http_records, http_tables

    sweep = summarize_results(results)
    outputs.write(
        later,
        files_out,
        "http",
        lambda: http_tables(results, sweep),
        lambda: http_records(results, sweep),
    )


def _chart(results: Any, destination: Any) -> None:
    from perflab.analyze.http import summarize_results
    from perflab.files import save_file
    from perflab.report.http_chart import sweep_chart
    from perflab.report.memory_chart import sweep_series

    watched = sweep_series(results.benchmarks[0].steps)
    save_file(
        destination,
        lambda out: sweep_chart(
            summarize_results(results), out, watched, results.benchmarks[0].steps
        ),
        "chart",
    )
    tell(f"chart saved to {destination}")


def render(results: Any, fmt: str) -> int:
    """Print an ``http`` results file's sweep table (``perflab show``, and after a run).

    Args:
        results: a :class:`perflab.model.Results` of kind "http".
        fmt: "table", "markdown" or "csv".

    Returns:
        Exit code 0.
    """
    from perflab.analyze.http import summarize_results
    from perflab.report.http_table import print_http

    print_http(results, summarize_results(results), fmt)
    return 0


class _Live:
    """Live progress on stderr (rich): one bar per step with the rate so far, the
    errors and the p99 so far (with --agents: of the merged histograms, and the slowest
    agent); a plain line per finished step when not a terminal. ``console``: where to
    draw (default: stderr)."""

    def __init__(self, plan: Any, console: Any = None) -> None:
        from rich.progress import BarColumn, Progress, TextColumn

        from perflab.report.console import make_console

        self.duration = plan.config["duration_s"]
        self.labels = [f"{r:,.0f}/s" for r in plan.rates] or [f"{n} conn" for n in plan.connections]
        self.loads = [float(x) for x in (plan.rates or plan.connections)]
        if plan.shape:
            from perflab.model.http_timeline import shape_label

            self.labels, self.loads = [shape_label(plan.shape)], []
        self.console = console or make_console(stderr=True)
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(bar_width=20),
            TextColumn("{task.fields[status]}"),
            console=self.console,
            disable=not self.console.is_terminal,
        )
        self.tasks: dict[int, Any] = {}
        self.pending: set[int] = set()  # steps whose verdict is still to come

    def update(self, index: int, steps: int, snap: dict[str, Any]) -> None:
        """Show one engine snapshot of step ``index`` (called about every 100 ms)."""
        if index not in self.tasks:
            self._finish_previous()
            self.tasks[index] = self.progress.add_task(
                f"step {index + 1}/{steps} {self.labels[index]}",
                total=self.duration,
                status="starting",
            )
        status = (
            "warmup"
            if snap["in_warmup"]
            else (
                f"achieved {snap['achieved_rate']:,.0f}/s, {snap['failures']:,} failed, "
                f"p99 {snap['p99_us'] / 1e3:,.2f} ms"
                + (f", slowest {snap['slowest']}" if snap.get("slowest") else "")
            )
        )
        self.progress.update(self.tasks[index], completed=snap["wall_s"], status=status)

    def step_done(self, results: Any, steps: list[Any]) -> None:
        """A line and a bar's last word for the step just finished, and for a pending one
        once known: the table's verdict or "…" (:func:`perflab.analyze.http.live_steps`)."""
        from perflab.analyze.http import live_steps
        from perflab.report.http_table import PENDING, step_line

        index = len(steps) - 1
        live = live_steps(results, steps, self.loads[index + 1 :])
        for i in [index, *sorted(self.pending)]:
            summary, final = live[i]
            if i < index and not final:
                continue
            (self.pending.add if not final else self.pending.discard)(i)
            line = f"step {i + 1}/{len(self.labels)} {step_line(summary, final)}"
            self.console.print(line, markup=False, highlight=False)
            if i in self.tasks:
                verdict = summary.verdict if final else PENDING
                self.progress.update(self.tasks[i], completed=self.duration, status=verdict)

    def _finish_previous(self) -> None:
        if self.tasks:
            self.progress.update(self.tasks[max(self.tasks)], completed=self.duration)

    def __enter__(self) -> Self:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._finish_previous()
        self.progress.__exit__(*exc)


def _live(quiet: bool, plan: Any) -> Any:
    return contextlib.nullcontext(None) if quiet else _Live(plan)
