"""Synthetic history: runs built from seeded samples and recorded without timing anything."""

from __future__ import annotations

from pathlib import Path

from perflab.history import record
from perflab.history.rows import recompute, summary_rows
from perflab.history.store import Store
from perflab.model import Results
from tests.conftest import lognormal_groups, make_bench

ENV = {"hostname": "ci", "cpu_model": "Test CPU", "cpu_count": 2}


def results(
    medians: dict[str, float],
    seed: int = 0,
    created: str = "2026-01-01T00:00:00+00:00",
    **env: object,
) -> Results:
    """A run results object: one benchmark per name, with the given median time per op, s."""
    benches = [
        make_bench(name, lognormal_groups(m, 6, 20, 0.003, 0.001, seed + i), group="g")
        for i, (name, m) in enumerate(medians.items())
    ]
    return Results(
        "run",
        ["perflab", "run", "x.py"],
        created,
        "0.1.0",
        environment={**ENV, **env},
        settings={"precision": 0.01},
        benchmarks=benches,
    )


def add(
    store: Store,
    res: Results,
    commit: str | None = None,
    time: str | None = None,
    tags: list[str] | None = None,
    path: Path | None = None,
) -> int:
    """Record ``res`` as if ``perflab run`` had, at a made-up commit; return the run id."""
    summaries = recompute(res)
    made = record.make_record(
        "run", res.to_dict(summaries), summary_rows(res, summaries), tags or [], path, git=False
    )
    made.git_commit, made.git_branch, made.git_time = commit, "main" if commit else None, time
    made.git_dirty = False if commit else None
    return store.add(made)


def add_step(store: Store, name: str = "plain") -> None:
    """Record six runs of one benchmark at made-up commits 000…, 111…, …, 555…, the last
    three 30% slower (3.0 µs → 3.9 µs per op): a trend with one change point, in
    22222222..33333333."""
    for i, level in enumerate([1.0, 1.0, 1.0, 1.3, 1.3, 1.3]):
        add(
            store,
            results({name: 3e-6 * level}, seed=i),
            commit=f"{i:x}" * 40,
            time=f"2026-01-0{i + 1}T00:00:00+00:00",
        )
