"""The parent's side of a counted worker process (``--count instructions``).

:class:`perflab.engines.run.backend.SubprocessBackend` calls :func:`start` before it spawns
a worker whose plan says ``count``: a temp dir of perflab's own for Callgrind's files,
and the argv prefix that runs the worker under Callgrind with address-space
randomization off (:func:`perflab.engines.callgrind.valgrind_command`). When the worker
has ended, :func:`finish` reads the totals of its dumps and removes the dir, and
:func:`counts_record` turns them, with the worker's events, into the process's raw
:class:`perflab.model.counts.Counts`.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from perflab.engines import callgrind
from perflab.engines.callgrind_profile import instruction_stacks
from perflab.engines.layout import from_environment
from perflab.engines.run.counted_worker import ALIAS
from perflab.model.counts import Counts
from perflab.model.profile import Profile, bounded

#: the key of :func:`finish`'s result that holds the instructions per function
FUNCTIONS = "functions"
#: counted processes per benchmark by default: the layout band needs at least three
COUNT_PROCESSES = 3
#: counted samples per process by default (their median is the process's figure). Three:
#: each sample follows a full collection, so a process's samples agree to ~0.01% and a
#: median of three still sets one odd sample aside; each more sample costs a counted
#: call under Callgrind's instrumentation (≈ 0.5 s of CPU for a 10 ms call)
COUNT_SAMPLES = 3
#: counted samples of the empty callable per process (their median is the fixed cost)
EMPTY_SAMPLES = 3
#: a counted worker runs 20-100× slower than on the real CPU: its timeout is the run's
#: ``--timeout`` times this
TIMEOUT_FACTOR = 10


def fixed_layout() -> dict[str, int]:
    """The layout of a counted process without randomization (``--no-randomize``): no
    padding, no heap objects, and the hash seed fixed: the user's PYTHONHASHSEED when it
    is a number, else 0 (hash randomization off)."""
    user = os.environ.get("PYTHONHASHSEED", "")
    return {
        "env_padding_bytes": 0,
        "hash_seed": int(user) if user.isdigit() else 0,
        "heap_objects": 0,
    }


def plan_entry(
    cache_sim: bool, samples: int = COUNT_SAMPLES, profile: bool = False
) -> dict[str, Any]:
    """The ``count`` entry of a worker's plan (``dir`` is filled in by :func:`start`;
    ``profile``: :func:`finish` also reads the instructions per function)."""
    return {
        "cache_sim": cache_sim,
        "profile": profile,
        "samples": samples,
        "empty_samples": EMPTY_SAMPLES,
        "iterations": None,
        "dir": None,
    }


def worker_argv(plan: dict[str, Any]) -> list[str]:
    """The command of perflab's own worker for ``plan``: the lean counted worker
    (:mod:`perflab.engines.run.counted_worker`: little history before its samples) when
    the plan counts, else the timed worker (:mod:`perflab.engines.run.worker`)."""
    module = "counted_worker" if plan.get("count") else "worker"
    return [sys.executable, "-P", "-m", f"perflab.engines.run.{module}"]


def plan_text(plan: dict[str, Any], fd: int) -> str:
    """A worker's plan as the JSON text it reads on stdin, with ``fd`` (its event pipe)
    first, its number padded to a fixed width: the text's length does not depend on
    which descriptor the pipe got. Counted workers need it: the pipe's number depends on
    what else perflab had open (workers run at once, from threads), and one byte more of
    plan to read changes what the C heap holds before the samples; seen as a JSON round
    trip counting 0.4% more in one of three processes of the same layout."""
    rest = dict(plan)
    head = f'{{"fd": {fd:>10d}'
    if rest.get("root_fd") is not None:  # a counted worker's root folder: padded too
        head += f', "root_fd": {rest.pop("root_fd"):>10d}'
    text = json.dumps(rest)
    return head + (", " + text[1:] if len(text) > 2 else "}")


def alias_paths(plan: dict[str, Any]) -> None:
    """Point a counted worker's plan at its code through ``ALIAS``
    (:mod:`perflab.engines.run.counted_worker`), one fixed path:
    the code's root folder, opened here (``plan["root_fd"]``, to pass to the worker,
    which moves it to ``ALIAS_FD`` before anything else:
    :func:`perflab.engines.run.counted_worker.take_root`; closed by :func:`finish`).

    Why: a count moves with where the code lies. The worker puts the benchmark's folder
    on ``sys.path``, its functions' ``co_filename`` hold its path, and finding a module
    walks that path's components and hashes it: strings whose number, sizes and hashes
    follow the path, so the pools of CPython's small-object allocator and its dicts are
    left in another state before the samples. ``sum(range(2000))`` counted 323,624 Ir
    per op from ``/tmp/c3/L/d`` and 349,784 from ``/tmp/c3/L/a/b/c/d/e/f`` (+8%, every
    layout: a freed int's pool went from full to used and back on every iteration), so
    a ``--compare-to REF`` baseline checked out in a temp folder, or the same code in
    another CI folder, counted unchanged code as slower. A symlink of fixed length in a
    temp folder of random name was not enough: json_roundtrip's count then moved 0.63%
    between runs with the name's letters. Through ``/proc/self/fd/N`` every counted
    worker sees its code at the same path, byte for byte.

    The root is ``plan["redirect"][1]`` when the plan has one (``--compare-to``: the
    baseline's checkout for its workers, this checkout for the case's; the entries of
    ``sys.path`` inside ``redirect[0]`` then go through the alias too), else the
    benchmark file's folder. The plan's ``file`` (and ``redirect[1]``) become alias
    paths, ``alias`` records [alias, real root] so that the worker's error messages name
    the real files. Changed in place; a file outside its root, or a system without
    ``/proc/self/fd``, keeps its paths.

    Args:
        plan: a counted worker's plan (``file``, optional ``redirect``).
    """
    file = Path(plan["file"]).resolve()
    redirect = plan.get("redirect")
    root = Path(redirect[1]).resolve() if redirect else file.parent
    if not file.is_relative_to(root) or not os.path.isdir("/proc/self/fd"):
        return
    plan["root_fd"] = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    plan["file"] = os.path.join(ALIAS, str(file.relative_to(root)))
    if redirect:
        plan["redirect"] = [redirect[0], ALIAS]
    plan["alias"] = [ALIAS, str(root)]


def pass_fds(plan: dict[str, Any]) -> tuple[int, ...]:
    """The descriptors a worker inherits besides its event pipe: the pair's barrier
    pipes and a counted worker's root folder (:func:`alias_paths`)."""
    root = plan.get("root_fd")
    return (*plan.get("barrier_fds", ()), *(() if root is None else (root,)))


def start(plan: dict[str, Any], argv: Sequence[str], alias: bool = True) -> tuple[list[str], Any]:
    """Prepare a counted worker: a temp dir in ``plan["count"]["dir"]``, the plan's paths
    through one fixed alias (:func:`alias_paths`), and the argv.

    Args:
        plan: the worker's plan; changed in place when it has a ``count`` entry.
        argv: the worker's own command line.
        alias: whether the worker is perflab's counted worker, which imports the plan's
            ``file`` (a child pytest or ``perflab.measure``'s child finds its code
            itself: its plan's paths are left alone).

    Returns:
        (the argv to spawn, what to pass to :func:`finish`: the temp dir and whether to
        profile, or None when the plan does not count).

    Raises:
        ValgrindMissing: counting is asked for and Valgrind is not installed.
    """
    spec = plan.get("count")
    if not spec:
        return list(argv), None
    out = tempfile.TemporaryDirectory(prefix="perflab-callgrind-")
    spec["dir"] = out.name
    if alias:
        alias_paths(plan)
    prefix = callgrind.valgrind_command(out.name, cache_sim=bool(spec.get("cache_sim")))
    return [*prefix, *argv], (out, bool(spec.get("profile")), plan.get("root_fd"))


def finish(out: Any, events: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """The dumps the worker wrote, keyed by reason ("cold", "sample:0", …), and the temp
    dir removed. With the plan's ``profile``, also :data:`FUNCTIONS`: the exclusive Ir
    per function summed over the counted samples' dumps (the measured calls, perflab's
    loop around them included; :func:`perflab.engines.callgrind_profile.
    instruction_stacks`): the ``sample:`` dumps, and the ``calibrate`` one when the
    worker's ``counted`` event (in ``events``) kept it as a sample. ``out`` None (not
    counted): {}."""
    if out is None:
        return {}
    folder, profile, root_fd = out
    if root_fd is not None:
        os.close(root_fd)
    try:
        dumps: dict[str, Any] = callgrind.dumps_by_reason(callgrind.read_dumps(folder.name))
        if profile and dumps:
            stacks = instruction_stacks(folder.name, "sample:", by_process=False)
            done = next((e for e in events if e.get("event") == "counted"), {})
            if "calibrate" in done.get("sample_reasons", []):
                extra = instruction_stacks(folder.name, "calibrate", by_process=False)
                for stack, ir in extra.items():
                    stacks[stack] = stacks.get(stack, 0) + ir
            dumps[FUNCTIONS] = stacks
        return dumps
    finally:
        folder.cleanup()


def keep_profile(bench: Any, proc: Any, dumps: dict[str, Any], wall_s: float) -> None:
    """``--count instructions --profile``: the counted process's instructions per
    function (``dumps[FUNCTIONS]``, from :func:`finish`) become ``bench.profile`` when
    it is the benchmark's first counted process to give them (by process index, whatever
    order the workers ended in: the runs differ only by layout, and instruction counts
    repeat, so one process is the profile, as ``cmd``'s first counted run is).

    Args:
        bench: the :class:`perflab.model.Benchmark`.
        proc: the worker's :class:`perflab.model.Process` (its ``counts`` already read).
        dumps: what :func:`finish` returned.
        wall_s: the worker's wall time under Callgrind, s.
    """
    functions = dumps.get(FUNCTIONS)
    if not functions or proc.counts is None:
        return
    held = bench.profile
    if held is not None and held.kind == "instructions" and held.pids:
        first = next((p.index for p in bench.processes if p.pid == held.pids[0]), None)
        if first is not None and first < proc.index:
            return
    stacks, folded = bounded(functions)
    bench.profile = Profile(
        kind="instructions",
        sampler=f"callgrind {proc.counts.valgrind}".strip(),
        stacks=stacks,
        pids=[proc.pid],
        seconds=wall_s,
        calls=proc.counts.iterations * len(proc.counts.samples),
        note="; ".join(
            n
            for n in [
                f"exclusive Ir per C function over the {len(proc.counts.samples)} counted "
                f"samples of counted process {bench.processes.index(proc) + 1} (perflab's "
                "loop included)",
                folded,
            ]
            if n
        ),
    )


def counts_record(
    dumps: dict[str, callgrind.Dump], events: Sequence[dict[str, Any]], valgrind: str
) -> Counts | None:
    """The raw counts of one worker from its dumps and its events (``count_start``,
    ``counted``); None when the worker did not get as far as its counted samples.

    Every value list follows the event names of the cold dump (Ir; with the cache
    simulation the nine cache events).
    """
    started = next((e for e in events if e["event"] == "count_start"), None)
    counted = next((e for e in events if e["event"] == "counted"), None)
    cold = dumps.get("cold")
    if started is None or counted is None or cold is None:
        return None
    names = list(cold.events)

    def values(reason: str) -> list[int] | None:
        dump = dumps.get(reason)
        return None if dump is None else [dump.events.get(n, 0) for n in names]

    reasons = counted.get("sample_reasons") or [f"sample:{i}" for i in range(counted["samples"])]
    samples = [values(reason) for reason in reasons]
    empty = [values(f"empty:{i}") for i in range(counted["empty_samples"])]
    if any(v is None for v in samples) or any(v is None for v in empty):
        return None
    return Counts(
        events=names,
        iterations=counted["iterations"],
        cold=[cold.events.get(n, 0) for n in names],
        samples=[v for v in samples if v is not None],
        empty=[v for v in empty if v is not None],
        gc_enabled=started.get("gc_enabled"),
        gc_threshold=started.get("gc_threshold"),
        gc_collections=counted.get("gc_collections"),
        type_cache_cleared=started.get("type_cache_cleared"),
        aslr_off=bool(callgrind.no_aslr_prefix()),
        valgrind=valgrind,
    )


def concurrency(jobs: int, processes: int, cpus: int | None = None) -> int:
    """How many counted workers run at once: one per CPU, and never fewer than a
    benchmark's ``processes`` (its layouts), so that a benchmark's layouts all run at
    once even on fewer CPUs. Its count does not depend on how they share the CPUs; its
    wall time does: in rounds of one per CPU, 3 layouts on 2 CPUs take two rounds (the
    third alone), at once they take 1.5 rounds' CPU time, and on a loaded machine
    each more runnable process gets its own share of the CPUs.

    Args:
        jobs: counted workers to run (≥ 0).
        processes: counted processes per benchmark (``count_processes``).
        cpus: CPUs (None: ``os.cpu_count()``).

    Returns:
        Workers at once, in [1, max(jobs, 1)].
    """
    cpus = cpus or os.cpu_count() or 1
    return max(1, min(jobs, max(cpus, processes)))


def case_layouts(seed: int | None, bench_id: str, count: int) -> list[dict[str, int]]:
    """The layouts of a benchmark's ``count`` counted processes: drawn from the run's
    seed (None: 0) and the benchmark's id, so that they do not depend on which other
    benchmarks the run counts, nor on the order its processes are prepared in. (Drawn
    from one stream for the whole run, in the rounds' shuffled order, a benchmark got
    other layouts in every run: json_roundtrip's Ir per op moved 0.69% over 10 runs of
    the same command, each layout's count repeating to the instruction.)"""
    draws = from_environment(f"{0 if seed is None else seed}/{bench_id}")
    return [draws.next().to_dict() for _ in range(count)]


def run_all(runner: Any, states: Sequence[Any], twins: dict[int, Any] | None = None) -> None:
    """Run every counted worker of ``states`` (``count_processes`` each), up to
    :func:`concurrency` at a time: an instruction count does not depend on what else the
    machine runs, so counted workers need not take turns as timed ones do.

    Ctrl-C (or SIGTERM, which perflab turns into it) kills the running workers and
    starts no more: what was counted is kept. The processes are prepared in the order
    the timed rounds use (round after round, the
    states shuffled by the runner's generator); process k of a benchmark gets layout k
    of :func:`case_layouts`, whatever order the workers run in and whatever else the run
    counts, so a run repeats its layouts exactly.

    Args:
        runner: the :class:`perflab.engines.run.runner.Runner` (its ``_prepare``,
            ``_run_process``, ``_decide``, ``rng``, ``settings``).
        states: its case states.
        twins: ``id(state)`` → the state of the same case in ``--compare-to``'s baseline
            code (:class:`perflab.engines.run.pairs.PairedRunner`): each of its processes
            is counted with the layout of the same process of ``state`` (counts need no
            pairing in time, only the same layouts, so that the comparison takes the
            median of the layouts' ratios); ``states``' own layouts are drawn as without
            a baseline.
    """
    import threading
    from concurrent.futures import ThreadPoolExecutor

    jobs = []
    n = runner.settings.count_processes
    own = {id(s): case_layouts(runner.settings.seed, s.bench.id, n) for s in states}
    for k in range(n):
        order = list(states)
        runner.rng.shuffle(order)
        for state in order:
            layout = own[id(state)][k] if runner.layouts is not None else None
            prepared = runner._prepare(state, layout)
            jobs.append((state, prepared))
            twin = (twins or {}).get(id(state))
            if twin is not None:
                jobs.append((twin, runner._prepare(twin, dict(prepared[0].layout))))
    workers = concurrency(len(jobs), runner.settings.count_processes)
    stop = threading.Event()  # Ctrl-C or SIGTERM here: the workers' threads stop theirs
    if hasattr(runner.backend, "stop"):
        runner.backend.stop = stop
    pool = ThreadPoolExecutor(workers, thread_name_prefix="perflab-counted")
    try:
        done = [pool.submit(runner._run_process, state, prepared) for state, prepared in jobs]
        for future in done:
            future.result()
    except BaseException:
        stop.set()  # running workers are killed within 0.5 s, queued ones never start
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown()
    for state in [*states, *(twins or {}).values()]:
        runner._decide(state)
