"""Fresh processes for pytest benchmarks (``--perflab-processes N``).

The parent pytest re-runs one test's node id in a child pytest per process, through the
harness's subprocess backend (:class:`perflab.engines.run.runner.SubprocessBackend`, plan in
the environment variable :data:`CHILD_ENV`, events on a pipe). In the child, the fixture
finds the plan and runs the worker sequence once (:func:`measure_here`) instead of
measuring in-process; its fixtures and imports are the test's own, so anything the test
sets up is set up again in every child. The process is then again the unit of
replication, as in ``perflab run``.
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
    """Call ``func`` once, untimed (an async function on a fresh event loop)."""
    from perflab.engines.run import aio

    if aio.is_async(func):
        import asyncio

        return asyncio.run(func(*args, **kwargs))
    return func(*args, **kwargs)


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
    from perflab.engines.run.runner import SubprocessBackend

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
