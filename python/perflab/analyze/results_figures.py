"""The figures of one results file, computed once for every report that shows it.

``perflab show`` and the HTML page (``perflab report``) render a saved results file
with the tables its command printed. Everything those tables and charts show that is
not in the file itself (summaries, ratios, verdicts, the spawn overhead's percentiles,
the memory table's figures, each step's verdict and each agent's share) is computed
here, from the raw data and the settings the file recorded, with the functions and
seeds the measuring command used; :mod:`perflab.report` only renders the result
(docs/architecture.md, "Layers").
"""

from __future__ import annotations

from dataclasses import dataclass, field

from perflab.analyze.cmd import CommandSummary, SpawnOverhead
from perflab.analyze.counts import CountSummary, count_figures
from perflab.analyze.http import Sweep
from perflab.analyze.memory import MemorySummary
from perflab.analyze.profile import ProfileFigures, profiled
from perflab.analyze.run.groups import GroupFigures
from perflab.analyze.run.summary import Summary
from perflab.analyze.slow_calls import SlowCalls, slow_calls
from perflab.model import Results


@dataclass
class ResultsFigures:
    """What the tables and charts of one results file show, by its kind (the fields of
    the other kinds stay empty).

    Attributes:
        grouped: ``run``: each group's benchmark summaries, by group name.
        groups: ``run``: each group's table figures (staged and threads rows included).
        memory: ``run --memory``: one memory summary per benchmark with readings.
        threshold: ``run``: the noise threshold of the in-run verdicts (None: other kinds).
        commands: ``cmd``: one summary per command, in the file's order.
        spawn_overhead: ``cmd``: the empty process's wall time (None: not measured).
        sweep: ``http``: each step's figures and verdict, the capacity, the agents' shares.
        counts: ``--count instructions`` (run, cmd): (id, count summary) per counted
            benchmark (:func:`perflab.analyze.counts.count_figures`).
        profiles: ``--profile`` (run, cmd): (label, profile figures) per profiled
            benchmark (:func:`perflab.analyze.profile.profiled`).
        slow: ``run``: each timed benchmark's slowest samples explained
            (:func:`perflab.analyze.slow_calls.slow_calls`).
    """

    grouped: dict[str, list[Summary]] = field(default_factory=dict)
    groups: list[GroupFigures] = field(default_factory=list)
    memory: list[MemorySummary] = field(default_factory=list)
    threshold: float | None = None
    commands: list[CommandSummary] = field(default_factory=list)
    spawn_overhead: SpawnOverhead | None = None
    sweep: Sweep | None = None
    counts: list[tuple[str, CountSummary]] = field(default_factory=list)
    profiles: list[tuple[str, ProfileFigures]] = field(default_factory=list)
    slow: list[SlowCalls] = field(default_factory=list)


def run_figures(results: Results) -> ResultsFigures:
    """The figures of a ``run`` (or pytest) results file: summaries with the precision,
    minimum processes, threshold and N+1 limit its settings recorded, the groups' rows, and the
    ``--memory`` figures. Cost: the summaries' bootstraps (see
    :func:`perflab.analyze.run.ratios.summarize_benchmarks`)."""
    from perflab.analyze import memory
    from perflab.analyze.run.groups import run_groups
    from perflab.analyze.run.ratios import summarize_benchmarks
    from perflab.model.comparison import DEFAULT_THRESHOLD

    settings = results.settings
    threshold = settings.get("threshold", DEFAULT_THRESHOLD)
    grouped = summarize_benchmarks(
        results.benchmarks,
        precision=settings.get("precision"),
        min_processes=settings.get("min_processes"),
        threshold=threshold,
        n_plus_one=settings.get("n_plus_one"),
    )
    return ResultsFigures(
        grouped=grouped,
        groups=run_groups(results.benchmarks, grouped),
        memory=memory.summaries(results.benchmarks),
        threshold=threshold,
    )


def results_figures(results: Results) -> ResultsFigures:
    """The figures of a results file of any kind (a ``trace`` file's table needs none:
    its figures are in the file), with the profiles of ``--profile``."""
    figures = _kind_figures(results)
    figures.profiles = profiled(results.benchmarks)
    if results.kind == "run":
        figures.slow = [c for b in results.benchmarks if (c := slow_calls(b)) is not None]
    return figures


def _kind_figures(results: Results) -> ResultsFigures:
    """:func:`results_figures` of the file's kind, profiles aside."""
    if results.kind == "cmd":
        from perflab.analyze.cmd import spawn_overhead, summarize_results

        return ResultsFigures(
            commands=summarize_results(results),
            spawn_overhead=spawn_overhead(results.spawn_overhead_ns),
            counts=count_figures(results.benchmarks),
        )
    if results.kind == "run" and results.settings.get("count"):
        return ResultsFigures(counts=count_figures(results.benchmarks))
    if results.kind == "http":
        from perflab.analyze.http import summarize_results as sweep

        return ResultsFigures(sweep=sweep(results))
    if results.kind == "trace":
        return ResultsFigures()
    return run_figures(results)
