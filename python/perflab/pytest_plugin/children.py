"""Fresh processes for pytest benchmarks (``--perflab-processes N``).

The parent pytest re-runs one test's node id in a child pytest per process, through the
harness's subprocess backend (:class:`perflab.engines.run.backend.SubprocessBackend`, plan in
the environment variable :data:`CHILD_ENV`, events on a pipe). In the child, the fixture
finds the plan and runs the worker sequence once (:func:`measure_here`) instead of
measuring in-process; its fixtures and imports are the test's own, so anything the test
sets up is set up again in every child. The process is then again the unit of
replication, as in ``perflab run``.

With ``--perflab-compare REF`` (a git ref or a folder), each benchmark is measured in
pairs of children (:class:`PairedChildren`): this checkout's test and the baseline
checkout's same test, in lock-step, so the gate's verdict is the paired one.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any

#: the environment variable that carries a child's plan (JSON)
CHILD_ENV = "PERFLAB_PYTEST_CHILD"
#: ``--perflab-profile``: the variable that names a profile child's plan file
PROFILE_ENV = "PERFLAB_PYTEST_PROFILE"


def child_plan() -> dict[str, Any] | None:
    """The plan when this pytest is a child measuring one test, else None."""
    text = os.environ.get(CHILD_ENV)
    return json.loads(text) if text else None


def call_once(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Call ``func`` once, untimed (:func:`perflab.engines.run.aio.call_once`)."""
    from perflab.engines.run import aio

    return aio.call_once(func, args, kwargs)


def measure_here(
    func: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    extra: dict[str, Any],
    keep: Any,
) -> None:
    """In a child: the worker sequence once, events on the plan's pipe; the plan is
    consumed so that a second benchmark in the same child can't reuse the pipe."""
    from perflab.engines.run.worker import Emitter, PhaseError, error_fields, measure_call

    plan = child_plan()
    assert plan is not None
    del os.environ[CHILD_ENV]
    emit = Emitter(plan["fd"])
    try:
        measure_call(func, args, kwargs, {**plan, **extra}, emit, [keep])
    except PhaseError as err:
        emit("error", **error_fields(err.phase, err.exc))
        raise err.exc from None


def backend(options: Any, nodeid: str) -> Any:
    """The subprocess backend that runs ``nodeid`` in a child pytest."""
    from perflab.engines.run.backend import SubprocessBackend

    argv = [*(options.child_argv or [sys.executable, "-m", "pytest"]), nodeid]
    return SubprocessBackend(argv, cwd=options.rootdir, plan_env=CHILD_ENV)


def profile_here(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """In a profile child (``--perflab-profile``): the call once for the test's value,
    then under the profile worker's marker for the plan's time
    (:func:`perflab.engines.run.profile_worker.profile_call`), its report written where
    the plan says. Returns the value."""
    from perflab.engines.run.profile_worker import profile_call

    with open(os.environ.pop(PROFILE_ENV)) as f:
        plan = json.load(f)
    value = call_once(func, args, kwargs)
    report = profile_call(func, args, kwargs, plan)
    with open(plan["report"], "w") as f:
        json.dump(report, f)
    return value


def profile(options: Any, nodeid: str) -> Any:
    """``--perflab-profile``: ``nodeid`` re-run in fresh child pytests under py-spy after
    its timing, its call profiled there (:func:`profile_here`); the merged
    :class:`perflab.model.profile.Profile`."""
    from perflab.engines.profiler import find_sampler
    from perflab.engines.run.profile import ProfileSettings, profile_processes

    argv = [*(options.child_argv or [sys.executable, "-m", "pytest"]), nodeid]
    settings = ProfileSettings(seconds=options.profile_s, event_loop=options.event_loop)
    return profile_processes(
        argv, {}, settings, find_sampler(), cwd=options.rootdir, plan_env=PROFILE_ENV
    )


def baseline_paths(current_root: str, baseline_root: str) -> list[str]:
    """The folders of this process's ``sys.path`` inside the current checkout, moved to
    the same place in the baseline's (those that exist there): a baseline child puts them
    on its PYTHONPATH, so it imports the baseline's code even where the project is
    installed in editable mode (a ``.pth`` file or finder pointing at this checkout)."""
    from perflab.engines.run.pairing import redirect, under

    out: list[str] = []
    for entry in sys.path:
        if not under(entry, current_root):
            continue
        moved = redirect(entry, current_root, baseline_root)
        if os.path.isdir(moved) and moved not in out:
            out.append(moved)
    return out


class PairedChildren:
    """The backend of a benchmark paired with ``--perflab-compare REF``: the current
    test's child pytest, or (for a plan with ``redirect``: the baseline's side, see
    :meth:`perflab.engines.run.pairs.PairedRunner._pair_plan`) the same node id in the
    baseline's checkout, run from its rootdir with its code first on the path. The two
    run in lock-step (:class:`perflab.engines.run.pairs.LockstepBackend`).

    Args:
        options: the session's :class:`perflab.pytest_plugin.fixture.BenchOptions`.
        nodeid: the test's node id (relative to the rootdir, the same in both checkouts).
        base: the :class:`perflab.engines.run.checkout.Baseline` (its ``file``: the
            baseline's rootdir).
    """

    def __init__(self, options: Any, nodeid: str, base: Any) -> None:
        from perflab.engines.run.backend import SubprocessBackend

        self.current = backend(options, nodeid)
        rootdir = str(base.file)
        argv = list(options.child_argv or [sys.executable, "-m", "pytest"])
        if "--rootdir" in argv:
            argv[argv.index("--rootdir") + 1] = rootdir
        paths = baseline_paths(str(base.current_root), str(base.root))
        self.baseline = SubprocessBackend(
            [*argv, nodeid], cwd=rootdir, plan_env=CHILD_ENV, pythonpath=paths
        )

    def run(self, plan: dict[str, Any], timeout_s: float, on_event: Callable[[dict], None]) -> Any:
        """Run one side's child pytest (see the class); its outcome."""
        side = self.baseline if plan.get("redirect") else self.current
        return side.run(plan, timeout_s, on_event)
