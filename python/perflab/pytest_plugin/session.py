"""The end of a pytest session with benchmarks: one results file, the same tables as
``perflab run``, and the comparison gate (``--perflab-compare`` / ``--perflab-fail-on``).

Everything a benchmark measured is kept even when the gate fails or a test failed: the
results file is written before anything is compared.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perflab.errors import UsageError

#: what the table's header says about where the numbers came from, by mode
MODES = {"in-process": "in-process (repetitions in the pytest process; their CIs leave out "
                       "between-process variation)",
         "fresh processes": "fresh processes (one child pytest per process, as `perflab "
                            "run`'s workers)"}


@dataclass
class GateOptions:
    """``--perflab-compare`` and its gate.

    Attributes:
        compare: None, "last" (the newest saved pytest results in .perflab/) or a path.
        fail_on: verdicts that fail the session, e.g. ["slower"].
        threshold: the verdicts' noise threshold (0.02 = 2%).
    """

    compare: str | None = None
    fail_on: list[str] = field(default_factory=list)
    threshold: float = 0.02


@dataclass
class SessionResults:
    """The benchmarks of one pytest session and what to do with them at its end.

    Attributes:
        settings: :class:`perflab.measure.runner.Settings` used.
        timer: the timer figures (:class:`perflab.measure.clocks.TimerInfo` as a dict).
        json_path: ``--perflab-json`` file, or None.
        save: ``--perflab-save``: also write ``.perflab/pytest-<time>.json``.
        gate: the comparison and its gate.
        command_line: pytest's argv.
        benchmarks: measured :class:`perflab.model.Benchmark`, in test order.
        extra_info: benchmark id → the test's ``extra_info``.
        pedantic: ids measured in pedantic mode.
        modes: benchmark id → "in-process" or "fresh processes".
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
    started: str = field(default_factory=lambda: dt.datetime.now(dt.timezone.utc)
                         .isoformat(timespec="seconds"))

    def record(self, bench: Any, info: dict[str, Any]) -> None:
        """Keep one measured benchmark (called by the fixture)."""
        self.benchmarks.append(bench)
        if info.get("extra_info"):
            self.extra_info[bench.id] = json.loads(json.dumps(info["extra_info"], default=str))
        if info.get("pedantic"):
            self.pedantic.append(bench.id)
        self.modes[bench.id] = info.get("mode", "in-process")

    def finish(self) -> int:
        """Save, print the tables and the comparison; the exit status the gate asks for
        (1 when it tripped, else 0). Prints on stdout; ``error:`` lines on stderr.

        Raises:
            UsageError: ``--perflab-compare`` names no results file (or nothing saved yet).
        """
        if not self.benchmarks:
            return 0
        from perflab import __version__, environment, model
        from perflab.analyze.groups import run_groups
        from perflab.analyze.summary import summarize_benchmarks
        from perflab.report.run_output import print_run
        from perflab.files import Deferred, results_destination
        from perflab.report.escape import terminal

        baseline_path = self._baseline_path()
        baseline = model.load(baseline_path) if baseline_path else None
        results = self._results(__version__, environment)
        grouped = summarize_benchmarks(results.benchmarks, precision=self.settings.precision)
        summaries = {s.id: s.to_dict() for group in grouped.values() for s in group}
        later = Deferred()
        saved = []
        for text in ([self.json_path] if self.json_path else []) + (
                [None] if self.save else []):
            destination = results_destination(text, "pytest")
            later.run(model.save, results, destination, summaries)
            saved.append(str(destination))
        print()
        for mode, words in MODES.items():
            ids = [i for i, m in self.modes.items() if m == mode]
            if ids:
                which = ", ".join(ids) if len(ids) < len(self.modes) else "all"
                print(terminal(f"perflab: {len(ids)} benchmark(s) measured {words}: {which}",
                               one_line=True))
        print_run(run_groups(results.benchmarks, grouped), "table")
        later.raise_()
        for path in saved:
            sys.stderr.write(f"perflab: results saved to {path}\n")
        if baseline is None:
            return 0
        from perflab.analyze.compare import compare_results
        from perflab.report.compare_table import gate, print_comparison

        name, fail_on = str(baseline_path), self.gate.fail_on
        suite = compare_results(baseline, results, self.gate.threshold, names=(name, "this run"))
        return gate(print_comparison(suite, name, "this run", "table", None, fail_on), fail_on)

    def _results(self, version: str, environment: Any) -> Any:
        """The :class:`perflab.model.Results` of this session (kind ``run``)."""
        from perflab.model import Results

        env = environment.fingerprint(version)
        environment.finish(env)
        return Results(kind="run", command_line=self.command_line, created=self.started,
                       perflab_version=version, environment=env,
                       settings={**self.settings.to_dict(), "timer": self.timer,
                                 "mode": "pytest", "modes": self.modes,
                                 "pedantic": self.pedantic,
                                 "extra_info": self.extra_info},
                       benchmarks=list(self.benchmarks))

    def _baseline_path(self) -> Path | None:
        """The results file ``--perflab-compare`` names. Raises UsageError."""
        compare = self.gate.compare
        if compare is None:
            return None
        if compare == "last":
            saved = sorted(Path(".perflab").glob("pytest-*.json"))
            if not saved:
                raise UsageError("--perflab-compare=last: no saved results in .perflab/ yet; "
                                 "run once with --perflab-save first")
            return saved[-1]
        path = Path(compare)
        if not path.is_file():
            raise UsageError(f"--perflab-compare {compare}: no such results file; pass a "
                             "file written by --perflab-json or --perflab-save, or 'last'")
        return path
