"""--compare-to REF: the baseline checked out into a temporary git worktree, removed after."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from perflab.engines.run import checkout
from perflab.errors import UsageError


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "benches").mkdir(parents=True)
    _git(root, "init", "-q")
    _git(root, "config", "user.email", "t@example.com")
    _git(root, "config", "user.name", "t")
    (root / "benches" / "b.py").write_text("VERSION = 1\n")
    _git(root, "add", ".")
    _git(root, "commit", "-qm", "one")
    (root / "benches" / "b.py").write_text("VERSION = 2\n")
    _git(root, "commit", "-qam", "two")
    return root


def test_a_ref_is_checked_out_beside_and_removed_after(repo: Path) -> None:
    file = repo / "benches" / "b.py"
    manager = checkout.measured_baseline("HEAD~1", file)
    assert manager is not None
    with manager as base:
        assert base.file.read_text() == "VERSION = 1\n"
        assert base.file.relative_to(base.root) == Path("benches/b.py")
        assert base.current_root == repo.resolve()
        assert base.commit == _git(repo, "rev-parse", "HEAD~1")
        assert str(base.root) in _git(repo, "worktree", "list")
        tree = base.root
    assert not tree.exists()
    assert str(tree) not in _git(repo, "worktree", "list")
    assert file.read_text() == "VERSION = 2\n"  # the user's checkout untouched
    assert _git(repo, "status", "--porcelain") == ""


def test_the_worktree_goes_even_when_the_block_is_interrupted(repo: Path) -> None:
    manager = checkout.measured_baseline("HEAD~1", repo / "benches" / "b.py")
    assert manager is not None
    with pytest.raises(KeyboardInterrupt), manager as base:
        tree = base.root
        raise KeyboardInterrupt
    assert not tree.exists() and str(tree) not in _git(repo, "worktree", "list")


def test_a_folder_is_a_baseline_and_files_and_history_are_not(repo: Path, tmp_path: Path) -> None:
    old = tmp_path / "old"
    (old / "benches").mkdir(parents=True)
    (old / "benches" / "b.py").write_text("VERSION = 0\n")
    file = repo / "benches" / "b.py"
    manager = checkout.measured_baseline(str(old), file)
    assert manager is not None
    with manager as base:
        assert base.file.read_text() == "VERSION = 0\n" and base.commit == ""
    (tmp_path / "a.json").write_text("{}")
    assert checkout.measured_baseline(str(tmp_path / "a.json"), file) is None
    assert checkout.measured_baseline("last", file) is None
    assert checkout.measured_baseline("no-such-ref", file) is None
    assert checkout.measured_baseline("--upload-pack=x", file) is None


def test_a_ref_without_the_file_says_what_to_do(repo: Path) -> None:
    (repo / "benches" / "new.py").write_text("x = 1\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "three")
    manager = checkout.measured_baseline("HEAD~2", repo / "benches" / "new.py")
    assert manager is not None
    with pytest.raises(UsageError, match="the baseline has no benches/new.py"), manager:
        pass
    assert len(_git(repo, "worktree", "list").splitlines()) == 1
