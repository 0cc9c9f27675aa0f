"""The git state a history record carries, read in two git processes (issue 30: every
measuring command pays them), against the one-question-per-process reference."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from perflab.history import gitinfo

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    git(tmp_path, "init", "-q", "-b", "trunk")
    (tmp_path / "a.txt").write_text("one\n")
    git(tmp_path, "add", "a.txt")
    git(tmp_path, "commit", "-q", "-m", "first")
    return tmp_path


def calls(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The git commands run from now on (recorded, then run as usual)."""
    seen: list[list[str]] = []
    real = gitinfo.git_process

    def counting(args: list[str], cwd, timeout_s: float = gitinfo.GIT_TIMEOUT_S):  # type: ignore[no-untyped-def]
        seen.append(args)
        return real(args, cwd, timeout_s)

    monkeypatch.setattr(gitinfo, "git_process", counting)
    return seen


def test_a_clean_then_dirty_checkout(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = calls(monkeypatch)
    clean = gitinfo.state(str(repo))
    assert len(seen) == 2  # one status, one show: not four processes
    assert clean.commit == git(repo, "rev-parse", "HEAD") and len(clean.commit) == 40
    assert clean.branch == "trunk" and clean.dirty is False
    assert clean.commit_time == git(repo, "show", "-s", "--format=%cI", "HEAD")
    assert clean == gitinfo.state_by_parts(str(repo))
    (repo / "a.txt").write_text("two\n")
    (repo / "untracked.txt").write_text("ignored, as before\n")
    dirty = gitinfo.state(str(repo))
    assert dirty.dirty is True and dirty == gitinfo.state_by_parts(str(repo))


def test_untracked_files_alone_are_not_dirty(repo: Path) -> None:
    (repo / "new.txt").write_text("x\n")
    assert gitinfo.state(str(repo)).dirty is False


def test_a_detached_head_is_named_head(repo: Path) -> None:
    git(repo, "checkout", "-q", "--detach")
    got = gitinfo.state(str(repo))
    assert got.branch == "HEAD" and got == gitinfo.state_by_parts(str(repo))


def test_a_repository_without_commits_and_no_repository(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    assert gitinfo.state(str(empty)) == gitinfo.GitState() == gitinfo.state_by_parts(str(empty))
    plain = tmp_path / "plain"
    plain.mkdir()
    # a folder outside any repository (GIT_CEILING_DIRECTORIES keeps git from the parents)
    monkey = pytest.MonkeyPatch()
    monkey.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    try:
        assert gitinfo.state(str(plain)) == gitinfo.GitState()
    finally:
        monkey.undo()


def test_a_failing_status_falls_back_to_one_question_per_process(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = gitinfo.git_process

    def old_git(args: list[str], cwd, timeout_s: float = gitinfo.GIT_TIMEOUT_S):  # type: ignore[no-untyped-def]
        if args == gitinfo.STATUS:  # as a git older than 2.17 answers --no-ahead-behind
            return subprocess.CompletedProcess(args, 129, "", "error: unknown option\n")
        return real(args, cwd, timeout_s)

    monkeypatch.setattr(gitinfo, "git_process", old_git)
    got = gitinfo.state(str(repo))
    assert got.branch == "trunk" and got.dirty is False and got.commit
