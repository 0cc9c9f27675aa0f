"""``--compare-to REF`` measured now: the baseline's code loaded beside this run's
(:func:`load_baseline`), and its measurements kept in the results file and compared
(:func:`baseline_results`). The checkout itself is :mod:`perflab.engines.run.checkout`."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Any

from perflab.engines.run.checkout import Baseline, measured_baseline
from perflab.engines.run.pair_worker import load_isolated
from perflab.engines.run.pairs import BaselineCode
from perflab.engines.run.suite import expand
from perflab.errors import BenchFileError


def load_baseline(
    spec: str, file: str, case_ids: set[str], stack: contextlib.ExitStack
) -> tuple[Baseline, BaselineCode] | None:
    """The baseline's checkout of ``spec`` (a git ref or a folder), entered on ``stack``
    (removed when it closes), and its cases whose ids are in ``case_ids``, loaded as their
    own module tree (:func:`perflab.engines.run.pair_worker.load_isolated`).

    Args:
        spec: the ``--compare-to`` value.
        file: this run's benchmark file (its path in the repository names the baseline's).
        case_ids: ids of this run's cases.
        stack: where the checkout's context is entered.

    Returns:
        (the :class:`perflab.engines.run.checkout.Baseline`, the runner's
        :class:`perflab.engines.run.pairs.BaselineCode`), or None when ``spec`` is a
        results file or a run from history.

    Raises:
        UsageError / BenchFileError: no checkout, or the baseline's file fails to load.
    """
    manager = measured_baseline(spec, Path(file))
    if manager is None:
        return None
    base = stack.enter_context(manager)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            loaded = load_isolated(str(base.file), str(base.root), str(base.current_root), False)
            base_cases = [c for c in expand(loaded) if c.id in case_ids]
    except BenchFileError as exc:
        raise BenchFileError(f"the baseline (--compare-to {spec}): {exc}") from None
    code = BaselineCode(str(base.file), str(base.root), str(base.current_root), base_cases)
    return base, code


def baseline_results(base: Baseline, benches: list[Any], results: Any) -> tuple[str, Any]:
    """After a run with a measured baseline: record it in ``results`` (``baseline``: the
    spec, commit, file and ``benches``, the baseline's :class:`perflab.model.Benchmark`
    records) and return (its name for the tables, a Results of its benchmarks to compare
    with, paired: ``compare_results(..., paired=True)``)."""
    from perflab.model import Results

    relative = str(base.file.relative_to(base.root))
    results.baseline = {
        "spec": base.spec,
        "commit": base.commit,
        "file": relative,
        "benchmarks": benches,
    }
    name = f"{base.spec} ({base.commit[:10]})" if base.commit else base.spec
    return name, Results(
        kind="run",
        command_line=results.command_line,
        created=results.created,
        perflab_version=results.perflab_version,
        environment=results.environment,
        settings=results.settings,
        benchmarks=benches,
    )
