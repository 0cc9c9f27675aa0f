"""In-process repetitions (:class:`perflab.engines.run.inprocess.InProcessBackend`): only the
first repetition's first call is the process's first call of the callable."""

from __future__ import annotations

from perflab.engines import clocks
from perflab.engines.run.inprocess import InProcessBackend
from perflab.engines.run.runner import Runner, Settings
from perflab.engines.run.suite import BenchSpec, Case


def _settings(processes: int, **given: object) -> Settings:
    """Short repetitions: ``processes`` of them, a loose precision, a long budget."""
    return Settings(
        precision=0.5,
        budget_s=30,
        min_processes=processes,
        max_processes=processes,
        **given,  # type: ignore[arg-type]
    )


def runner_of(spec: BenchSpec, settings: Settings, backend: InProcessBackend) -> Runner:
    """The harness runner of one benchmark on ``backend``, with this machine's timer."""
    timer = clocks.measure_timer()
    return Runner(
        "<test>",
        [Case(spec, {}, 0)],
        settings,
        max(timer.min_sample_ns, settings.min_sample_ns),
        timer.error_ns,
        backend=backend,
    )


def test_only_the_first_repetition_records_a_first_call() -> None:
    backend = InProcessBackend(sum, (range(50),))
    # short repetitions, no allocation pass: what is checked is which repetition records
    # a first call, not what the samples read
    settings = _settings(processes=3, process_seconds=0.02, warmup_max_s=0.05, allocations=False)
    runner = runner_of(BenchSpec(sum, "sum", ""), settings, backend)
    [bench] = runner.run()
    assert backend.repetitions == 3 and len(bench.processes) == 3
    assert bench.processes[0].cold_ns is not None and bench.processes[0].cold_ns > 0
    assert [p.cold_ns for p in bench.processes[1:]] == [None, None]
    assert all(p.samples for p in bench.processes)  # the rest of the sequence still ran


def test_the_calling_process_heap_is_frozen_while_measuring() -> None:
    """issue 29 §7: the allocation pass's gc.collect() walked the whole pytest heap (~120 ms
    each, 7 of 10 s for three tiny tests); the heap is frozen for the measurement and
    unfrozen after it, and a freeze the caller made is left as it was."""
    import gc

    seen: list[int] = []

    def probe() -> int:
        seen.append(gc.get_freeze_count())
        return 1

    settings = _settings(processes=1, process_seconds=0.01, warmup_max_s=0.02, allocations=True)
    for caller_froze in (False, True):
        seen.clear()
        if caller_froze:
            gc.freeze()
        before = gc.get_freeze_count()
        backend = InProcessBackend(probe)
        runner_of(BenchSpec(probe, "probe", ""), settings, backend).run()
        assert seen and min(seen) > 0
        assert (gc.get_freeze_count() > 0) == caller_froze == (before > 0)
        gc.unfreeze()
