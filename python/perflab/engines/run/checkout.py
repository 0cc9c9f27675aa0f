"""The baseline's code for ``--compare-to REF``: a git ref checked out into a temporary
worktree, or a folder that holds it, and the benchmark file inside it.

``git worktree add --detach`` gives a full checkout of REF beside this one without
touching the user's working tree, index or branches; it is removed afterwards (also
on Ctrl-C, SIGTERM or an error), and ``git worktree prune`` forgets it.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from perflab.errors import UsageError
from perflab.history import gitinfo

#: git commands get this long before perflab gives up on them, s
GIT_TIMEOUT_S = 120


@dataclass(frozen=True)
class Baseline:
    """Where the baseline's code is.

    Attributes:
        spec: what the user gave (a git ref or a folder).
        commit: the commit REF resolved to, or "" for a folder.
        root: the baseline checkout's (or folder's) top.
        file: the baseline's benchmark file (the same path under ``root`` as the
            current file under its repository's top).
        current_root: the current checkout's top (or the current folder outside git).
    """

    spec: str
    commit: str
    root: Path
    file: Path
    current_root: Path


def _git(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run git (:func:`perflab.history.gitinfo.git_process`); the completed process.

    Raises:
        UsageError: git could not run (not installed) or took over GIT_TIMEOUT_S.
    """
    done = gitinfo.git_process(args, cwd, GIT_TIMEOUT_S)
    if done is None:
        raise UsageError(
            f"--compare-to a git ref: git {' '.join(args[:2])} could not run (is git "
            f"installed?) or took over {GIT_TIMEOUT_S} s"
        )
    return done


def _folder(path: Path) -> Path:
    """``path`` itself when it is a folder, else the folder holding it."""
    path = path.resolve()
    return path if path.is_dir() else path.parent


def repo_root(file: Path) -> Path | None:
    """The top of the git checkout holding ``file`` (a file or a folder), or None
    outside git."""
    done = _git(["rev-parse", "--show-toplevel"], _folder(file))
    return Path(done.stdout.strip()).resolve() if done.returncode == 0 else None


def resolve_commit(spec: str, file: Path) -> str | None:
    """The commit ``spec`` names in ``file``'s repository (``file``: a file or a folder),
    or None when it names none (or ``file`` is not in a git checkout)."""
    return gitinfo.resolve(spec, str(_folder(file)))


def _relative(file: Path, root: Path) -> Path:
    """``file``'s path under ``root``. Raises UsageError when it is not under it."""
    try:
        return file.resolve().relative_to(root)
    except ValueError:
        raise UsageError(f"{file} is not inside {root}") from None


def _baseline_file(root: Path, relative: Path, spec: str) -> Path:
    """The baseline's copy of the benchmark file (or of the pytest rootdir). Raises
    UsageError when it has none."""
    path = root / relative
    if not path.exists():
        raise UsageError(
            f"--compare-to {spec}: the baseline has no {relative} (the benchmark file "
            "is new?); give a ref or folder that has it, or a results file"
        )
    return path


@contextlib.contextmanager
def folder_baseline(folder: Path, file: Path) -> Iterator[Baseline]:
    """The baseline in ``folder`` (a copy of the project at the baseline's version): its
    benchmark file is at the current file's path relative to the current repository's
    top (or to the current folder outside git)."""
    current = repo_root(file) or Path.cwd().resolve()
    relative = _relative(file, current)
    root = folder.resolve()
    yield Baseline(str(folder), "", root, _baseline_file(root, relative, str(folder)), current)


@contextlib.contextmanager
def worktree_baseline(spec: str, commit: str, file: Path) -> Iterator[Baseline]:
    """REF checked out into a temporary ``git worktree`` (detached, at ``commit``) for the
    duration of the block; removed afterwards whatever happens (exception, Ctrl-C).

    Raises:
        UsageError: git could not create the worktree, or REF has no such file.
    """
    current = repo_root(file)
    if current is None:
        raise UsageError(f"--compare-to {spec}: {file} is not in a git checkout")
    relative = _relative(file, current)
    temp = Path(tempfile.mkdtemp(prefix="perflab-baseline-"))
    tree = temp / "baseline"
    try:
        done = _git(["worktree", "add", "--detach", "--force", str(tree), commit], current)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
            raise UsageError(f"--compare-to {spec}: git could not check it out: {last}")
        yield Baseline(spec, commit, tree, _baseline_file(tree, relative, spec), current)
    finally:
        remove_worktree(current, tree)
        shutil.rmtree(temp, ignore_errors=True)


def remove_worktree(repo: Path, tree: Path) -> None:
    """Remove the worktree at ``tree`` and forget it in ``repo``; never raises (a
    leftover is pruned by the next ``git worktree prune``)."""
    with contextlib.suppress(UsageError, OSError):
        _git(["worktree", "remove", "--force", str(tree)], repo)
    shutil.rmtree(tree, ignore_errors=True)
    with contextlib.suppress(UsageError, OSError):
        _git(["worktree", "prune"], repo)


def measured_baseline(spec: str, file: Path) -> contextlib.AbstractContextManager[Baseline] | None:
    """The baseline ``--compare-to SPEC`` names when it is code to measure now: a folder,
    or a git ref of ``file``'s repository; None when SPEC is neither (a results file, or
    a run from history). ``file``: the benchmark file (``perflab run``), or a folder
    (the pytest plugin's rootdir), whose counterpart in the baseline is ``Baseline.file``."""
    path = Path(spec)
    if path.is_dir():
        return folder_baseline(path, file)
    if path.exists() or spec.endswith(".json") or spec == "last":
        return None
    commit = resolve_commit(spec, file)
    return worktree_baseline(spec, commit, file) if commit else None
