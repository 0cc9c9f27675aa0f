"""Fresh worker processes for ``perflab.measure(func, …, processes=N)``.

The parent pickles ``(func, args, kwargs)`` into a temporary file (a function pickles by
reference: its module and qualified name) and runs the harness's subprocess backend with
``python -m perflab.api.child`` as the worker. The child takes the parent's ``sys.path``,
imports the parent's script again under the name ``__mp_main__`` when the function lives
in ``__main__`` (as multiprocessing's spawn does, so the script's ``if __name__ ==
"__main__"`` block does not run again), unpickles the call and runs the worker sequence
once (:func:`perflab.engines.run.worker.measure_call`; with a baseline, the paired
sequence of :func:`perflab.engines.run.pair_worker.measure_sides`), events on the
plan's pipe. Each
process is then a unit of replication, as in ``perflab run``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import pickle
import sys
from collections.abc import Callable
from typing import Any

from perflab.errors import UsageError

#: set in a child while it imports the parent's script: a measure() call met there is a
#: script without the ``if __name__ == "__main__"`` guard (it would start children forever)
LOADING_ENV = "PERFLAB_API_CHILD"


class ChildBackend:
    """The harness's subprocess backend with ``python -m perflab.api.child`` as the worker:
    each plan gains the pickled call's file, the parent's ``sys.path`` and its script."""

    def __init__(self, call_path: str) -> None:
        from perflab.engines.run.backend import SubprocessBackend

        main = sys.modules.get("__main__")
        self.extra = {
            "call_file": call_path,
            "sys_path": list(sys.path),
            "main_file": os.path.abspath(main.__file__)
            if getattr(main, "__file__", None)
            else None,
        }
        self.backend = SubprocessBackend(
            [sys.executable, "-m", "perflab.api.child"], cwd=os.getcwd()
        )

    def run(self, plan: dict[str, Any], timeout_s: float, on_event: Callable[[Any], None]) -> Any:
        """One fresh child for ``plan`` (see :class:`perflab.engines.run.backend.WorkerBackend`)."""
        return self.backend.run({**plan, **self.extra}, timeout_s, on_event)


def call_file(
    func: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    folder: str,
    baseline: Callable[..., Any] | None = None,
) -> str:
    """Pickle the call (and ``baseline``, the callable a paired measurement compares it
    with, called with the same arguments) into ``folder``; return the file's path.

    Raises:
        UsageError: the function or an argument can't be re-created in another process
            (a lambda, a closure, a function defined in the REPL or a notebook, an open
            file…); the message says to use ``processes=0``.
    """
    main = sys.modules.get("__main__")
    if getattr(func, "__module__", None) == "__main__" and not getattr(main, "__file__", None):
        raise UsageError(
            f"measure(processes=…): {func.__qualname__} is defined in an "
            "interactive session, which a fresh process can't import; define it "
            "in a module or a script, or use processes=0 (in this process)"
        )
    try:
        data = pickle.dumps((func, args, kwargs, baseline))
        pickle.loads(data)  # what the child will do: fails here on a closure's stand-in
    except Exception as exc:  # noqa: BLE001 - pickle raises many types
        raise UsageError(
            f"measure(processes=…): the call can't be sent to a fresh process "
            f"({type(exc).__name__}: {exc}); pass a module-level function and "
            "picklable arguments, or use processes=0 (in this process)"
        ) from None
    path = os.path.join(folder, "call.pickle")
    with open(path, "wb") as out:
        out.write(data)
    return path


def _load_main(path: str) -> None:
    """Import the parent's script as ``__mp_main__`` and alias it as ``__main__``."""
    spec = importlib.util.spec_from_file_location("__mp_main__", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["__mp_main__"] = sys.modules["__main__"] = module
    spec.loader.exec_module(module)


def _call(
    plan: dict[str, Any],
) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any], Callable[..., Any] | None]:
    """Re-create the parent's call: (func, args, kwargs, baseline or None)."""
    sys.path[:] = plan["sys_path"]
    if plan.get("main_file"):
        os.environ[LOADING_ENV] = "1"
        _load_main(plan["main_file"])
        del os.environ[LOADING_ENV]
    with open(plan["call_file"], "rb") as source:
        return pickle.load(source)  # our own file, written by the parent


def _measure(plan: dict[str, Any], emit: Any) -> None:
    """Re-create the parent's call and run the worker sequence once (the paired one,
    :func:`perflab.engines.run.pair_worker.measure_sides`, for a plan with ``pair``: the
    baseline is side A, the function side B)."""
    from perflab.engines.run.pair_worker import Side, measure_sides
    from perflab.engines.run.worker import measure_call

    func, args, kwargs, baseline = _call(plan)
    if plan.get("pair"):
        a, b = (Side(n, f, args, kwargs, []) for n, f in (("a", baseline), ("b", func)))
        measure_sides(a, b, plan, emit)
    else:
        measure_call(func, args, kwargs, plan, emit)


def _profile(plan: dict[str, Any]) -> dict[str, Any]:
    """``measure(profile=True)``: re-create the call and run it under the profile
    worker's marker (:func:`perflab.engines.run.profile_worker.profile_call`)."""
    from perflab.engines.run.profile_worker import profile_call

    func, args, kwargs, _ = _call(plan)
    return profile_call(func, args, kwargs, plan)


def profile(call_path: str, seconds: float) -> Any:
    """``measure(profile=True)``: the call of ``call_path`` (:func:`call_file`) profiled
    by py-spy in fresh processes (``python -m perflab.api.child --profile PLAN``), the
    :class:`perflab.model.profile.Profile` merged over them.

    Raises:
        UsageError: py-spy is not installed.
    """
    from perflab.engines.profiler import find_sampler
    from perflab.engines.run.profile import ProfileSettings, profile_processes

    main = sys.modules.get("__main__")
    plan = {
        "call_file": call_path,
        "sys_path": list(sys.path),
        "main_file": os.path.abspath(main.__file__) if getattr(main, "__file__", None) else None,
    }
    worker = [sys.executable, "-m", "perflab.api.child", "--profile"]
    settings = ProfileSettings(seconds=seconds)
    return profile_processes(worker, plan, settings, find_sampler(), cwd=os.getcwd())


def main() -> int:
    """Entry point of a child: read the plan on stdin, measure once, report. Exit 0, or 3
    when the benchmark (or re-creating it) raised (the ``error`` event says why). With
    ``--profile PLAN_FILE``: a profile process instead (:func:`profile`)."""
    from perflab.engines.run.worker import Emitter, reporting

    if "--profile" in sys.argv[1:]:
        from perflab.engines.run import profile_worker

        return profile_worker.main(_profile)

    plan = json.loads(sys.stdin.read())
    emit = Emitter(plan["fd"])
    return reporting(emit, lambda: _measure(plan, emit))


if __name__ == "__main__":
    sys.exit(main())
