"""``perflab cmd --count instructions``: a whole command's instructions, children included.

Each counted run starts the command under Callgrind with ``--trace-children=yes``
(every process it execs is counted too) and ``--instr-atstart=yes`` (from the first
instruction: a command has no harness inside to say where to start), with address-space
randomization off. Callgrind writes one file per process; the run's count is the sum of
their totals. The runs (:data:`COUNT_RUNS` by default) each get their own layout:
a padding environment variable of a drawn length and a drawn PYTHONHASHSEED (what a
Python program's hash tables depend on), from the run's seed, so the spread between
them is the command's layout band (:mod:`perflab.analyze.counts`). The counted runs
come after the timed runs and never enter the seconds.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass

from perflab.engines import callgrind
from perflab.engines.callgrind_profile import instruction_stacks
from perflab.engines.layout import LayoutDraws
from perflab.model import Benchmark
from perflab.model.counts import CommandCounts
from perflab.model.profile import Profile, bounded

#: counted runs per command by default (the layout band needs three)
COUNT_RUNS = 3


@dataclass
class CountedRun:
    """One counted run of a command.

    Attributes:
        counts: what Callgrind counted, summed over the processes (None: failed).
        layout: the run's layout (``env_padding_bytes``, ``hash_seed``, ``heap_objects``).
        wall_s: its wall time under Callgrind, s (the cost of counting, not a timing).
        exit_code: the command's exit status.
        error: why the run failed, or None.
        functions: with ``per_function``: exclusive Ir per ``process: CMD;function
            (object)`` (:func:`perflab.engines.callgrind_profile.instruction_stacks`).
    """

    counts: CommandCounts | None
    layout: dict[str, int]
    wall_s: float
    exit_code: int | None
    error: str | None = None
    functions: dict[str, int] | None = None


def sum_dumps(dumps: Sequence[callgrind.Dump]) -> tuple[list[str], list[int], int]:
    """(event names, their totals summed over ``dumps``, processes counted)."""
    names: list[str] = []
    for dump in dumps:
        names += [n for n in dump.events if n not in names]
    totals = [sum(d.events.get(n, 0) for d in dumps) for n in names]
    return names, totals, len({d.pid for d in dumps})


def count_command(
    argv: Sequence[str],
    *,
    runs: int = COUNT_RUNS,
    seed: int | None = None,
    cache_sim: bool = False,
    timeout_s: float | None = None,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    accepts: frozenset[int] | None = frozenset({0}),
    input_path: str | None = None,
    per_function: bool = False,
) -> list[CountedRun]:
    """Count ``argv`` ``runs`` times under Callgrind, children followed.

    Args:
        argv: the command (no shell).
        runs: counted runs, each with its own layout.
        seed: the layouts' seed (None: 0, so that two invocations count the same layouts).
        cache_sim: also simulate the caches.
        timeout_s: a run taking longer is killed and failed (None: no limit).
        env: the command's environment (default: this process's).
        cwd: its working folder.
        accepts: the exit codes that count as success (None: every code).
        input_path: a file given to the command on stdin (``--input``; None: nothing).
        per_function: also read each run's instructions per function (``--profile``).

    Returns:
        One :class:`CountedRun` per run, in order.

    Raises:
        ValgrindMissing: Valgrind is not installed.
    """
    draws = LayoutDraws(0 if seed is None else seed)
    version = callgrind.valgrind_version()
    aslr_off = bool(callgrind.no_aslr_prefix())
    done: list[CountedRun] = []
    for _ in range(runs):
        layout = draws.next()
        run_env = {**(env if env is not None else os.environ), **layout.environment()}
        with tempfile.TemporaryDirectory(prefix="perflab-callgrind-") as out:
            prefix = callgrind.valgrind_command(
                out, cache_sim=cache_sim, trace_children=True, instr_at_start=True
            )
            t0 = time.monotonic()
            try:
                stdin = open(input_path, "rb") if input_path else subprocess.DEVNULL  # noqa: SIM115
                proc = subprocess.run(
                    [*prefix, *argv],
                    env=run_env,
                    cwd=cwd,
                    stdin=stdin,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    timeout=timeout_s,
                    check=False,
                )
                if input_path:
                    stdin.close()  # type: ignore[union-attr]
                code: int | None = proc.returncode
                error = None if accepts is None or code in accepts else f"exited with {code}"
            except subprocess.TimeoutExpired:
                code, error = None, f"timed out after {timeout_s:g} s under Callgrind"
            wall = time.monotonic() - t0
            dumps = callgrind.read_dumps(out)
            functions = instruction_stacks(out) if per_function else None
        counts = None
        if dumps and error is None:
            names, totals, processes = sum_dumps(dumps)
            counts = CommandCounts(names, totals, processes, layout.to_dict(), aslr_off, version)
        elif error is None:
            error = "Callgrind wrote no counts (did the command start?)"
        done.append(CountedRun(counts, layout.to_dict(), wall, code, error, functions))
    return done


def count_benchmarks(
    benchmarks: Sequence[Benchmark],
    argvs: Sequence[Sequence[str]],
    *,
    seed: int | None,
    cache_sim: bool,
    timeout_s: float | None,
    accepts: frozenset[int] | None,
    input_path: str | None = None,
    runs: int = COUNT_RUNS,
    profile: bool = False,
) -> list[str]:
    """``perflab cmd --count``: count each command after its timed runs and keep the
    counted runs in its benchmark (``Benchmark.counts``); a benchmark that failed its timed
    runs is not counted. With ``profile`` (``--profile``), the first successful counted
    run's instructions per function become the benchmark's profile
    (:func:`instruction_profile`).

    Returns:
        One plain-words line per counted run that failed (for stderr).
    """
    problems = []
    for bench, argv in zip(benchmarks, argvs, strict=True):
        if bench.failed:
            continue
        options = {"seed": seed, "cache_sim": cache_sim, "timeout_s": timeout_s}
        done = count_command(
            argv, runs=runs, accepts=accepts, input_path=input_path, per_function=profile, **options
        )
        bench.counts = [r.counts for r in done if r.counts is not None]
        if profile:
            bench.profile = instruction_profile(done)
        problems += [
            f"{bench.name}: counted run {i + 1} {r.error}" for i, r in enumerate(done) if r.error
        ]
    return problems


def instruction_profile(done: Sequence[CountedRun]) -> Profile:
    """The instruction profile of a command: the first successful counted run's
    exclusive Ir per function (deterministic, so one run is the profile; the runs differ
    only by layout), bounded (:func:`perflab.model.profile.bounded`)."""
    for run in done:
        if run.counts is not None and run.functions:
            stacks, folded = bounded(run.functions)
            return Profile(
                kind="instructions",
                sampler=f"callgrind {run.counts.valgrind}".strip(),
                stacks=stacks,
                seconds=run.wall_s,
                calls=1,
                note="; ".join(
                    n for n in ["exclusive Ir per C function of counted run 1", folded] if n
                ),
            )
    return Profile(kind="instructions", sampler="callgrind", note="no counted run succeeded")
