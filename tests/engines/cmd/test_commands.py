"""The command engine with a fake spawner and a fake clock: deterministic, no real timing."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perflab.analyze.cmd import summarize_commands
from perflab.engines.cmd.commands import CommandRunner, CommandSettings
from perflab.engines.cmd.parameters import CommandSpec
from perflab.engines.cmd.spawn import SerialSpawner, SpawnOutcome

MS = 1_000_000


class FakeClock:
    """Monotonic seconds that only move when the fake spawner runs something."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class FakeSpawner(SerialSpawner):
    """Answers each argv from a behaviour ``(call number) -> SpawnOutcome`` and advances the clock.

    Hooks (``sh -c TEXT``) are keyed by TEXT, commands by argv[0]; unknown keys take 1 ms.
    """

    def __init__(
        self, clock: FakeClock, behaviours: dict[str, Callable[[int], SpawnOutcome]] | None = None
    ) -> None:
        self.clock = clock
        self.behaviours = behaviours or {}
        self.calls: list[str] = []
        self.counts: dict[str, int] = {}

    def run(self, argv, timeout_s):  # type: ignore[no-untyped-def]
        key = argv[-1] if argv[0] == "/bin/sh" else argv[0]
        self.calls.append(key)
        n = self.counts[key] = self.counts.get(key, 0) + 1
        outcome = self.behaviours.get(key, lambda _: SpawnOutcome(MS))(n)
        if timeout_s is not None and outcome.wall_ns > timeout_s * 1e9:
            outcome = SpawnOutcome(int(timeout_s * 1e9), exit_code=-9, timed_out=True)
        outcome = dataclasses.replace(outcome, start_ns=round(self.clock.now * 1e9))
        self.clock.now += outcome.wall_ns * 1e-9
        return outcome


def spec(name: str, **hooks: str) -> CommandSpec:
    return CommandSpec(
        name, name, (name,), {}, {h: ("/bin/sh", "-c", text) for h, text in hooks.items()}
    )


def constant(ms: float, **kw) -> Callable[[int], SpawnOutcome]:  # type: ignore[no-untyped-def]
    return lambda n: SpawnOutcome(int(ms * MS), **kw)


def noisy(ms: float, spread: float, seed: int) -> Callable[[int], SpawnOutcome]:
    rng = np.random.default_rng(seed)
    return lambda n: SpawnOutcome(int(ms * MS * rng.lognormal(0, spread)))


def runner(specs, behaviours=None, **kw):  # type: ignore[no-untyped-def]
    clock = FakeClock()
    spawner = FakeSpawner(clock, behaviours)
    kw.setdefault("seed", 1)
    return CommandRunner(specs, CommandSettings(**kw), spawner, clock=clock), spawner


def order(benches) -> list[str]:  # type: ignore[no-untyped-def]
    runs = sorted((r.index, b.name) for b in benches for r in b.runs if not r.warmup)
    return [name for _, name in runs]


def test_interleaved_blocks_run_every_command_once_in_varying_order() -> None:
    engine, _ = runner([spec("A"), spec("B"), spec("C")], min_runs=20, max_runs=20, precision=1e-9)
    names = order(engine.run())
    blocks = [tuple(names[i : i + 3]) for i in range(0, len(names), 3)]
    assert len(blocks) == 20
    assert all(sorted(b) == ["A", "B", "C"] for b in blocks)
    assert len(set(blocks)) > 1, "the order within blocks must be randomized"


def test_each_interleaved_run_records_its_block_and_sequential_runs_none() -> None:
    engine, _ = runner([spec("A"), spec("B")], min_runs=6, max_runs=6, warmup=1, precision=1e-9)
    benches = engine.run()
    timed = {b.name: [r.block for r in b.runs if not r.warmup] for b in benches}
    assert timed["A"] == timed["B"] and len(set(timed["A"])) == 6
    runs = sorted((r for b in benches for r in b.runs if not r.warmup), key=lambda r: r.index)
    assert [r.block for r in runs] == sorted(r.block for r in runs), "blocks follow time"
    engine, _ = runner([spec("A"), spec("B")], min_runs=3, max_runs=3, interleave=False)
    assert {r.block for b in engine.run() for r in b.runs} == {None}


def test_drift_common_to_both_commands_cancels_in_the_ratio_ci() -> None:
    # The machine slows 3× for the second half of the runs; B is always 1.1× A.
    # Paired by block, the ratio's CI stays tight around 1.1; resampled
    # independently, the drift would make it span most of 1.1 × [1/3, 3].
    calls = {"A": 0, "B": 0}

    def drifting(base: float) -> Callable[[int], SpawnOutcome]:
        def run(n: int) -> SpawnOutcome:
            calls["A" if base == 10 else "B"] += 1
            slow = 3.0 if n > 30 else 1.0
            return SpawnOutcome(int(base * slow * MS * (1 + 0.001 * (n % 7))))

        return run

    engine, _ = runner(
        [spec("A"), spec("B")],
        {"A": drifting(10), "B": drifting(11)},
        min_runs=60,
        max_runs=60,
        precision=1e-9,
    )
    benches = engine.run()
    paired = summarize_commands(benches, reference=0)[1].ratio
    assert paired is not None
    assert paired.ci_low <= 1.1 <= paired.ci_high or abs(paired.value - 1.1) < 0.02
    assert paired.ci_high - paired.ci_low < 0.05
    for bench in benches:
        for run in bench.runs:
            run.block = None
    independent = summarize_commands(benches, reference=0)[1].ratio
    assert independent is not None and independent.ci_high - independent.ci_low > 1.0


def test_no_interleave_runs_all_of_a_then_all_of_b() -> None:
    engine, _ = runner([spec("A"), spec("B")], min_runs=5, max_runs=5, interleave=False)
    assert order(engine.run()) == ["A"] * 5 + ["B"] * 5


def test_same_seed_same_order_and_runs_are_indexed_in_time() -> None:
    first = order(runner([spec("A"), spec("B")], min_runs=8, max_runs=8, seed=7)[0].run())
    second = order(runner([spec("A"), spec("B")], min_runs=8, max_runs=8, seed=7)[0].run())
    assert first == second
    engine, _ = runner([spec("A"), spec("B")], min_runs=8, max_runs=8)
    runs = sorted((r for b in engine.run() for r in b.runs), key=lambda r: r.index)
    assert [r.started_s for r in runs] == sorted(r.started_s for r in runs)


def test_constant_timings_stop_for_precision_at_min_runs() -> None:
    engine, _ = runner([spec("A"), spec("B")], {"A": constant(10), "B": constant(20)}, min_runs=12)
    benches = engine.run()
    assert [b.stop_reason for b in benches] == ["precision", "precision"]
    assert [len(b.runs) for b in benches] == [12, 12]


def test_noise_needs_more_runs_and_ratios_need_more_than_medians() -> None:
    behaviours = {"A": noisy(10, 0.1, 1), "B": noisy(12, 0.1, 2)}
    alone, _ = runner([spec("A")], {"A": noisy(10, 0.1, 1)}, budget_s=1e9, max_runs=5000)
    pair, _ = runner([spec("A"), spec("B")], behaviours, budget_s=1e9, max_runs=5000)
    alone_runs = len(alone.run()[0].runs)
    pair_runs = len(pair.run()[0].runs)
    assert alone_runs > 10, "10% noise can't give a ±1% median CI in 10 runs"
    # the ratio of two medians has a CI about √2 wider than either median
    assert pair_runs > alone_runs
    assert pair.states[0].bench.stop_reason == "precision"


def test_budget_stops_the_set_when_any_command_spent_it() -> None:
    engine, _ = runner(
        [spec("A"), spec("B")],
        {"A": noisy(1000, 0.3, 1), "B": constant(10)},
        budget_s=5,
        min_runs=2,
    )
    benches = engine.run()
    assert [b.stop_reason for b in benches] == ["budget", "budget"]
    assert len(benches[0].runs) == len(benches[1].runs)
    assert 4 <= len(benches[0].runs) <= 8


def test_max_runs_stops_noisy_commands() -> None:
    engine, _ = runner([spec("A")], {"A": noisy(10, 0.5, 3)}, max_runs=15, budget_s=1e9)
    (bench,) = engine.run()
    assert bench.stop_reason == "max-runs" and len(bench.runs) == 15


def fails_at(k: int, code: int = 1) -> Callable[[int], SpawnOutcome]:
    return lambda n: SpawnOutcome(MS, exit_code=code if n >= k else 0)


def test_nonzero_exit_fails_that_command_and_the_others_go_on() -> None:
    engine, _ = runner([spec("A"), spec("B")], {"A": fails_at(3)}, min_runs=10)
    a, b = engine.run()
    assert a.failed and a.stop_reason == "failed"
    assert "status 1" in a.error and "--ignore-failure" in a.error
    assert [r.ok for r in a.runs] == [True, True, False]
    assert not b.failed and b.stop_reason == "precision" and len(b.runs) == 10


def test_exit_127_under_a_shell_says_not_found() -> None:
    engine, _ = runner([spec("A")], {"A": fails_at(1, 127)})
    assert "could not find the command" in engine.run()[0].error


def test_ignore_failure_accepts_every_code_and_codes_accept_only_those() -> None:
    engine, _ = runner([spec("A")], {"A": fails_at(1, 2)}, ignore_all=True, min_runs=10)
    (a,) = engine.run()
    assert not a.failed and all(r.ok for r in a.runs) and len(a.runs) == 10
    engine, _ = runner(
        [spec("A"), spec("B")],
        {"A": fails_at(1, 2), "B": fails_at(1, 3)},
        ignore_codes=frozenset({2}),
        min_runs=10,
    )
    a, b = engine.run()
    assert not a.failed and b.failed and "status 3" in b.error


def test_timeout_kills_the_run_and_counts_it_failed() -> None:
    engine, _ = runner([spec("A"), spec("B")], {"A": constant(5000)}, timeout_s=1)
    a, b = engine.run()
    assert a.failed and "timed out after 1 s" in a.error
    assert a.runs[0].timed_out and not a.runs[0].ok
    assert not b.failed


def test_ignore_failure_keeps_timeouts_apart_from_the_statistics() -> None:
    def sometimes_hangs(n: int) -> SpawnOutcome:
        return SpawnOutcome(5000 * MS if n % 4 == 0 else 10 * MS)

    engine, _ = runner(
        [spec("A")], {"A": sometimes_hangs}, timeout_s=1, ignore_all=True, max_runs=40, budget_s=1e9
    )
    (a,) = engine.run()
    failed = [r for r in a.runs if not r.ok]
    assert failed and all(r.timed_out for r in failed) and not a.failed
    (summary,) = summarize_commands([a])
    assert summary.failed == len(failed) and summary.runs == len(a.runs) - len(failed)
    assert summary.median_s == pytest.approx(0.010)


def test_hooks_run_in_order_around_interleaved_runs() -> None:
    specs = [
        spec("A", setup="setA", prepare="prepA", conclude="concA", cleanup="cleanA"),
        spec("B", setup="setB", prepare="prepB", cleanup="cleanB"),
    ]
    engine, spawner = runner(specs, min_runs=3, max_runs=3, warmup=1)
    engine.run()
    calls = spawner.calls
    assert calls[:2] == ["setA", "setB"] and calls[-2:] == ["cleanA", "cleanB"]
    for i, key in enumerate(calls):
        if key == "A":
            assert calls[i - 1] == "prepA" and calls[i + 1] == "concA"
        if key == "B":
            assert calls[i - 1] == "prepB"
    assert calls.count("A") == 4 and calls.count("prepA") == 4


def test_sequential_hooks_wrap_each_command() -> None:
    specs = [spec("A", setup="setA", cleanup="cleanA"), spec("B", setup="setB", cleanup="cleanB")]
    engine, spawner = runner(specs, min_runs=2, max_runs=2, interleave=False)
    engine.run()
    assert spawner.calls == ["setA", "A", "A", "cleanA", "setB", "B", "B", "cleanB"]


def test_a_failing_prepare_fails_the_command_but_cleanup_still_runs() -> None:
    specs = [spec("A", prepare="prep", cleanup="clean"), spec("B")]
    engine, spawner = runner(specs, {"prep": fails_at(2)})
    a, b = engine.run()
    assert a.failed and "--prepare 'prep' exited with status 1" in a.error
    assert len(a.runs) == 1 and not b.failed and "clean" in spawner.calls


def test_warmup_runs_are_recorded_but_kept_out_of_the_statistics() -> None:
    engine, _ = runner(
        [spec("A")],
        {"A": lambda n: SpawnOutcome(100 * MS if n <= 2 else 10 * MS)},
        warmup=2,
        min_runs=10,
    )
    (a,) = engine.run()
    assert [r.warmup for r in a.runs[:3]] == [True, True, False]
    (summary,) = summarize_commands([a])
    assert summary.runs == 10 and summary.warmup == 2 and summary.max_s == pytest.approx(0.01)


def test_ctrl_c_keeps_the_runs_measured_so_far_and_cleans_up() -> None:
    def interrupt_at_7(n: int) -> SpawnOutcome:
        if n == 7:
            raise KeyboardInterrupt
        return SpawnOutcome(MS)

    specs = [spec("A", cleanup="clean"), spec("B")]
    engine, spawner = runner(specs, {"A": interrupt_at_7}, min_runs=50, max_runs=50)
    a, b = engine.run()
    assert engine.interrupted
    assert len(a.runs) == 6 and len(b.runs) >= 6
    assert a.stop_reason == b.stop_reason == "interrupted"
    assert spawner.calls[-1] == "clean"


def test_a_command_that_cannot_start_is_a_start_error() -> None:
    def enoexec(n: int) -> SpawnOutcome:
        raise OSError(8, "Exec format error")

    engine, _ = runner([spec("A"), spec("B")], {"A": enoexec})
    a, b = engine.run()
    assert engine.start_errors == 1 and a.failed and "Exec format error" in a.error
    assert not b.failed


def test_spawn_overhead_is_probed_first_and_never_subtracted() -> None:
    clock = FakeClock()
    spawner = FakeSpawner(
        clock, {"true": constant(0.5, max_rss_bytes=9_000_000), "A": constant(10)}
    )
    engine = CommandRunner(
        [spec("A")], CommandSettings(overhead_runs=5), spawner, ("true",), clock=clock
    )
    (a,) = engine.run()
    assert spawner.calls[:5] == ["true"] * 5
    assert engine.spawn_overhead_ns == [500_000] * 5 and engine.rss_floor_bytes == 9_000_000
    assert {r.wall_ns for r in a.runs} == {10 * MS}


def test_a_tree_peak_is_never_below_the_largest_process_that_wait4_saw() -> None:
    """--memory: a child that lived between two readings is missed by the sampled sums,
    not by wait4's max RSS; a max RSS under twice the empty process's may be the spawning
    helper's pages and floors nothing."""
    clock = FakeClock()
    sampled = ([0.01, 0.02], [5_000_000, 6_000_000])
    spawner = FakeSpawner(
        clock,
        {
            "true": constant(0.5, max_rss_bytes=9_000_000),
            "A": constant(10, max_rss_bytes=200_000_000, memory=sampled),
            "B": constant(10, max_rss_bytes=17_000_000, memory=sampled),
        },
    )
    engine = CommandRunner(
        [spec("A"), spec("B")],
        CommandSettings(min_runs=3, max_runs=3),
        spawner,
        ("true",),
        clock=clock,
    )
    a, b = engine.run()
    assert {r.tree_rss_peak_bytes for r in a.runs} == {200_000_000}
    assert {r.tree_rss_peak_bytes for r in b.runs} == {6_000_000}
    assert {r.tree_rss_growth_bytes for r in a.runs} == {1_000_000}


def test_reference_drives_the_ratio_criterion() -> None:
    behaviours = {"A": constant(10), "B": constant(20), "C": constant(30)}
    engine, _ = runner([spec("A"), spec("B"), spec("C")], behaviours, reference=2)
    engine.run()
    assert (
        engine._reference(engine.states, {id(s): [s.ok_walls] for s in engine.states})
        is engine.states[2]
    )


@settings(max_examples=25, deadline=None)
@given(n_commands=st.integers(1, 5), runs=st.integers(2, 12), seed=st.integers(0, 2**16))
def test_property_every_block_is_a_permutation(n_commands: int, runs: int, seed: int) -> None:
    names = [f"c{i}" for i in range(n_commands)]
    engine, _ = runner([spec(n) for n in names], min_runs=runs, max_runs=runs, seed=seed)
    got = order(engine.run())
    assert len(got) == n_commands * runs
    for i in range(0, len(got), n_commands):
        assert sorted(got[i : i + n_commands]) == names
