"""Baselines from history (``compare --to``, ``run --compare-to``) and ``--threshold auto``.

A baseline is named by ``last`` (the newest recorded run of the same kind that
shares a benchmark with the new results), a run id (``12`` or ``#12``), or a git
ref (a branch, tag, ``HEAD~3`` or commit id: the newest run recorded at that
commit).

``--threshold auto`` sets the noise threshold t from the run-to-run variance of
the same benchmarks on the same fingerprint: for each benchmark with at least
:data:`MIN_RUNS` earlier runs, σ is estimated from the successive differences
of the log medians as 1.4826·median|Δ log m| / √2 (the MAD of differences is
robust to a real step in the history, which moves one difference only; von
Neumann et al. 1941 use successive differences for the same reason); the
suite's σ is the median of the per-benchmark σ, and t = 1.96·√2·σ: the band
that 95% of the differences between two runs of unchanged code fall within,
clamped to [:data:`MIN_AUTO`, :data:`MAX_AUTO`].
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from perflab.errors import UsageError
from perflab.history.store import Store
from perflab.model.history import RunInfo

#: Earlier runs of a benchmark on one fingerprint needed to estimate its run-to-run σ.
MIN_RUNS = 3
#: Bounds of the automatic threshold (fractions).
MIN_AUTO, MAX_AUTO = 0.005, 0.5
#: The threshold used when too few runs are recorded.
FALLBACK = 0.02
#: Kinds of runs that hold benchmarks (doctor reports don't).
MEASURED_KINDS = ("run", "cmd", "http")


@dataclass(frozen=True)
class Baseline:
    """A run picked from history.

    Attributes:
        run: the run.
        results: its results, loaded and checked like a file.
        label: how reports name it, e.g. "history #12 (a1b2c3d4, main)".
    """

    run: RunInfo
    results: Any
    label: str


def label(run: RunInfo) -> str:
    """ "history #12 (a1b2c3d4 main, dirty)": how a recorded run is named in tables."""
    parts = []
    if run.git_commit:
        parts.append(
            run.git_commit[:8]
            + (f" {run.git_branch}" if run.git_branch else "")
            + (", dirty" if run.git_dirty else "")
        )
    parts.append(run.created)
    return f"history #{run.id} ({'; '.join(parts)})"


def load_run(store: Store, run: RunInfo) -> Baseline:
    """Load a recorded run's results from the database.

    Raises:
        ResultsFileError: the stored document no longer passes the checks (damaged).
    """
    from perflab import model

    name = label(run)
    return Baseline(run, model.load_bytes(store.document(run.id), name), name)


def _run_id(spec: str) -> int | None:
    text = spec[1:] if spec.startswith("#") else spec
    return int(text) if text.isdigit() else None


def pick(
    store: Store,
    spec: str,
    kind: str | None = None,
    bench_ids: set[str] | None = None,
    exclude: Callable[[RunInfo], bool] | None = None,
) -> Baseline:
    """The baseline named by ``spec``.

    Args:
        store: the history database.
        spec: "last", a run id ("12", "#12") or a git ref.
        kind: only runs of this kind ("run", "cmd", "http"); None: any measured kind.
        bench_ids: for "last" and git refs: the run must share one of these benchmark ids.
        exclude: runs that can't be the baseline: the run being judged itself (the
            newest run, or the run that recorded the file being judged).

    Raises:
        UsageError: nothing matches; the message says what is recorded.
    """
    run_id = _run_id(spec)
    if run_id is not None:
        run = store.run(run_id)
        if run is None:
            raise UsageError(
                f"--to {spec}: no run #{run_id} in history {store.path}; "
                "perflab history lists the recorded runs"
            )
        return load_run(store, run)
    commit = None
    if spec != "last":
        from perflab.history import gitinfo

        commit = gitinfo.resolve(spec) or (
            spec if len(spec) >= 4 and all(c in "0123456789abcdef" for c in spec.lower()) else None
        )
        if commit is None:
            raise UsageError(
                f"--to {spec}: not 'last', a run id or a git ref of this "
                "repository; e.g. --to last, --to 12, --to main"
            )
    for run in store.runs(kind=kind, commit=commit):
        if run.kind not in MEASURED_KINDS or (exclude is not None and exclude(run)):
            continue
        if bench_ids is not None and not shares(store.rows(run.id), bench_ids):
            continue
        return load_run(store, run)
    what = "the newest run" if commit is None else f"a run at commit {commit[:12]}"
    raise UsageError(
        f"--to {spec}: history {store.path} has no {what}"
        + (f" of kind {kind}" if kind else "")
        + " sharing a benchmark with the "
        "new results; record one first (perflab run/cmd/http record it)"
    )


def shares(rows: list[Any], bench_ids: set[str]) -> bool:
    """True when a run's summary rows include one of the benchmark ids (an HTTP row is
    named "<id> <step label>")."""
    return any(
        r.bench in bench_ids
        or (r.unit != "s" or r.metric != "time")
        and any(r.bench.startswith(b + " ") for b in bench_ids)
        for r in rows
    )


def auto_threshold(
    store: Store, keys: list[tuple[str, str]], fingerprint: str, before: int | None = None
) -> tuple[float, str]:
    """The noise threshold from the recorded run-to-run variance (see the module doc).

    Args:
        store: the history database.
        keys: (benchmark, metric) of the rows being compared: ("id", "time") for python
            and commands, ("id step", "p50") for HTTP steps (see :mod:`.rows`).
        fingerprint: the fingerprint hash of the new results: only runs on it count.
        before: only runs with a smaller id count (None: all).

    Returns:
        (threshold as a fraction, one plain-words sentence saying which and why).
    """
    sigmas = []
    for bench, metric in keys:
        points = store.trend(bench, metric, fingerprint, before)
        values = [
            p.row.value
            for p in points
            if not p.row.failed and p.row.value > 0 and math.isfinite(p.row.value)
        ]
        if len(values) >= MIN_RUNS:
            sigmas.append(run_to_run_sigma(np.log(values)))
    if not sigmas:
        return FALLBACK, (
            f"threshold auto: fewer than {MIN_RUNS} earlier runs of these "
            f"benchmarks on this fingerprint ({fingerprint[:8]}) in history, "
            f"so the default ±{FALLBACK:.1%} was used"
        )
    sigma = float(np.median(sigmas))
    threshold = min(MAX_AUTO, max(MIN_AUTO, 1.96 * math.sqrt(2) * sigma))
    return threshold, (
        f"threshold auto: ±{threshold:.1%} = 1.96·√2·σ, σ = {sigma:.2%} "
        f"run-to-run spread of the median, from {len(sigmas)} benchmark(s) with ≥ "
        f"{MIN_RUNS} earlier runs on this fingerprint ({fingerprint[:8]}); "
        f"bounded to [{MIN_AUTO:.1%}, {MAX_AUTO:.0%}]"
    )


def run_to_run_sigma(log_values: np.ndarray) -> float:
    """σ of one run's log median, from a history of log medians (shape (n,), n ≥ 2).

    Method: 1.4826·median(|Δ|)/√2 over successive differences Δ (robust to steps).
    """
    diffs = np.abs(np.diff(np.asarray(log_values, dtype=float)))
    return float(1.4826 * np.median(diffs) / math.sqrt(2)) if diffs.size else math.nan


@dataclass
class Sides:
    """What ``perflab compare`` compares when history is involved.

    Attributes:
        a / b: the baseline's and the new results (:class:`perflab.model.Results`).
        name_a / name_b: how the table names them (a path or :func:`label`).
        threshold: the noise threshold t (fraction).
        note: the sentence explaining an automatic threshold, or None.
    """

    a: Any
    b: Any
    name_a: str
    name_b: str
    threshold: float
    note: str | None = None


def threshold_keys(results: Any) -> list[tuple[str, str]]:
    """(benchmark, metric) keys of the history rows that match ``results``' benchmarks."""
    if results.kind != "http":
        return [(b.id, "time") for b in results.benchmarks]
    from perflab.history.rows import recompute, summary_rows

    return [
        (r.bench, r.metric) for r in summary_rows(results, recompute(results)) if r.metric == "p50"
    ]


def compare_sides(
    db: Any, to: str | None, files: list[str], threshold_text: str, format: str | None = None
) -> Sides:
    """Resolve ``perflab compare [A.json] [B.json] [--to SPEC] [--threshold auto]``.

    Args:
        db: the history database path (None when history is off).
        to: the ``--to`` spec, or None for two files.
        files: the positional files: two without ``--to``, at most one with it (the new
            results; without it, the newest recorded run is B).
        threshold_text: the ``--threshold`` value ("auto" or e.g. "2%").
        format: ``--from``: the peer format of ``files`` (None: detected); runs read
            from history are perflab's own.

    Raises:
        UsageError: a wrong number of files, history off or missing where needed,
            nothing to compare with.
        ResultsFileError: a file or stored run that isn't valid results.
    """
    from perflab import model
    from perflab.analyze.decisions import parse_threshold
    from perflab.history.record import fingerprint_hash

    auto = threshold_text.strip().lower() == "auto"
    threshold = FALLBACK if auto else parse_threshold(threshold_text)
    if to is None and len(files) != 2:
        raise UsageError(
            "give two results files (A.json B.json), or pick A from history "
            "with --to last|RUN|REF [B.json]"
        )
    if to is not None and len(files) > 1:
        raise UsageError(
            f"--to {to} picks the baseline from history: give at most one file "
            "(the new results; without one, the newest recorded run)"
        )
    if (to is not None or auto) and db is None:
        raise UsageError(
            "history is off (--no-history or PERFLAB_HISTORY=off); --to and "
            "--threshold auto need it"
        )
    if to is None and not auto:
        return Sides(model.load(files[0], format), model.load(files[1], format), *files, threshold)
    with Store(db, create=False) as store:
        b_run = None
        if to is None:
            a, b = model.load(files[0], format), model.load(files[1], format)
            name_a, name_b = files[0], files[1]
        else:
            if files:
                b, name_b = model.load(files[0], format), files[0]
                where = str(Path(files[0]).resolve())

                def judged(run: RunInfo) -> bool:  # the run that wrote this very file
                    return run.results_path == where and run.created == b.created
            else:
                newest = next((r for r in store.runs() if r.kind in MEASURED_KINDS), None)
                if newest is None:
                    raise UsageError(
                        f"history {store.path} has no measured run yet; run "
                        "perflab run/cmd/http first"
                    )
                loaded = load_run(store, newest)
                b, name_b, b_run = loaded.results, loaded.label, newest

                def judged(run: RunInfo) -> bool:
                    return run.id == newest.id

            ids = {bench.id for bench in b.benchmarks}
            base = pick(store, to, b.kind, ids, exclude=judged)
            a, name_a = base.results, base.label
        note = None
        if auto:
            threshold, note = auto_threshold(
                store,
                threshold_keys(b),
                fingerprint_hash(b.environment),
                b_run.id if b_run is not None else None,
            )
    return Sides(a, b, name_a, name_b, threshold, note)


def baseline_for(db: Any, spec: str, kind: str, bench_ids: set[str]) -> tuple[str, Any]:
    """``run --compare-to SPEC``: a results file (when SPEC exists or ends in .json), else
    a run picked from history by :func:`pick` ("last", a run id or a git ref).

    Returns:
        (name for the table, :class:`perflab.model.Results`).

    Raises:
        UsageError / ResultsFileError: as :func:`pick` and :func:`perflab.model.load`.
    """
    from perflab import model

    if Path(spec).exists() or spec.endswith(".json"):
        return spec, model.load(spec)
    if db is None:
        raise UsageError(
            f"--compare-to {spec}: no such file, and history is off "
            "(--no-history or PERFLAB_HISTORY=off) to pick it from"
        )
    with Store(db, create=False) as store:
        base = pick(store, spec, kind, bench_ids)
    return base.label, base.results


def threshold_before_run(db: Any, bench_ids: list[str], env: dict[str, Any]) -> tuple[float, str]:
    """``run --threshold auto``: :func:`auto_threshold` over the runs recorded so far on
    this environment's fingerprint; the default with a note when there is no history."""
    from perflab.history.record import fingerprint_hash

    fingerprint = fingerprint_hash(env)
    if db is None or not Path(db).exists():
        return FALLBACK, (
            f"threshold auto: no history to estimate the run-to-run spread "
            f"from, so the default ±{FALLBACK:.1%} was used"
        )
    with Store(db, create=False) as store:
        return auto_threshold(store, [(b, "time") for b in bench_ids], fingerprint)
