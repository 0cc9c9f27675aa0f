"""Baselines from history (last, run id, git ref) and --threshold auto."""

from __future__ import annotations

import math
import subprocess
from pathlib import Path

import numpy as np
import pytest

from perflab.errors import UsageError
from perflab.history import baseline
from perflab.history.record import fingerprint_hash
from perflab.history.store import Store
from tests.history.helpers import ENV, add, results


def test_last_skips_the_judged_run_and_runs_without_common_benchmarks(tmp_path: Path) -> None:
    with Store(tmp_path / "h.sqlite") as store:
        first = add(store, results({"a": 1e-6}, created="2026-01-01T00:00:00+00:00"))
        add(store, results({"other": 1e-6}, created="2026-01-02T00:00:00+00:00"))
        newest = add(store, results({"a": 1e-6}, created="2026-01-03T00:00:00+00:00"))
        got = baseline.pick(store, "last", "run", {"g/a"}, exclude=lambda r: r.id == newest)
        assert got.run.id == first and got.label.startswith(f"history #{first} ")
        assert baseline.pick(store, f"#{newest}").run.id == newest
        with pytest.raises(UsageError, match="no run #99"):
            baseline.pick(store, "99")
        with pytest.raises(UsageError, match="sharing a benchmark"):
            baseline.pick(store, "last", "cmd", {"g/a"})


def test_a_git_ref_picks_the_newest_run_at_that_commit(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t", "-C", str(repo)]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "one"], check=True)
    subprocess.run([*git, "tag", "v1"], check=True)
    head = subprocess.run(
        [*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    monkeypatch.chdir(repo)
    with Store(tmp_path / "h.sqlite") as store:
        at_v1 = add(store, results({"a": 1e-6}), commit=head)
        add(store, results({"a": 1e-6}, created="2026-02-01T00:00:00+00:00"), commit="f" * 40)
        assert baseline.pick(store, "v1", "run", {"g/a"}).run.id == at_v1
        assert baseline.pick(store, head[:10], "run", {"g/a"}).run.id == at_v1
        with pytest.raises(UsageError, match="not 'last', a run id or a git ref"):
            baseline.pick(store, "no-such-branch")


def test_auto_threshold_follows_the_run_to_run_spread(tmp_path: Path) -> None:
    def threshold(spread: float, runs: int) -> tuple[float, str]:
        rng = np.random.default_rng(1)
        with Store(tmp_path / f"h{spread}-{runs}.sqlite") as store:
            for i in range(runs):
                add(store, results({"a": 1e-6 * math.exp(rng.normal(0, spread))}, seed=i))
            return baseline.auto_threshold(store, [("g/a", "time")], fingerprint_hash(ENV))

    quiet, why = threshold(0.002, 12)
    noisy, _ = threshold(0.05, 12)
    assert quiet < 0.02 < noisy
    assert "1.96·√2·σ" in why and "1 benchmark(s)" in why
    few, why = threshold(0.05, 2)
    assert few == baseline.FALLBACK and "fewer than 3 earlier runs" in why


def test_another_fingerprint_does_not_count(tmp_path: Path) -> None:
    with Store(tmp_path / "h.sqlite") as store:
        for i in range(5):
            add(store, results({"a": 1e-6}, seed=i, cpu_model="Other CPU"))
        value, why = baseline.auto_threshold(store, [("g/a", "time")], fingerprint_hash(ENV))
    assert value == baseline.FALLBACK and "fewer than" in why


def test_fingerprint_hash_ignores_per_run_figures() -> None:
    a = {**ENV, "load_average_start": [0.1, 0.2, 0.3]}
    b = {**ENV, "load_average_start": [3.0, 2.0, 1.0]}
    assert fingerprint_hash(a) == fingerprint_hash(b)
    assert fingerprint_hash(a) != fingerprint_hash({**a, "cpu_model": "Other"})
