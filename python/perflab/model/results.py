"""The records of the results model: the raw data of every engine, as dataclasses.

Raw data, statistics and presentation are separate types (hyperfine's
TimingResult → BenchmarkResult → exporters; pyperf's Run → Benchmark → Suite):
this module holds only raw data and its conversion from JSON types (to them:
:mod:`perflab.model.json_form`).
Times are integer nanoseconds in raw records and float seconds in summaries;
sizes are bytes. Reading and writing files is :mod:`perflab.model.results_file`;
schema versions and migrations are :mod:`perflab.model.versions`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from perflab.model.cluster import AgentInfo
from perflab.model.counts import CommandCounts, Counts
from perflab.model.http_step import (
    HttpStep,
)
from perflab.model.json_form import from_known as _from_dict
from perflab.model.json_form import json_types
from perflab.model.profile import Profile
from perflab.model.trace_spans import TraceSpan
from perflab.model.versions import SCHEMA_VERSION, migrate


@dataclass
class Sample:
    """One timed sample of ``iterations`` back-to-back calls in one process.

    Attributes:
        iterations: calls in the sample (≥ 1).
        wall_ns: wall time of the whole sample, ns (``perf_counter_ns``).
        cpu_ns: process CPU time (user+sys) over the sample, ns.
        gc_collections: garbage collections that ran during the sample.
        gc_ns: time spent inside those collections, ns.
        clock_skew_ns: largest disagreement between MONOTONIC and the other
            clocks (REALTIME, RAW, TSC) over the sample, ns; None if unchecked.
        flagged: why the sample is excluded from summaries ("clock:<name>", or
            "preempted": :mod:`perflab.analyze.run.counters`), or None. Flagged samples are
            kept in the file, never dropped.
        counters: what the kernel counted during the sample, ``{name: count}``
            (task_clock_ns, page_faults, cpu_migrations, context_switches, voluntary_switches,
            involuntary_switches; instructions, cycles, branch_misses, cache_misses
            where the kernel has a PMU): absent counters are missing, never 0. None
            without counters (older files, imported files, threads mode).
    """

    iterations: int
    wall_ns: int
    cpu_ns: int
    gc_collections: int = 0
    gc_ns: int = 0
    clock_skew_ns: int | None = None
    flagged: str | None = None
    counters: dict[str, int] | None = None

    @property
    def per_op_s(self) -> float:
        """Wall seconds per operation."""
        return self.wall_ns / self.iterations * 1e-9


@dataclass
class Process:
    """Everything one fresh worker process measured for one benchmark.

    The process is the unit of replication: samples inside one process are
    not independent, so statistics resample processes first.

    Attributes:
        index: the order in which the process was started within the run.
        pid: the OS process id.
        started_s: start time, seconds since the run began (for drift plots).
        iterations: calls per sample after calibration.
        cold_ns: wall time of the very first call in the process, ns.
        warmup_samples: samples run before timings stopped drifting.
        warmup_converged: False when warmup hit its time bound instead.
        loop_overhead_ns: cost per op of the harness loop with an empty
            callable, measured in the same process, ns.
        timer_error_ns: timer read cost + resolution used by calibration, ns.
        samples: the timed samples.
        metrics: extra metrics computed from the benchmark's return value.
        alloc_peak_bytes / alloc_blocks: peak traced bytes during one call; blocks
            still live after it. alloc_total_bytes / alloc_total_blocks: allocated in all.
        steal_ns: CPU steal time of the machine during the process, ns.
        involuntary_switches: involuntary context switches of the process.
        thread_ops: threads mode only: ops each thread completed in the timed windows.
        latency_ns: threads mode only: per-op latency percentiles of the process
            over the timed windows, ns; keys p50, p90, p99, p99.9, max, mean.
        gil_enabled: threads mode only: whether the GIL was enabled while the
            threads ran (False on a free-threaded interpreter); None if unknown.
        layout: the memory-layout randomization this process got (``perflab run``
            draws it per process; ``--seed`` repeats it): ``env_padding_bytes``
            (length of a padding environment variable), ``hash_seed``
            (PYTHONHASHSEED), ``heap_objects`` (small objects allocated before the
            benchmark file was imported). Empty: no randomization (``--no-randomize``,
            or a file written before it existed).
        clock_skew_ns: largest disagreement of MONOTONIC with the other clocks over the
            whole sampling phase of the process (first sample's start to last sample's
            end), ns; None if unchecked. A step between two samples shows here only.
        clock_flag: "clock:<name>" when that disagreement exceeded the tolerance.
        reference_ns: wall times of the machine-speed reference (a fixed pure-Python
            loop, :func:`perflab.engines.run.worker.reference_workload`) timed in this process
            between its samples, ns; empty when not timed (threads mode, older files).
        error: why the process failed, or None.
        software_note / hardware_note: why the per-sample counters lack software or
            hardware events (the kernel's words), or None.
        pair: when the process measured this benchmark paired with another
            (docs/compare.md, "Paired verdicts"): ``with`` (the other's id), ``side``
            ("a": the baseline, "b"), ``mode`` ("alternating": both in this one process,
            whose other record shares its ``index``, sample i of each is pair i;
            "lockstep": two processes at once, the other with the same ``index``),
            ``order`` (alternating: which side led each pair, e.g. "ABBA"), ``baseline``
            (True: the other is in the results' measured ``baseline``), ``cpus``
            (lock-step: the two CPUs the sides swapped between, A's on even pairs then
            on odd ones; absent: not pinned); None: unpaired.
        rss_start_bytes / rss_end_bytes / rss_calls / rss_peak_bytes / memory / heap:
            ``run --memory`` only (None without): the worker's RSS when its first and
            last timed sample ended and the calls in between, bytes; its peak (VmHWM);
            its RSS timeline ``{"t_s", "cpu_s", "rss_bytes"}`` sampled from outside
            (:mod:`perflab.engines.memory`); the Python heap over the heap pass after
            timing, ``{"calls", "t_s", "traced_bytes", "peak_bytes"}``
            (:func:`perflab.engines.run.heap.heap_timeline`); see docs/results-format.md.
        counts: ``run --count instructions``: what Callgrind counted in this process
            (:class:`perflab.model.counts.Counts`); None for a timed process.
    """

    index: int
    pid: int
    started_s: float
    iterations: int = 1
    cold_ns: int | None = None
    warmup_samples: int = 0
    warmup_converged: bool = True
    loop_overhead_ns: float | None = None
    timer_error_ns: float | None = None
    samples: list[Sample] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)
    alloc_peak_bytes: float | None = None
    alloc_blocks: float | None = None
    alloc_total_bytes: float | None = None
    alloc_total_blocks: float | None = None
    steal_ns: int | None = None
    involuntary_switches: int | None = None
    thread_ops: list[int] = field(default_factory=list)
    latency_ns: dict[str, float] = field(default_factory=dict)
    gil_enabled: bool | None = None
    layout: dict[str, int] = field(default_factory=dict)
    clock_skew_ns: int | None = None
    clock_flag: str | None = None
    reference_ns: list[int] = field(default_factory=list)
    error: str | None = None
    pair: dict[str, Any] | None = None
    rss_start_bytes: int | None = None
    rss_end_bytes: int | None = None
    rss_peak_bytes: int | None = None
    rss_calls: int | None = None
    memory: dict[str, list[float]] | None = None
    heap: dict[str, list[float]] | None = None
    software_note: str | None = None
    hardware_note: str | None = None
    counts: Counts | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Process:
        """Build from the JSON form. Raises TypeError/KeyError on malformed data."""
        proc = _from_dict(cls, data)
        proc.samples = [_from_dict(Sample, s) for s in data.get("samples", [])]
        proc.counts = Counts.from_dict(data["counts"]) if data.get("counts") else None
        return proc


@dataclass
class CommandRun:
    """One timed run of a whole command (``perflab cmd``); each run is its own process.

    Attributes:
        index: order of the run within the invocation (interleaving is visible here).
        started_s: start time, seconds since the invocation began.
        wall_ns: wall time from spawn to exit on the monotonic clock, ns.
        user_ns / sys_ns: CPU time from ``wait4``, ns; None when unknown (an imported
            hyperfine file without ``user``/``system``), shown as "–", never as 0.
        max_rss_bytes: peak resident set size from ``wait4``, bytes.
        exit_code: exit status (negative: killed by that signal).
        ok: False when the run failed (non-zero exit not ignored, timeout).
        warmup: True for warmup runs, which never enter summaries.
        timed_out: True when the run hit ``--timeout`` and was killed (it counts as failed).
        clock_skew_ns: largest disagreement of MONOTONIC with REALTIME, RAW and the TSC
            over the batch of runs this run belonged to, ns; None if unchecked.
        flagged: "clock:<name>" when that disagreement exceeded the tolerance; such
            runs are kept in the file and excluded from summaries.
        block: the interleaving block the run belonged to (each block runs every
            active command once, in random order; ratios pair runs by block); None
            for ``--no-interleave`` runs and files written before blocks were kept.
        tree_rss_peak_bytes / tree_rss_growth_bytes: ``cmd --memory``: the highest
            summed RSS of the command and its descendants, and the last reading − the
            first, over the run, bytes; None without --memory or with no reading.
        memory: ``cmd --memory``: that summed RSS over the run, ``{"t_s", "rss_bytes"}``
            (seconds since spawn, bytes), read every interval by the spawning helper.
    """

    index: int
    started_s: float
    wall_ns: int
    user_ns: int | None = 0
    sys_ns: int | None = 0
    max_rss_bytes: int = 0
    exit_code: int = 0
    ok: bool = True
    warmup: bool = False
    timed_out: bool = False
    clock_skew_ns: int | None = None
    flagged: str | None = None
    block: int | None = None
    tree_rss_peak_bytes: int | None = None
    tree_rss_growth_bytes: int | None = None
    memory: dict[str, list[float]] | None = None


@dataclass
class Benchmark:
    """Raw data of one benchmark (one case: name + params) from any engine.

    Attributes:
        name: the benchmark's name (function name, command, or URL).
        group: benchmarks in one group are compared with each other.
        kind: "python", "command", "http" or "trace".
        params: parameter values of this case (JSON scalars).
        stage: a column of a staged group (e.g. "serialize"), or None.
        baseline: True for the group's baseline.
        metric_units: unit of each extra metric, e.g. {"payload": "B"}.
        processes: python engine data, one entry per worker process.
        runs: command engine data, one entry per run.
        steps: http engine data, one entry per step.
        span: trace data (kind "trace": one benchmark per span name), else None.
        counts: ``cmd --count instructions``: the command's counted runs under Callgrind
            (:class:`perflab.model.counts.CommandCounts`); empty otherwise.
        threads: thread count of a threads-mode case, else None.
        ops_per_call: operations one call performs (``@perflab.bench(ops=...)``);
            samples time calls, summaries divide by this to give time per operation.
        stop_reason: "precision", "budget", "max-processes", "max-runs",
            "failed", "interrupted" or "done".
        error: the failure message, or None.
        profile: ``--profile``: where the measured calls spent their time, sampled in
            processes of their own after the timed ones (:class:`perflab.model.profile.
            Profile`); None when not profiled.
    """

    name: str
    group: str = ""
    kind: str = "python"
    params: dict[str, Any] = field(default_factory=dict)
    stage: str | None = None
    baseline: bool = False
    metric_units: dict[str, str] = field(default_factory=dict)
    processes: list[Process] = field(default_factory=list)
    runs: list[CommandRun] = field(default_factory=list)
    steps: list[HttpStep] = field(default_factory=list)
    threads: int | None = None
    stop_reason: str = "done"
    error: str | None = None
    span: TraceSpan | None = None
    counts: list[CommandCounts] = field(default_factory=list)
    ops_per_call: int = 1
    profile: Profile | None = None

    @property
    def id(self) -> str:
        """Stable id used for matching across files: ``group/name[stage](k=v,…)``."""
        text = f"{self.group}/{self.name}" if self.group else self.name
        if self.stage:
            text += f"[{self.stage}]"
        if self.params:
            text += "(" + ",".join(f"{k}={v}" for k, v in sorted(self.params.items())) + ")"
        if self.threads is not None:
            text += f"@{self.threads}t"
        return text

    @property
    def label(self) -> str:
        """Display name: name plus params, e.g. ``pickle_dumps n=1000``; a command's name
        already holds its parameter values (``make -j1``), so it is its label."""
        if self.kind == "command":
            return self.name
        extra = " ".join(f"{k}={v}" for k, v in self.params.items())
        text = f"{self.name} {extra}".strip()
        return f"{text} ×{self.threads}t" if self.threads is not None else text

    @property
    def failed(self) -> bool:
        """True when the benchmark failed (it may still hold partial data)."""
        return self.error is not None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Benchmark:
        """Build from the JSON form. Raises TypeError/KeyError on malformed data."""
        bench = _from_dict(cls, data)
        bench.processes = [Process.from_dict(p) for p in data.get("processes", [])]
        bench.runs = [_from_dict(CommandRun, r) for r in data.get("runs", [])]
        bench.steps = [HttpStep.from_dict(s) for s in data.get("steps", [])]
        bench.counts = [CommandCounts.from_dict(c) for c in data.get("counts") or []]
        if data.get("span") is not None:
            bench.span = TraceSpan.from_dict(data["span"])
        if data.get("profile") is not None:
            bench.profile = Profile.from_dict(data["profile"])
        return bench


@dataclass
class Results:
    """One invocation's results: what ran, where, how, and every raw record.

    Attributes:
        kind: the engine: "run", "cmd" or "http"; "trace" for a ``perflab.trace`` dump.
        command_line: the exact argv of the invocation.
        created: ISO-8601 UTC time the invocation started.
        perflab_version: the version that wrote the file.
        environment: the environment fingerprint (see :mod:`perflab.environment`).
        settings: the measurement settings (precision, budget, …), JSON scalars.
        benchmarks: raw data per benchmark.
        interrupted: True when Ctrl-C ended the invocation early.
        spawn_overhead: for ``cmd``: wall times of spawning an empty process, ns.
        rss_floor_bytes: for ``cmd``: max RSS reported for that empty process, bytes;
            the kernel counts the spawner's memory until exec, so no run reads below it.
        agents: for a distributed ``http`` run: its load agents (empty otherwise).
        baseline: ``run --compare-to REF`` with a git ref or folder: the baseline measured
            in this run (``spec``, ``commit``, ``file`` and its ``benchmarks``), else None.
    """

    kind: str
    command_line: list[str]
    created: str
    perflab_version: str
    environment: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    benchmarks: list[Benchmark] = field(default_factory=list)
    interrupted: bool = False
    spawn_overhead_ns: list[int] = field(default_factory=list)
    rss_floor_bytes: int | None = None
    schema_version: int = SCHEMA_VERSION
    agents: list[AgentInfo] = field(default_factory=list)
    baseline: dict[str, Any] | None = None

    def to_dict(self, summaries: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
        """The JSON form; ``summaries`` (by benchmark id) are written beside raw data.

        Returns:
            A dict of JSON types only; NaN becomes null.
        """
        data = json_types(self)
        data = {"schema_version": SCHEMA_VERSION, "tool": "perflab", **data}
        if summaries:
            for bench, raw in zip(self.benchmarks, data["benchmarks"]):
                if bench.id in summaries:
                    raw["summary"] = json_types(summaries[bench.id])
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Results:
        """Build from the JSON form, migrating older schema versions.

        Raises:
            ResultsFileError: not a perflab results file, or a newer schema.
        """
        data = migrate(data)
        results = _from_dict(cls, data)
        results.benchmarks = [Benchmark.from_dict(b) for b in data.get("benchmarks", [])]
        results.agents = [AgentInfo.from_dict(a) for a in data.get("agents", [])]
        if results.baseline is not None:
            results.baseline = {
                **results.baseline,
                "benchmarks": [Benchmark.from_dict(b) for b in results.baseline["benchmarks"]],
            }
        return results
