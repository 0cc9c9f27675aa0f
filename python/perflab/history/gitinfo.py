"""The git state of the current directory: commit, branch, dirty flag, commit time.

Read with the ``git`` command (``status --porcelain=v2 --branch`` and ``show -s``;
``rev-parse`` where that status can't be used), each call bounded by
:data:`GIT_TIMEOUT_S`; anything that fails (no git, not a repository, a timeout) gives
None fields, never an error: history is recorded without git then.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass

#: Longest a single git call may take, s (a huge repository's ``status`` is the slow one).
GIT_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class GitState:
    """Where the measured code came from.

    Attributes:
        commit: the full 40-hex commit id of HEAD, or None outside a repository.
        branch: the branch name, "HEAD" when detached, or None.
        dirty: True when tracked files differ from HEAD (untracked files are ignored),
            None when unknown.
        commit_time: the committer date of HEAD, ISO-8601 with offset, or None.
    """

    commit: str | None = None
    branch: str | None = None
    dirty: bool | None = None
    commit_time: str | None = None


def git_process(
    args: list[str], cwd: str | os.PathLike[str] | None, timeout_s: float = GIT_TIMEOUT_S
) -> subprocess.CompletedProcess[str] | None:
    """``git args`` run in ``cwd`` (text output captured, C locale, no optional locks),
    bounded by ``timeout_s``; None when git could not run or timed out."""
    try:
        return subprocess.run(
            ["git", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"},
        )
    except (OSError, subprocess.SubprocessError):
        return None


def _git(args: list[str], cwd: str | None) -> str | None:
    """The stripped stdout of ``git args`` or None on any failure."""
    done = git_process(args, cwd)
    return done.stdout.strip() if done is not None and done.returncode == 0 else None


#: ``git status`` giving HEAD's commit, the branch and the changed tracked files at once
#: (porcelain v2: ``# branch.oid``, ``# branch.head``, one line per changed file);
#: ``--no-ahead-behind``: no walk of the history to count commits against an upstream.
STATUS = ["status", "--porcelain=v2", "--branch", "--no-ahead-behind", "--untracked-files=no"]


def state(cwd: str | None = None) -> GitState:
    """The git state of the repository containing ``cwd`` (default: the current directory).

    Two git processes (every measuring command pays them, so they are few): one
    ``git status`` (:data:`STATUS`) for the commit, the branch and the dirty flag, one
    ``git show`` for the commit time. Where that status fails (outside a repository, a
    git older than 2.17), :func:`state_by_parts` asks one question per process.

    Returns:
        A :class:`GitState`; all None outside a repository or without git.
    """
    done = git_process(STATUS, cwd)
    if done is not None and "not a git repository" in done.stderr.lower():  # LC_ALL=C
        return GitState()
    if done is None or done.returncode != 0:
        return state_by_parts(cwd)
    head: dict[str, str] = {}
    dirty = False
    for line in done.stdout.splitlines():
        if line.startswith("# branch."):
            key, _, value = line.removeprefix("# branch.").partition(" ")
            head[key] = value.strip()
        elif line.strip() and not line.startswith("#"):
            dirty = True
    commit = head.get("oid")
    if not commit or commit == "(initial)":  # a repository without commits
        return GitState()
    branch = head.get("head")
    return GitState(
        commit=commit,
        branch="HEAD" if branch == "(detached)" else branch,  # as rev-parse --abbrev-ref
        dirty=dirty,
        commit_time=_git(["show", "-s", "--format=%cI", "HEAD"], cwd),
    )


def state_by_parts(cwd: str | None = None) -> GitState:
    """:func:`state` from four plumbing calls (commit, branch, status, commit time):
    the fallback where the one-call status fails, and its reference in the tests."""
    commit = _git(["rev-parse", "--verify", "-q", "HEAD"], cwd)
    if not commit:
        return GitState()
    branch = _git(["rev-parse", "--abbrev-ref", "HEAD"], cwd)
    status = _git(["status", "--porcelain", "--untracked-files=no"], cwd)
    return GitState(
        commit=commit,
        branch=branch,
        dirty=None if status is None else bool(status),
        commit_time=_git(["show", "-s", "--format=%cI", "HEAD"], cwd),
    )


def resolve(ref: str, cwd: str | None = None) -> str | None:
    """The full commit id a git ref (branch, tag, ``HEAD~2``, short id) names, or None."""
    if ref.startswith("-"):  # never let a ref be read as an option
        return None
    return _git(["rev-parse", "--verify", "-q", f"{ref}^{{commit}}"], cwd)
