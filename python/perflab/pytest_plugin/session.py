"""The end of a pytest session with benchmarks: one results file, the same tables as
``perflab run``, and the comparison gate (``--perflab-compare`` / ``--perflab-fail-on``).

Everything a benchmark measured is kept even when the gate fails or a test failed: the
results file is written before anything is compared.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perflab.errors import UsageError
from perflab.report.notice import tell

#: what the table's header says about where the numbers came from, by mode
MODES = {
    "in-process": "in-process (repetitions in the pytest process; their CIs leave out "
    "between-process variation)",
    "fresh processes": "fresh processes (one child pytest per process, as `perflab run`'s workers)",
    "paired": "paired with the baseline (child pytests of this checkout and of the "
    "baseline's, in lock-step, as `perflab run --compare-to REF`)",
}


@dataclass
class GateOptions:
    """``--perflab-compare`` and its gate.

    Attributes:
        compare: None; "last" (the newest run recorded in the history database that
            shares a benchmark, else the newest saved pytest results in .perflab/); a
            results file; or a run id or git ref picked from the history database.
        fail_on: verdicts that fail the session, e.g. ["slower"].
        threshold: the verdicts' noise threshold (0.02 = 2%).
        max_rss_bytes: ``--perflab-max-rss``: the memory limit of each test's child
            pytests' RSS peak, bytes (None: no limit).
    """

    compare: str | None = None
    fail_on: list[str] = field(default_factory=list)
    threshold: float = 0.02
    max_rss_bytes: float | None = None


@dataclass
class SessionResults:
    """The benchmarks of one pytest session and what to do with them at its end.

    Attributes:
        settings: :class:`perflab.engines.run.runner.Settings` used.
        timer: the timer figures (:class:`perflab.engines.clocks.TimerInfo` as a dict).
        json_path: ``--perflab-json`` file, or None.
        save: ``--perflab-save``: also write ``.perflab/pytest-<time>.json``.
        gate: the comparison and its gate.
        command_line: pytest's argv.
        benchmarks: measured :class:`perflab.model.Benchmark`, in test order.
        extra_info: benchmark id → the test's ``extra_info``.
        pedantic: ids measured in pedantic mode.
        modes: benchmark id → "in-process" or "fresh processes".
        history_db: the history database saved results are recorded in
            (:func:`perflab.history.record.database`), or None: recording is off.
        verbose: pytest's ``-v``: the table's per-benchmark lists too (as ``--verbose``).
        measured: ``--perflab-compare REF``'s checkout when REF is code measured in this
            session (:class:`perflab.engines.run.checkout.Baseline`), else None.
        baseline_benchmarks: with ``measured``: the baseline's benchmarks, each measured
            paired with this session's benchmark of the same id.
        saved: the results files :meth:`finish` wrote (filled as soon as they are
            written, so a Ctrl-C during the tables can still name them).
    """

    settings: Any
    timer: dict[str, Any]
    json_path: str | None
    save: bool
    gate: GateOptions
    command_line: list[str]
    benchmarks: list[Any] = field(default_factory=list)
    extra_info: dict[str, Any] = field(default_factory=dict)
    pedantic: list[str] = field(default_factory=list)
    modes: dict[str, str] = field(default_factory=dict)
    history_db: Path | None = None
    verbose: bool = False
    measured: Any = None
    baseline_benchmarks: list[Any] = field(default_factory=list)
    saved: list[Any] = field(default_factory=list)
    started: str = field(
        default_factory=lambda: dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    )
    _kept: tuple[Any, ...] | None = field(default=None, repr=False)

    def record(self, bench: Any, info: dict[str, Any]) -> None:
        """Keep one measured benchmark (called by the fixture)."""
        self.benchmarks.append(bench)
        if info.get("extra_info"):
            self.extra_info[bench.id] = json.loads(json.dumps(info["extra_info"], default=str))
        if info.get("pedantic"):
            self.pedantic.append(bench.id)
        self.modes[bench.id] = info.get("mode", "in-process")
        if info.get("baseline") is not None:
            self.baseline_benchmarks.append(info["baseline"])

    def write(self) -> None:
        """Summarise the benchmarks and write the results files, once (pytest's session
        finish calls it before any terminal summary, so a Ctrl-C or a failing plugin
        later cannot lose them); :meth:`finish` prints from what it kept.

        Raises:
            UsageError: ``--perflab-compare`` names no results file (or nothing saved yet).
            KeyboardInterrupt: a Ctrl-C while summarising, after the raw data was saved.
        """
        if self._kept is not None or not self.benchmarks:
            return
        from perflab import __version__, environment, model
        from perflab.analyze.counts import count_figures
        from perflab.analyze.run.ratios import summarize_benchmarks
        from perflab.files import Deferred, results_destination

        baseline_name, baseline = self._baseline()
        results = self._results(__version__, environment)
        if self.measured is not None:  # measured now, paired: recorded in the results file
            from perflab.engines.run.baseline import baseline_results

            baseline_name, baseline = baseline_results(
                self.measured, self.baseline_benchmarks, results
            )
        interrupted = False
        try:
            counts = count_figures(results.benchmarks) if self.settings.count else []
            grouped = (
                {}
                if self.settings.count
                else summarize_benchmarks(results.benchmarks, precision=self.settings.precision)
            )
            summaries = {s.id: s.to_dict() for group in grouped.values() for s in group}
            summaries.update({bench_id: s.to_dict() for bench_id, s in counts})
        except KeyboardInterrupt:  # Ctrl-C while summarising: the raw data is still saved
            interrupted, summaries = True, {}  # (summaries are recomputed on load)
        later = Deferred()
        saved = []
        for text in ([self.json_path] if self.json_path else []) + ([None] if self.save else []):
            destination = results_destination(text, "pytest")
            later.run(model.save, results, destination, summaries)
            saved.append(destination)
        if saved and later.error is None and self.history_db is not None:
            from perflab.history import record

            record.record_results(self.history_db, [], results, summaries, saved[0])
        self.saved = [] if later.error is not None else saved
        self._kept = (results, baseline_name, baseline, counts, grouped, later)
        if interrupted:
            raise KeyboardInterrupt

    def finish(self) -> int:
        """Save (:meth:`write`, unless done), print the tables and the comparison; the exit
        status the gate asks for (1 when it tripped, else 0). Prints on stdout; ``error:``
        lines on stderr.

        Raises:
            UsageError: as :meth:`write`.
        """
        if not self.benchmarks:
            return 0
        from perflab.analyze.run.groups import run_groups
        from perflab.report.count_table import print_counts
        from perflab.report.escape import terminal
        from perflab.report.run_output import in_process_ids, print_run

        self.write()
        assert self._kept is not None
        results, baseline_name, baseline, counts, grouped, later = self._kept
        print()
        for mode, words in MODES.items():
            ids = [i for i, m in self.modes.items() if m == mode]
            if ids:
                which = ", ".join(ids) if len(ids) < len(self.modes) else "all"
                print(
                    terminal(
                        f"perflab: {len(ids)} benchmark(s) measured {words}: {which}", one_line=True
                    )
                )
        if self.settings.count:
            print_counts(counts, results.benchmarks, "table")
        else:
            print_run(
                run_groups(results.benchmarks, grouped),
                "table",
                verbose=self.verbose,
                in_process=in_process_ids(results.settings),
            )
        later.raise_()
        for destination in self.saved:
            tell(f"perflab: results saved to {destination}")
        limit = self._rss_gate(results.benchmarks)
        if baseline is None:
            return limit
        return max(limit, self._compare_gate(baseline_name, baseline, results))

    def _rss_gate(self, benchmarks: list[Any]) -> int:
        """``--perflab-max-rss``: 1 when a test's highest child RSS peak
        (:func:`perflab.analyze.memory.peak_rss_bytes`) is above the limit; the tests
        measured in the pytest process (pedantic ones) have none and are named on
        stderr."""
        if self.gate.max_rss_bytes is None:
            return 0
        from perflab.analyze.memory import peak_rss_bytes
        from perflab.report.compare_table import rss_gate
        from perflab.report.escape import terminal

        peaks = [(b.label, peak_rss_bytes(b)) for b in benchmarks]
        unread = [label for label, peak in peaks if peak is None]
        if unread:
            tell(
                terminal(
                    "perflab: --perflab-max-rss: no RSS reading of its own for "
                    + ", ".join(unread[:5])
                    + (f" and {len(unread) - 5} more" if len(unread) > 5 else "")
                    + " (measured in the pytest process): not gated",
                    one_line=True,
                )
            )
        return rss_gate(peaks, self.gate.max_rss_bytes, "test(s)", "--perflab-max-rss")

    def _compare_gate(self, baseline_name: str, baseline: Any, results: Any) -> int:
        """``--perflab-compare``: print the comparison; the ``--perflab-fail-on`` gate's
        exit code."""
        from perflab.analyze.compare.suite import compare_results
        from perflab.report.compare_table import gate, print_comparison

        name, fail_on = str(baseline_name), self.gate.fail_on
        suite = compare_results(
            baseline,
            results,
            self.gate.threshold,
            names=(name, "this run"),
            paired=self.measured is not None,
        )
        tripped = print_comparison(suite, name, "this run", "table", None, fail_on)
        return gate(tripped, fail_on, held=suite.held_reason(fail_on))

    def _results(self, version: str, environment: Any) -> Any:
        """The :class:`perflab.model.Results` of this session (kind ``run``)."""
        from perflab.model import Results

        env = environment.fingerprint(version)
        environment.finish(env)
        return Results(
            kind="run",
            command_line=self.command_line,
            created=self.started,
            perflab_version=version,
            environment=env,
            settings={
                **self.settings.to_dict(),
                "timer": self.timer,
                "mode": "pytest",
                "modes": self.modes,
                "pedantic": self.pedantic,
                "extra_info": self.extra_info,
            },
            benchmarks=list(self.benchmarks),
        )

    def _baseline(self) -> tuple[str, Any]:
        """(name for the table, :class:`perflab.model.Results`) of what ``--perflab-compare``
        names, or ("", None) without it.

        A path that exists is a results file (perflab's or a peer's); otherwise the spec is
        picked from the history database as ``perflab compare --to`` does ("last", a run
        id, a git ref: that commit's newest recorded run sharing a benchmark with this
        session); "last" falls back to the newest ``.perflab/pytest-*.json``.

        Raises:
            UsageError / ResultsFileError: nothing matches, or the file isn't results.
        """
        from perflab import model
        from perflab.history.baseline import baseline_for

        spec = self.gate.compare
        if spec is None or self.measured is not None:
            return "", None
        if Path(spec).is_file():
            return spec, model.load(spec)
        if spec.endswith(".json"):
            raise UsageError(
                f"--perflab-compare {spec}: no such results file; pass a file "
                "written by --perflab-json or --perflab-save, or 'last'"
            )
        db = self.history_db
        if db is not None and db.is_file():
            try:
                return baseline_for(db, spec, "run", {bench.id for bench in self.benchmarks})
            except UsageError as exc:
                if spec != "last":
                    raise UsageError(str(exc).replace("--to ", "--perflab-compare ")) from None
        elif spec != "last":
            raise UsageError(
                f"--perflab-compare {spec}: no such file, and no history "
                "database to pick a run id or git ref from (saved results are "
                "recorded there: run once with --perflab-save)"
            )
        saved = sorted(Path(".perflab").glob("pytest-*.json"))
        if not saved:
            raise UsageError(
                "--perflab-compare=last: nothing recorded in the history "
                "database and no saved results in .perflab/ yet; run once "
                "with --perflab-save first"
            )
        return str(saved[-1]), model.load(saved[-1])
