"""``run --profile``: each benchmark's measured calls sampled by py-spy in processes of
their own, after every timed process of the run has ended, so the profile never
perturbs a timed figure (docs/profile.md).

Each case gets ``processes`` fresh profile workers
(:mod:`perflab.engines.run.profile_worker`), each started under py-spy
(:mod:`perflab.engines.profiler`) and calling the case for ``seconds``; the stacks under
the worker's marker frame are kept and merged across the processes into the
benchmark's :class:`perflab.model.profile.Profile`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from perflab.engines import profiler
from perflab.engines.run.backend import worker_env
from perflab.engines.run.profile_worker import MARKER
from perflab.engines.run.suite import Case
from perflab.model import Benchmark
from perflab.model.profile import Profile, bounded

#: time every case is profiled, summed over its processes, s (``--profile-time``)
DEFAULT_SECONDS = 1.0
#: profile processes per case: stacks merged over fresh processes, as timings are
DEFAULT_PROCESSES = 2


@dataclass(frozen=True)
class ProfileSettings:
    """How ``--profile`` samples.

    Attributes:
        seconds: time under the sampler per case, summed over its processes, s.
        processes: fresh profile processes per case (≥ 1).
        rate_hz: samples per second.
        timeout_s: a profile process running longer is killed (its samples kept).
        event_loop: the event loop of ``async def`` benchmarks, as the timed run's.
    """

    seconds: float = DEFAULT_SECONDS
    processes: int = DEFAULT_PROCESSES
    rate_hz: int = profiler.RATE_HZ
    timeout_s: float = 60.0
    event_loop: str = "asyncio"


def profile_cases(
    file: str,
    cases: Sequence[Case],
    benches: Sequence[Benchmark],
    settings: ProfileSettings,
    sampler: profiler.Sampler,
    on_case: Callable[[Benchmark], None] | None = None,
) -> None:
    """Profile every case whose benchmark did not fail; set each ``bench.profile``.

    Args:
        file: the benchmark file (as the timed workers loaded it).
        cases / benches: the run's cases and their benchmarks, matched by id.
        settings: how to sample.
        sampler: py-spy (:func:`perflab.engines.profiler.find_sampler`).
        on_case: called before each benchmark is profiled (progress).

    A profile process that fails leaves a note on the profile, never an error on the
    benchmark: its timed figures stand.
    """
    by_id = {b.id: b for b in benches}
    for case in cases:
        bench = by_id.get(case.id)
        if bench is None or bench.failed or not bench.processes:
            continue
        if on_case is not None:
            on_case(bench)
        bench.profile = profile_case(file, case, settings, sampler)


def profile_case(
    file: str, case: Case, settings: ProfileSettings, sampler: profiler.Sampler
) -> Profile:
    """The merged profile of ``case`` over ``settings.processes`` fresh processes."""
    plan = {"file": file, "index": case.index, "params": case.params}
    profile = profile_processes(WORKER, plan, settings, sampler)
    if case.threads is not None:
        profile.note = "; ".join(
            filter(None, ["threads mode: profiled on one thread", profile.note])
        )
    return profile


#: the profile worker's command line (its plan file's path is appended)
WORKER = [sys.executable, "-P", "-m", "perflab.engines.run.profile_worker"]


def profile_processes(
    worker: list[str],
    plan: dict[str, Any],
    settings: ProfileSettings,
    sampler: profiler.Sampler,
    cwd: str | None = None,
    plan_env: str | None = None,
) -> Profile:
    """The merged profile of ``settings.processes`` fresh processes running ``worker``
    under py-spy (a profile worker's command line: :data:`WORKER`, ``perflab.measure``'s
    or a child pytest's), each given ``plan`` with its time, warm-up and report file: the
    plan file's path is the last argument, or with ``plan_env`` that environment variable.

    A process that fails leaves a note on the profile (never an exception)."""
    each_s = settings.seconds / max(1, settings.processes)
    parts, pids, seconds, calls, notes = [], [], 0.0, 0, []
    for _ in range(max(1, settings.processes)):
        stacks, report = _one_process(worker, plan, each_s, settings, sampler, cwd, plan_env)
        if "error" in report:
            notes.append(f"a profile process failed: {report['error'].strip().splitlines()[-1]}")
            continue
        parts.append(stacks)
        pids.append(int(report.get("pid", 0)))
        seconds += float(report.get("seconds", 0.0))
        calls += int(report.get("calls", 0))
    stacks, folded = bounded(profiler.merge(parts))
    if parts and not stacks:
        notes.append("py-spy took no sample (is ptrace allowed here?)")
    return Profile(
        kind="time",
        sampler=sampler.version,
        rate_hz=float(settings.rate_hz),
        stacks=stacks,
        pids=pids,
        seconds=seconds,
        calls=calls if parts else None,
        note="; ".join(n for n in [*notes, folded] if n),
    )


def _one_process(
    worker: list[str],
    plan: dict[str, Any],
    seconds: float,
    settings: ProfileSettings,
    sampler: profiler.Sampler,
    cwd: str | None,
    plan_env: str | None = None,
) -> tuple[dict[str, int], dict[str, Any]]:
    """One profile worker under py-spy: (its stacks under the marker, its report)."""
    with tempfile.TemporaryDirectory(prefix="perflab-profile-") as tmp:
        plan_path, raw, report_path = (os.path.join(tmp, n) for n in ("plan", "raw", "report"))
        plan = {
            **plan,
            "seconds": seconds,
            "warmup_s": min(0.25, seconds / 2),
            "event_loop": settings.event_loop,
            "report": report_path,
        }
        with open(plan_path, "w") as f:
            json.dump(plan, f)
        argv = [*worker] if plan_env else [*worker, plan_path]
        argv = profiler.record_argv(sampler, raw, argv, settings.rate_hz)
        env = worker_env() | ({plan_env: plan_path} if plan_env else {})
        with tempfile.TemporaryFile() as err:
            code = profiler.run_recorded(
                argv,
                settings.timeout_s + seconds,
                env=env,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
            err.seek(0)
            stderr = err.read()[-2000:].decode(errors="replace")
        report = _report(report_path, code, stderr)
        return profiler.below(profiler.read_raw(raw), MARKER), report


def _report(path: str, code: int | None, stderr: str) -> dict[str, Any]:
    """The worker's report, or an ``error`` saying why there is none."""
    try:
        with open(path) as f:
            report = json.load(f)
    except (OSError, ValueError):
        why = "killed at the timeout" if code is None else f"exit {code}"
        tail = [line for line in stderr.splitlines() if line.strip()][-1:] or [""]
        return {"error": f"no report ({why}) {tail[0]}"}
    return report if isinstance(report, dict) else {"error": "malformed report"}
