"""The command engine of ``perflab cmd``: time whole commands, interleaved, until they stop.

Method:
    * each run is its own process, spawned without a shell by a small helper
      (:mod:`perflab.engines.cmd.spawn`, :mod:`perflab.engines.cmd.spawn_helper`): wall
      time on the monotonic clock around spawn → reap, user/system time and max
      RSS from ``wait4``; the helper runs whole batches of runs and hooks, so no
      round trip per run adds to the cost of a run;
    * commands run interleaved in randomized blocks, every block running each
      command once in a fresh random order, so that drift hits all commands
      alike (Abedi & Brecht 2017, randomized multiple interleaved trials);
      ``interleave=False`` measures them one after another, as hyperfine does;
    * adaptive stopping: the set stops when the bootstrap CI of every median
      and of every ratio against the reference (or the fastest) is within the
      target precision, or when the budget or the run limit is reached, and
      the reason is recorded;
    * the cost of spawning an empty process is measured once and kept beside
      the results; it is never subtracted.

The commands come as :class:`perflab.engines.cmd.parameters.CommandSpec` (``-P``/``-L``
expanded); processes start through the :class:`perflab.engines.cmd.spawn.Spawner`
interface, which tests replace with a fake that advances a fake clock.
"""

from __future__ import annotations

import math
import random
import re
import signal
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from perflab.engines import integrity
from perflab.engines.cmd.parameters import CommandSpec
from perflab.engines.cmd.spawn import Item, PosixSpawner, Spawner, SpawnOutcome
from perflab.engines.progress import NullProgress, Progress
from perflab.errors import UsageError
from perflab.model import Benchmark, CommandRun

#: Never spend more than 1/_CHECK_SHARE of the time on stopping checks (bootstraps).
_CHECK_SHARE = 20
#: A batch of runs never plans more than this much time (or items) ahead: the
#: budget can't be overshot by more, and the progress display updates as often.
_MAX_BATCH_S = 0.25
_MAX_BATCH_ITEMS = 3000
_CODES_RE = re.compile(r"^\d+(,\d+)*$")
HOOKS = ("setup", "prepare", "conclude", "cleanup")


def is_code_list(text: str) -> bool:
    """True when ``text`` is comma-separated non-negative integers ("1" or "1,2")."""
    return bool(_CODES_RE.match(text))


def parse_codes(text: str | None) -> frozenset[int] | None:
    """``--ignore-failure`` value: None → every code; "1,2" → {1, 2}.

    Raises:
        UsageError: anything but comma-separated non-negative integers.
    """
    if text is None:
        return None
    if not is_code_list(text):
        raise UsageError(
            f"--ignore-failure={text!r}: write exit codes separated by commas, "
            "e.g. --ignore-failure=1,2, or no value to ignore every exit code"
        )
    return frozenset(int(c) for c in text.split(","))


@dataclass
class CommandSettings:
    """Measurement settings of ``perflab cmd``.

    Attributes:
        precision: target relative 95% CI half-width of medians and ratios (0.01 = 1%).
        min_runs / max_runs: bounds on timed runs per command.
        budget_s: time each command may spend (its runs plus its prepare and
            conclude hooks), s; interleaved blocks stop when any command spent it.
        timeout_s: a run (or hook) lasting longer is killed and counts as failed; None: never.
        warmup: untimed runs per command before the timed ones.
        interleave: randomized blocks (True) or one command after another (False).
        ignore_all: non-zero exit codes don't fail the benchmark (--ignore-failure).
        ignore_codes: exit codes that don't fail it (--ignore-failure=1,2).
        reference: index of the command ratios are taken against; None: the fastest.
        overhead_runs: runs of the empty process for the spawn overhead.
        confidence: CI level.
        seed: seed of the block order and of the bootstrap (None: random).
    """

    precision: float = 0.01
    min_runs: int = 10
    max_runs: int = 1000
    budget_s: float = 10.0
    timeout_s: float | None = 600.0
    warmup: int = 0
    interleave: bool = True
    ignore_all: bool = False
    ignore_codes: frozenset[int] = frozenset()
    reference: int | None = None
    overhead_runs: int = 30
    confidence: float = 0.95
    seed: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {**self.__dict__, "ignore_codes": sorted(self.ignore_codes)}

    def accepts(self, exit_code: int) -> bool:
        """True when a run that exited with ``exit_code`` counts as a success."""
        if exit_code == 0:
            return True
        return exit_code > 0 and (self.ignore_all or exit_code in self.ignore_codes)


@dataclass
class _State:
    """The engine's bookkeeping for one command."""

    spec: CommandSpec
    bench: Benchmark
    spent_s: float = 0.0
    done: bool = False
    set_up: bool = False
    timed: int = 0
    ok_walls: list[float] = field(default_factory=list)
    ok_blocks: list[int | None] = field(default_factory=list)

    def add(self, run: CommandRun) -> None:
        """Keep the run and the counters the stopping rule reads every batch (O(1))."""
        self.bench.runs.append(run)
        if not run.warmup:
            self.timed += 1
            if run.ok:
                self.ok_walls.append(run.wall_ns * 1e-9)
                self.ok_blocks.append(run.block)


class CommandRunner:
    """Measures commands in randomized blocks (or one after another) until they stop.

    Blocks are sent to the spawner in batches that end before the next point
    where the stopping rule could fire (and within ``_MAX_BATCH_S``), so no
    per-run round trip adds to the cost of a run.

    Args:
        specs: the commands.
        settings: measurement settings.
        spawner: how processes run (default: :class:`PosixSpawner`).
        overhead_argv: the empty process timed for the spawn overhead
            (``true``, or ``sh -c ''`` with --shell); None skips it.
        progress: progress sink.
        clock: monotonic seconds (injectable for tests).

    Attributes:
        spawn_overhead_ns: wall times of the empty process, ns.
        rss_floor_bytes: the least max RSS the empty process reported, bytes (or None).
        interrupted: True when Ctrl-C (or SIGTERM) ended the measurement.
        start_errors: commands that could not be started (bad input, exit 2).
    """

    def __init__(
        self,
        specs: Sequence[CommandSpec],
        settings: CommandSettings,
        spawner: Spawner | None = None,
        overhead_argv: Sequence[str] | None = None,
        progress: Progress | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self.spawner = spawner or PosixSpawner()
        self.overhead_argv = overhead_argv
        self.progress = progress or NullProgress()
        self.clock = clock
        self.rng = random.Random(settings.seed)
        self.states = [_State(s, s.to_benchmark()) for s in specs]
        self.spawn_overhead_ns: list[int] = []
        self.rss_floor_bytes: int | None = None
        self.interrupted = False
        self.start_errors = 0
        self._t0 = clock()
        self._index = 0
        self._blocks_started = 0
        self._checks = 0
        self._next_check = -math.inf
        self._block_s: float | None = None
        self._half: float | None = None
        self._skew: tuple[int | None, str | None] = (None, None)
        self.monitor = integrity.Monitor(core) if (core := integrity.load_core()) else None

    def run(self) -> list[Benchmark]:
        """Measure every command; Ctrl-C stops early and keeps every finished run.

        Returns:
            One Benchmark per spec, in spec order; failed ones have ``error`` set.
        """
        try:
            self._probe_overhead()
            if self.settings.interleave:
                self._interleaved()
            else:
                for state in self.states:
                    self._sequential(state)
        except KeyboardInterrupt:
            self.interrupted = True
            for state in self.states:
                if not state.done:
                    state.done, state.bench.stop_reason = True, "interrupted"
            self._cleanup_all()
        return [s.bench for s in self.states]

    def _run_one(self, argv: Sequence[str]) -> SpawnOutcome:
        outcomes: list[SpawnOutcome] = []
        self.spawner.run_batch(
            [(tuple(argv), self.settings.timeout_s, False)], True, frozenset(), outcomes
        )
        return outcomes[0]

    def _probe_overhead(self) -> None:
        """Time the empty process a few times: the floor under every wall time."""
        if not self.overhead_argv:
            return
        item = (tuple(self.overhead_argv), self.settings.timeout_s, False)
        outcomes: list[SpawnOutcome] = []
        self.spawner.run_batch([item] * self.settings.overhead_runs, True, frozenset(), outcomes)
        ran = [o for o in outcomes if not o.error]
        self.spawn_overhead_ns = [o.wall_ns for o in ran]
        self.rss_floor_bytes = min((o.max_rss_bytes for o in ran), default=None)

    def _sequential(self, state: _State) -> None:
        """All runs of one command: setup, warmup, batches until it stops, cleanup."""
        self.progress.start_case(state.bench.id, self.settings.budget_s)
        self._setup(state)
        if self.settings.warmup:
            self._blocks([state], self.settings.warmup, warmup=True)
        while not state.done:
            self._blocks([state], self._blocks_ahead([state]))
            self._decide([state])
        self._cleanup(state)

    def _interleaved(self) -> None:
        """Every setup, warmup blocks, timed blocks in random order until all stop, cleanups."""
        for state in self.states:
            self.progress.start_case(state.bench.id, self.settings.budget_s)
            self._setup(state)
        if self.settings.warmup:
            self._blocks(self.states, self.settings.warmup, warmup=True)
        while active := [s for s in self.states if not s.done]:
            self._blocks(active, self._blocks_ahead(active))
            self._decide(active)
        self._cleanup_all()

    def _blocks_ahead(self, active: list[_State]) -> int:
        """Blocks to batch: up to the next point where the set could stop, within
        ``_MAX_BATCH_S``, the budget and the run limit (one block until timed once)."""
        s = self.settings
        left = s.max_runs - max(st.timed for st in active)
        below_min = s.min_runs - min(len(st.ok_walls) for st in active)
        if self._block_s is None:
            return 1
        horizon = min(_MAX_BATCH_S, s.budget_s - max(st.spent_s for st in active))
        if below_min <= 0:
            horizon = min(horizon, self._next_check - self.clock())
        blocks = int(horizon / self._block_s) if self._block_s > 0 else max(below_min, 1)
        if below_min > 0:
            blocks = min(blocks, below_min)
        return max(1, min(blocks, left, _MAX_BATCH_ITEMS // (3 * len(active))))

    def _blocks(self, states: list[_State], blocks: int, warmup: bool = False) -> None:
        """Run ``blocks`` blocks (each active command once, in a fresh random order) as
        one batch, then record what ran, even when Ctrl-C cut the batch short."""
        plan: list[tuple[_State, int | None]] = []
        for _ in range(blocks):
            active = [s for s in states if not s.done]
            self.rng.shuffle(active)
            block = self._blocks_started if self.settings.interleave else None
            self._blocks_started += 1
            plan += [(state, block) for state in active]
        items = [item for state, _ in plan for item in self._items(state)]
        outcomes: list[SpawnOutcome] = []
        began = self.clock()
        check = self._clock_check()
        try:
            self.spawner.run_batch(
                items, self.settings.ignore_all, self.settings.ignore_codes, outcomes
            )
        finally:
            self._skew = check()
            self._replay(plan, outcomes, warmup)
        self._block_s = (self.clock() - began) / blocks

    def _clock_check(self) -> Callable[[], tuple[int | None, str | None]]:
        """Start the clock cross-check of one batch (:mod:`perflab.engines.integrity`);
        the returned function ends it: (skew ns, flag). Runs are checked per batch
        because the spawning helper is kept free of the native core (its memory is the
        floor of every max RSS), so every run of a batch whose clocks disagreed is flagged."""
        if self.monitor is None:
            return lambda: (None, None)
        self.monitor.ready()
        self.monitor.start()
        return self.monitor.stop

    def _items(self, state: _State) -> list[Item]:
        """The batch items of one run: [prepare], the command, [conclude]."""
        hooks, timeout = state.spec.hooks, self.settings.timeout_s
        items: list[Item] = [(hooks["prepare"], timeout, False)] if "prepare" in hooks else []
        items.append((state.spec.argv, timeout, True))
        return items + ([(hooks["conclude"], timeout, False)] if "conclude" in hooks else [])

    def _replay(
        self, plan: list[tuple[_State, int | None]], outcomes: list[SpawnOutcome], warmup: bool
    ) -> None:
        """Fold a batch's outcomes into the runs, in the order they ran."""
        pending = iter(outcomes)
        for state, block in plan:
            if not self._replay_run(state, pending, warmup, block):
                return

    def _replay_run(
        self, state: _State, pending: Iterator[SpawnOutcome], warmup: bool, block: int | None
    ) -> bool:
        """One run's outcomes (prepare, command, conclude); False where the batch ended."""
        hooks = state.spec.hooks
        if "prepare" in hooks and not self._hook_ok(state, "prepare", next(pending, None)):
            return False
        outcome = next(pending, None)
        if outcome is None:
            return False
        if outcome.error:
            self.start_errors += 1
            self._fail(
                state,
                f"can't be started: {outcome.error}; check that it is a program "
                "for this machine (scripts need a #! line) or use --shell",
            )
            return False
        run = self._record(state, outcome, warmup, block)
        if not run.ok and not self.settings.ignore_all:
            self._fail(state, self._run_failure(outcome))
            return False
        return "conclude" not in hooks or self._hook_ok(state, "conclude", next(pending, None))

    def _record(
        self, state: _State, outcome: SpawnOutcome, warmup: bool, block: int | None = None
    ) -> CommandRun:
        ok = not outcome.timed_out and self.settings.accepts(outcome.exit_code)
        started = self.clock() if outcome.start_ns is None else outcome.start_ns * 1e-9
        run = CommandRun(
            index=self._index,
            started_s=started - self._t0,
            wall_ns=outcome.wall_ns,
            user_ns=outcome.user_ns,
            sys_ns=outcome.sys_ns,
            max_rss_bytes=outcome.max_rss_bytes,
            exit_code=outcome.exit_code,
            ok=ok,
            warmup=warmup,
            timed_out=outcome.timed_out,
            clock_skew_ns=self._skew[0],
            flagged=self._skew[1],
            block=block,
        )
        if outcome.memory and outcome.memory[1]:
            times, sizes = outcome.memory
            run.memory = {"t_s": list(times), "rss_bytes": list(sizes)}
            run.tree_rss_peak_bytes = max(max(sizes), self._largest_process(outcome))
            run.tree_rss_growth_bytes = sizes[-1] - sizes[0]
        self._index += 1
        state.spent_s += outcome.wall_ns * 1e-9
        state.add(run)
        return run

    def _largest_process(self, outcome: SpawnOutcome) -> int:
        """A floor under a run's tree peak (``--memory``): wait4's max RSS, the peak of
        the largest single process of the tree, caught even when it lived between two
        readings; 0 unless it is more than twice the empty process's (below that it may
        be the spawning helper's own pages, counted until exec)."""
        floor = self.rss_floor_bytes
        return outcome.max_rss_bytes if floor and outcome.max_rss_bytes > 2 * floor else 0

    def _run_failure(self, outcome: SpawnOutcome) -> str:
        """Plain-words reason a run failed, with what to do."""
        if outcome.timed_out:
            return (
                f"run timed out after {self.settings.timeout_s:g} s and was killed (hung?); "
                "raise --timeout or fix the command"
            )
        if outcome.exit_code < 0:
            name = signal.Signals(-outcome.exit_code).name
            return (
                f"run was killed by {name}; fix the command, or pass --ignore-failure to "
                "keep measuring and count such runs apart"
            )
        hint = " (the shell could not find the command)" if outcome.exit_code == 127 else ""
        return (
            f"run exited with status {outcome.exit_code}{hint}; fix it, or pass "
            f"--ignore-failure (or --ignore-failure={outcome.exit_code}) if that is expected;"
            " --show-output shows what it printed"
        )

    def _setup(self, state: _State) -> None:
        state.set_up = True
        if "setup" in state.spec.hooks:
            self._hook_ok(state, "setup", self._run_one(state.spec.hooks["setup"]))

    def _hook_ok(self, state: _State, hook: str, outcome: SpawnOutcome | None) -> bool:
        """True when the hook ran cleanly; otherwise the command fails (None: batch cut)."""
        if outcome is None:
            return False
        if hook in ("prepare", "conclude"):
            state.spent_s += outcome.wall_ns * 1e-9
        if not outcome.error and outcome.exit_code == 0 and not outcome.timed_out:
            return True
        status = (
            f"could not start ({outcome.error})"
            if outcome.error
            else "timed out"
            if outcome.timed_out
            else f"exited with status {outcome.exit_code}"
        )
        self._fail(
            state,
            f"--{hook} {state.spec.hooks[hook][-1]!r} {status}; fix it "
            "(--show-output shows what it printed)",
        )
        return False

    def _fail(self, state: _State, message: str) -> None:
        state.bench.error = f"{state.spec.name!r}: {message}"
        state.done, state.bench.stop_reason = True, "failed"
        self.progress.finish_case(state.bench.id, "failed")

    def _cleanup(self, state: _State) -> None:
        if not state.set_up:
            return
        state.set_up = False
        argv = state.spec.hooks.get("cleanup")
        outcome = self._run_one(argv) if argv else None
        failed = outcome and (outcome.error or outcome.exit_code or outcome.timed_out)
        if failed and argv and not state.bench.failed:
            state.bench.error = (
                f"{state.spec.name!r}: --cleanup {argv[-1]!r} failed "
                f"(status {outcome.exit_code}); its runs are kept"
            )

    def _cleanup_all(self) -> None:
        try:
            for state in self.states:
                self._cleanup(state)
        except KeyboardInterrupt:
            self.interrupted = True

    def _decide(self, active: list[_State]) -> None:
        """Stop ``active`` together when precise enough, out of budget, or out of runs."""
        active = [s for s in active if not s.done]
        if not active:
            return
        s = self.settings
        runs = min(st.timed for st in active)
        limit = (
            "max-runs"
            if runs >= s.max_runs
            else "budget"
            if any(st.spent_s >= s.budget_s for st in active)
            else None
        )
        reason = limit
        enough = min(len(st.ok_walls) for st in active) >= max(s.min_runs, 2)
        if not limit and enough and self.clock() >= self._next_check and self._precise(active):
            reason = "precision"
        for state in active:
            self.progress.update_case(state.bench.id, state.timed, state.spent_s, self._half)
            if reason:
                state.done, state.bench.stop_reason = True, reason
                self.progress.finish_case(state.bench.id, reason)

    def _precise(self, active: list[_State]) -> bool:
        """True when every median's and every ratio's CI is within the precision.

        The check costs a few bootstraps (real CPU time, whatever the injected
        clock says), so the next one waits until ``_CHECK_SHARE`` times that
        cost has been spent measuring.
        """
        began = time.perf_counter()
        self._half = max(self.half_widths(active))
        self._next_check = self.clock() + _CHECK_SHARE * (time.perf_counter() - began)
        return self._half <= self.settings.precision

    def half_widths(self, active: list[_State]) -> list[float]:
        """Relative CI half-widths of each median and of each ratio to the reference.

        Uses :func:`perflab.analyze.stats.median_ci` (each run is its own
        process, so one value per group: the ordinary bootstrap) and
        ``block_ratio_ci`` (interleaved runs paired by block), as the table does.
        """
        import numpy as np

        from perflab.analyze import stats

        self._checks += 1
        rng = np.random.default_rng(
            None if self.settings.seed is None else [self.settings.seed, self._checks]
        )
        walls = {id(st): [np.asarray(st.ok_walls)] for st in active}
        widths = [
            stats.median_ci(walls[id(st)], self.settings.confidence, 1000, rng).relative_half_width
            for st in active
        ]
        ref = self._reference(active, walls)
        for st in active:
            if st is not ref:
                widths.append(
                    stats.block_ratio_ci(
                        st.ok_walls,
                        st.ok_blocks,
                        ref.ok_walls,
                        ref.ok_blocks,
                        self.settings.confidence,
                        1000,
                        rng,
                    ).relative_half_width
                )
        return widths

    def _reference(self, active: list[_State], walls: dict[int, Any]) -> _State:
        """The --reference command if it is active, else the one with the lowest median."""
        index = self.settings.reference
        if index is not None and self.states[index] in active:
            return self.states[index]
        import numpy as np

        return min(active, key=lambda st: float(np.median(walls[id(st)][0])))
