"""In-process repetitions (:class:`perflab.engines.run.inprocess.InProcessBackend`): only the
first repetition's first call is the process's first call of the callable."""

from __future__ import annotations

from perflab.engines import clocks
from perflab.engines.run.inprocess import InProcessBackend
from perflab.engines.run.runner import Runner, Settings
from perflab.engines.run.suite import BenchSpec, Case


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
    settings = Settings(
        precision=0.5,
        budget_s=30,
        min_processes=3,
        max_processes=3,
        process_seconds=0.02,
        warmup_max_s=0.05,
        allocations=False,
    )
    runner = runner_of(BenchSpec(sum, "sum", ""), settings, backend)
    [bench] = runner.run()
    assert backend.repetitions == 3 and len(bench.processes) == 3
    assert bench.processes[0].cold_ns is not None and bench.processes[0].cold_ns > 0
    assert [p.cold_ns for p in bench.processes[1:]] == [None, None]
    assert all(p.samples for p in bench.processes)  # the rest of the sequence still ran
