"""Paired verdicts through the real entry point: a group's baseline, ``--compare-to REF``
(a scratch git repository), lock-step, and the gate's messages. Behaviour only: the
code compared differs 20-fold or not at all, and budgets are small."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from perflab.model.versions import SCHEMA_VERSION

FAST = [
    "--budget",
    "2s",
    "--min-processes",
    "3",
    "--max-processes",
    "3",
    "--process-time",
    "20ms",
    "--quiet",
    "--no-alloc",
    "--no-history",
]
MOD = """
def f():
    return sum(range({f_n}))


def g():
    return sum(range(2000))
"""
BENCH = "import perflab\nfrom mod import f, g\n\nperflab.bench(f)\nperflab.bench(g)\n"


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def _repo(tmp_path: Path) -> Path:
    """A repository whose last commit made f() 20× slower and left g() alone."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "t@example.com")
    _git(repo, "config", "user.name", "t")
    (repo / "bench.py").write_text(BENCH)
    (repo / "mod.py").write_text(MOD.format(f_n=2000))
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "one")
    (repo / "mod.py").write_text(MOD.format(f_n=40000))
    _git(repo, "commit", "-qam", "f slower")
    return repo


def _compare_to(perflab_cli: Any, repo: Path, out: Path, *argv: str) -> Any:
    """``perflab run bench.py --compare-to HEAD~1`` in ``repo``, small budgets."""
    return perflab_cli(
        "run", "bench.py", *FAST, "--json", str(out), "--compare-to", "HEAD~1", *argv, cwd=repo
    )


def test_a_group_baseline_verdict_is_paired(tmp_path: Path, perflab_cli: Any) -> None:
    bench = tmp_path / "bench.py"
    bench.write_text(
        "import perflab\n"
        "@perflab.bench(group='g', baseline=True)\n"
        "def small():\n    return sum(range(2000))\n"
        "@perflab.bench(group='g')\n"
        "def busy():\n    return sum(range(40000))\n"
    )
    out = tmp_path / "r.json"
    done = perflab_cli("run", str(bench), *FAST, "--json", str(out), "--fail-on", "slower")
    assert done.returncode == 1, done.stderr
    assert "gate: --fail-on slower tripped by 1 benchmark(s): g/busy" in done.stderr
    assert "× baseline: paired" in " ".join(done.stdout.split())
    data = json.loads(out.read_text())
    assert data["schema_version"] == SCHEMA_VERSION
    small, busy = data["benchmarks"]
    assert busy["summary"]["verdict"] == "slower" and busy["summary"]["baseline_pairs"] > 0
    assert [p["pair"]["side"] for p in busy["processes"]] == ["b"] * 3
    assert [p["index"] for p in small["processes"]] == [p["index"] for p in busy["processes"]]
    unpaired = perflab_cli("run", str(bench), *FAST, "--json", str(out), "--pairing", "off")
    assert unpaired.returncode == 0, unpaired.stderr
    assert "measured apart (not paired)" in " ".join(unpaired.stdout.split())
    assert json.loads(out.read_text())["benchmarks"][1]["summary"]["baseline_pairs"] == 0


def test_compare_to_a_git_ref_measures_the_baseline_now(tmp_path: Path, perflab_cli: Any) -> None:
    repo = _repo(tmp_path)
    out = tmp_path / "r.json"
    done = _compare_to(perflab_cli, repo, out, "--fail-on", "slower", "--format", "markdown")
    assert done.returncode == 1, done.stderr
    assert "gate: --fail-on slower tripped by 1 benchmark(s): f" in done.stderr
    text = " ".join(done.stdout.split())
    assert "B/A paired: A (HEAD~1" in text
    rows = {
        line.split("|")[1].strip(): line
        for line in done.stdout.splitlines()
        if line.startswith("| f ") or line.startswith("| g ")
    }
    assert "| slower |" in rows["f"] and "slower" not in rows["g"]
    data = json.loads(out.read_text())
    assert data["baseline"]["spec"] == "HEAD~1" and data["baseline"]["file"] == "bench.py"
    assert data["baseline"]["commit"] == _git(repo, "rev-parse", "HEAD~1")
    assert [b["name"] for b in data["baseline"]["benchmarks"]] == ["f", "g"]
    assert len(_git(repo, "worktree", "list").splitlines()) == 1  # the checkout is gone
    assert _git(repo, "status", "--porcelain") == ""
    shown = perflab_cli("show", str(out))
    assert shown.returncode == 0, shown.stderr


def test_compare_to_in_lockstep(tmp_path: Path, perflab_cli: Any) -> None:
    repo = _repo(tmp_path)
    out = tmp_path / "r.json"
    done = _compare_to(perflab_cli, repo, out, "--pairing", "lockstep")
    assert done.returncode == 0, done.stderr
    data = json.loads(out.read_text())
    f_now = data["benchmarks"][0]
    f_then = data["baseline"]["benchmarks"][0]
    assert {p["pair"]["mode"] for p in f_now["processes"]} == {"lockstep"}
    for now, then in zip(f_now["processes"], f_then["processes"]):
        assert now["index"] == then["index"] and now["pid"] != then["pid"]
        assert len(now["samples"]) == len(then["samples"]) > 0  # the barrier kept them in step
    assert "B/A paired" in " ".join(done.stdout.split())


def test_compare_to_a_ref_without_the_file_says_what_to_do(
    tmp_path: Path, perflab_cli: Any
) -> None:
    repo = _repo(tmp_path)
    (repo / "new.py").write_text(BENCH)
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "new")
    done = perflab_cli("run", "new.py", *FAST, "--compare-to", "HEAD~1", cwd=repo)
    assert done.returncode == 2
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .startswith("error: --compare-to HEAD~1: the baseline has no new.py")
    )
    assert len(_git(repo, "worktree", "list").splitlines()) == 1
