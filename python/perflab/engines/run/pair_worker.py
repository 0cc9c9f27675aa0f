"""The paired worker: one fresh process measuring two cases, A and B, side by side.

Started by :mod:`perflab.engines.run.runner` as ``python -m perflab.engines.run.pair_worker``
for every comparison a verdict is drawn from (a group's baseline A against a case B
with the same parameters; ``--compare-to REF``'s baseline A against this checkout's B).
It runs the worker's sequence (:mod:`perflab.engines.run.worker`) for both cases, then
times them alternately, pair after pair, in a randomized balanced order
(:func:`perflab.engines.run.pairing.sample_alternating`), so each pair meets the machine in
one speed state and :mod:`perflab.analyze.paired` can cancel it.

Events are the worker's, with ``side`` ("a" or "b") on those of one case; ``start``,
``reference`` and ``done`` belong to both.

A and B from two checkouts (``--compare-to REF``): the baseline file is imported first,
with every ``sys.path`` folder inside this checkout (``b_root``) redirected to the same
folder of the baseline's (``a_root``); the modules it brought in from there are then
taken out of ``sys.modules`` (its functions keep them alive), and this checkout's file
is imported as usual: two distinct module trees in one process. When the baseline's
tree loaded a compiled extension module (which one process cannot hold twice), or
imported anything from this checkout instead of its own, the worker reports a
``side by side`` error and the runner measures the pair in two processes in lock-step.
"""

from __future__ import annotations

import functools
import gc
import importlib.machinery
import os
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from perflab.engines.layout import heap_padding
from perflab.engines.run import aio, pairing, sampling
from perflab.engines.run.counters import SampleCounters
from perflab.engines.run.empty import empty_like
from perflab.engines.run.sampling import GcMonitor, allocations, emit_done, steal_ns
from perflab.engines.run.worker import (
    _HEAP_PADDING,
    Emitter,
    PhaseError,
    Reference,
    _phase,
    balance,
    calibrate,
    loop_overhead,
    reporting,
    time_loop,
    warmup,
)

#: the phase of the error that sends a pair to two processes in lock-step
SIDE_BY_SIDE = "side by side"


class Side:
    """One case of the pair, loaded and bound: what its samples call."""

    def __init__(
        self,
        name: str,
        func: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        metrics: list[Any],
    ) -> None:
        self.name, self.func, self.args, self.kwargs, self.metrics = (
            name,
            func,
            args,
            kwargs,
            metrics,
        )
        self.empty: Callable[..., Any] | None = None
        self.iterations = 0

    @property
    def call(self) -> Callable[[], Any]:
        """The zero-argument call a sample times."""
        f = self.func
        return functools.partial(f, *self.args, **self.kwargs) if (self.args or self.kwargs) else f


def load_isolated(file: str, root: str, other_root: str, strict: bool = True) -> Any:
    """Import ``file`` of the checkout at ``root`` as its own module tree, beside the
    checkout at ``other_root`` (see the module docstring): while it is imported, every
    ``sys.path`` folder inside ``other_root`` points to the same folder of ``root`` and
    the modules already imported from ``other_root`` are out of the import table (they
    come back after); the modules it imported from ``root`` then leave the table (its
    functions keep them alive), so the other checkout's file imports its own.

    Returns:
        The file's :class:`perflab.engines.run.suite.BenchFile`.

    Raises:
        PhaseError: with ``strict``, phase :data:`SIDE_BY_SIDE` when the two cannot
            share the process (it imported code of ``other_root``, or a compiled extension
            module of its own; without ``strict``, as when only its cases are listed, the
            file is returned all the same);
            BenchFileError when the file fails to import.
    """
    from perflab.engines.run.suite import load_file

    root, other_root = str(Path(root).resolve()), str(Path(other_root).resolve())
    saved_path = list(sys.path)
    hidden = {
        n: sys.modules.pop(n)
        for n, m in list(sys.modules.items())
        if pairing.under(getattr(m, "__file__", None), other_root)
        and not pairing.under(getattr(m, "__file__", None), root)
    }
    before = set(sys.modules)
    sys.path[:] = [pairing.redirect(p, other_root, root) for p in sys.path]
    try:
        bench_file = load_file(file)
    finally:
        sys.path[:] = saved_path
        new = {n: getattr(sys.modules[n], "__file__", None) for n in set(sys.modules) - before}
        for name, path in new.items():  # its own modules leave the import table
            if pairing.under(path, root) or name.startswith("perflab_benchfile_"):
                del sys.modules[name]
        sys.modules.update(hidden)
    leaked = sorted(
        n for n, f in new.items() if pairing.under(f, other_root) and not pairing.under(f, root)
    )
    compiled = sorted(
        n
        for n, f in new.items()
        if pairing.under(f, root)
        and f
        and f.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))
    )
    if leaked and strict:
        raise PhaseError(
            SIDE_BY_SIDE,
            ImportError(
                f"the baseline imported {', '.join(leaked[:3])} from this checkout, not its "
                "own: put the package's folder on PYTHONPATH (an editable install's import "
                "hook can't be redirected)"
            ),
        )
    if compiled and strict:
        raise PhaseError(
            SIDE_BY_SIDE, ImportError(f"compiled extension modules: {', '.join(compiled[:3])}")
        )
    return bench_file


def _load(plan: dict[str, Any]) -> tuple[Side, Side]:
    """Both sides of ``plan``, set up (untimed). Raises PhaseError / BenchFileError."""
    from perflab.engines.run.suite import call_setup, load_file

    pair = plan["pair"]
    if pair.get("a_root"):
        file_a = load_isolated(plan["file"], pair["a_root"], pair["b_root"])
        file_b = load_file(pair["file"])
    else:
        file_a = load_file(plan["file"])
        file_b = file_a if pair["file"] == plan["file"] else load_file(pair["file"])
    sides = []
    for name, bench_file, index, params in (
        ("a", file_a, plan["index"], plan["params"]),
        ("b", file_b, pair["index"], pair["params"]),
    ):
        spec = bench_file.benches[index]
        args = _phase("setup", functools.partial(call_setup, spec, params))
        sides.append(Side(name, spec.func, args, params, bench_file.metrics_for(spec)))
    return sides[0], sides[1]


def measure_pair(plan: dict[str, Any], emit: Callable[..., None]) -> None:
    """Measure the two cases of ``plan`` side by side and emit events.

    ``plan`` is the worker's (:meth:`perflab.engines.run.runner.Runner._plan`) for side A,
    plus ``pair``: B's ``file``, ``index``, ``params`` and ``iterations`` (None:
    calibrate), and with ``--compare-to REF`` the two checkouts' ``a_root`` and
    ``b_root``; ``pair_seed`` seeds the order of the pairs; ``sample_target_ns`` is the
    paired sample's duration (:data:`perflab.engines.run.pairing.PAIR_SAMPLE_NS`).

    Raises:
        PhaseError: either benchmark raised, or the two can't share the process.
    """
    steal0 = steal_ns()
    _HEAP_PADDING.extend(heap_padding(plan.get("layout", {}).get("heap_objects", 0)))
    a, b = _load(plan)
    measure_sides(a, b, plan, emit, steal0)


def measure_sides(
    a: Side, b: Side, plan: dict[str, Any], emit: Callable[..., None], steal0: int | None = None
) -> None:
    """The paired sequence over two loaded sides (first calls, calibration, warmup and
    loop overhead of each, then alternating samples, allocation passes): what
    :func:`measure_pair` runs once its files are loaded, and what ``perflab.measure(func,
    baseline=...)`` runs on two live callables (in its own process or in a fresh one).

    Args:
        a, b: the baseline's side ("a") and the measured side ("b").
        plan: as for :func:`measure_pair` (``pair`` needs only ``iterations``).
        emit: ``emit(event, **fields)``.
        steal0: CPU steal time at the start, ns (None: read it now).

    Raises:
        PhaseError: either side raised.
    """
    steal0 = steal_ns() if steal0 is None else steal0
    loop = None
    if aio.is_async(a.func) or aio.is_async(b.func):  # both run on one event loop
        loop = _phase("event loop", lambda: aio.new_loop(plan.get("event_loop", "asyncio")))
        for side in (a, b):
            if aio.is_async(side.func):
                side.func, side.empty = aio.on_loop(side.func, loop, empty_like)
    gcmon = GcMonitor()
    gc.callbacks.append(gcmon)
    try:
        _measure(a, b, plan, emit, gcmon, steal0)
    finally:
        gc.callbacks.remove(gcmon)
        if loop is not None:
            loop.close()


def _measure(
    a: Side,
    b: Side,
    plan: dict[str, Any],
    emit: Callable[..., None],
    gcmon: GcMonitor,
    steal0: int | None,
) -> None:
    """The sequence of :func:`measure_pair` once both sides are loaded."""
    emit("start", pid=os.getpid())
    for side in (a, b):
        result, cold = _first_call(side)
        metrics = {}
        for m in side.metrics:
            value = _phase(f"metric {m.name!r}", functools.partial(m.func, result))
            if value is not None:
                metrics[m.name] = float(value)
        del result
        emit("cold", ns=cold, metrics=metrics, side=side.name)
    known = {"a": plan.get("iterations"), "b": plan["pair"].get("iterations")}
    for side in (a, b):
        side.iterations = known[side.name] or _phase(
            "calibration", lambda s=side: calibrate(s.call, plan["sample_target_ns"], gcmon)
        )
    _phase("calibration", lambda: balance((a, b), plan["sample_target_ns"], gcmon))
    for side in (a, b):
        emit("calibrated", iterations=side.iterations, side=side.name)
    for side in (a, b):
        count, converged = _phase(
            "warmup", lambda s=side: warmup(s.call, s.iterations, gcmon, plan["warmup_max_s"])
        )
        emit("warmup", samples=count, converged=converged, side=side.name)
        overhead = loop_overhead(
            side.func, side.args, side.kwargs, side.iterations, gcmon, empty=side.empty
        )
        emit("overhead", ns_per_op=overhead, side=side.name)
    span = _phase("sampling", lambda: _pairs(a, b, plan, emit, gcmon))
    if plan.get("allocations", True):
        for side in (a, b):
            figures = _phase("allocation pass", lambda s=side: allocations(s.call))
            emit("alloc", **figures, side=side.name)
    emit_done(emit, steal0, span)


def _first_call(side: Side) -> tuple[Any, int]:
    """(the first call's result, its wall time ns)."""
    clock = time.perf_counter_ns
    t0 = clock()
    result = _phase("first call", side.call)
    return result, clock() - t0


def _pairs(
    a: Side, b: Side, plan: dict[str, Any], emit: Callable[..., None], gcmon: GcMonitor
) -> tuple[int | None, str | None]:
    """The paired samples; returns the clock cross-check over them (skew ns, flag)."""
    monitor = sampling.MONITOR
    monitor.ready()
    reference = Reference(emit, bool(plan.get("reference")))
    call_a, call_b = a.call, b.call

    def time_a() -> pairing.Timing:
        return reference.sampled(time_loop(call_a, a.iterations, gcmon))

    def time_b() -> pairing.Timing:
        return reference.sampled(time_loop(call_b, b.iterations, gcmon))

    limits = pairing.Limits(plan["sample_seconds"], plan["min_samples"], plan["max_samples"])
    counters = SampleCounters()  # this thread's: both sides' samples run on it
    emit("counters", **counters.event())
    pairing.sample_alternating(
        time_a,
        time_b,
        (a.iterations, b.iterations),
        random.Random(plan.get("pair_seed")),
        limits,
        emit,
        monitor,
        reference.between,
        counters,
    )
    return monitor.span()


def main() -> int:
    """Entry point: read the plan on stdin, measure, report. Exit 0, or 3 on an error."""
    import json

    plan = json.loads(sys.stdin.read())
    emit = Emitter(plan["fd"])
    return reporting(emit, lambda: measure_pair(plan, emit))


if __name__ == "__main__":
    sys.exit(main())
