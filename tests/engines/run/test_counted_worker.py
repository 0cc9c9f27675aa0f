"""The lean counted worker (engines/run/counted_worker.py): what it loads before its
counted samples, the events it writes after them, the type attribute cache emptied
before each sample, and its own dump read from the file's header."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from perflab.engines import callgrind
from perflab.engines.run import counted, counting
from perflab.engines.run.counted_worker import BEFORE_SAMPLES
from perflab.model.counts import Counts

REPO = Path(__file__).resolve().parents[3]
#: what the timed worker loads and a counted process never uses before its samples
TIMED_ONLY = (
    "perflab.engines.run.worker",
    "perflab.engines.run.sampling",
    "perflab.engines.run.counters",
    "perflab.engines.run.pairing",
    "perflab.engines.integrity",
    "perflab.engines.layout",
    "perflab.engines.callgrind",
    "statistics",
    "tracemalloc",
)

BENCH = """
import perflab

def setup():
    return [3, 1, 2]

@perflab.bench(setup=setup)
def sort_it(xs):
    return sorted(xs)
"""

#: runs the counted worker's whole sequence in a fresh process with a fake native core
#: (no Valgrind): the core records the modules loaded when the first counted sample
#: starts, and the order of cache clearing and zeroing
FAKE_CORE_RUN = """
import json, sys
from perflab.engines.run import counted_worker, counting
log = []
real_clear = sys._clear_type_cache
def clear():
    log.append("clear")
    real_clear()
sys._clear_type_cache = clear
class Core:
    def valgrind_running(self): return 1
    def callgrind_start_instrumentation(self): pass
    def callgrind_stop_instrumentation(self): pass
    def callgrind_zero_stats(self): log.append("zero")
    def callgrind_dump_stats(self, label):
        log.append(label)
        if label == "perflab:sample:0":
            log.append(sorted(sys.modules))
counting._core = lambda: Core()
counting._own_dump_ir = lambda folder, reason, part: 30_000_000  # one call a sample
events = []
plan = json.loads(sys.argv[1])
result, metrics = counted_worker.count_case(plan, lambda e, **f: events.append(e))
print(json.dumps({"events": events, "log": log, "result": result}))
"""


def _plan(bench: Path, **extra: object) -> dict:
    count = counted.plan_entry(cache_sim=False)
    count["dir"] = str(bench.parent)
    return {"file": str(bench), "index": 0, "params": {}, "count": count, **extra}


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO / "python"), "PYTHONHASHSEED": "0"}


def test_the_counted_worker_loads_none_of_the_timed_workers_modules_before_its_samples(
    tmp_path: Path,
) -> None:
    bench = tmp_path / "sort_bench.py"
    bench.write_text(BENCH)
    done = subprocess.run(
        [sys.executable, "-P", "-c", FAKE_CORE_RUN, json.dumps(_plan(bench))],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    modules = next(entry for entry in out["log"] if isinstance(entry, list))
    assert not [m for m in TIMED_ONLY if m in modules]
    needed = set(BEFORE_SAMPLES) - {"perflab._core"}  # the fake core stands in for it
    assert needed <= set(modules)
    assert out["result"] == [1, 2, 3]
    assert out["events"] == ["start", "count_start", "calibrated", "warmup", "counted"]


def test_every_counted_sample_starts_with_the_type_cache_emptied_outside_the_bracket(
    tmp_path: Path,
) -> None:
    bench = tmp_path / "sort_bench.py"
    bench.write_text(BENCH)
    done = subprocess.run(
        [sys.executable, "-P", "-c", FAKE_CORE_RUN, json.dumps(_plan(bench))],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    log = [e for e in json.loads(done.stdout)["log"] if isinstance(e, str)]
    dumps = [e for e in log if e.startswith("perflab:")]
    samples = [d for d in dumps if d != "perflab:cold"]
    assert samples == ["perflab:calibrate", "perflab:sample:0", "perflab:sample:1"] + [
        f"perflab:empty:{i}" for i in range(counted.EMPTY_SAMPLES)
    ]
    for label in samples:  # clear, zero, (the calls), dump: nothing between
        at = log.index(label)
        assert log[at - 2 : at] == ["clear", "zero"]
    assert log.count("clear") == len(samples)  # the cold call is counted as it comes


def test_the_counted_worker_writes_its_events_after_counting_and_reports_failures(
    tmp_path: Path,
) -> None:
    """Outside Valgrind the counted sequence refuses to run: the worker exits 3 and the
    pipe carries the events so far and the error, named by phase."""
    bench = tmp_path / "sort_bench.py"
    bench.write_text(BENCH)
    read_fd, write_fd = os.pipe()
    proc = subprocess.Popen(
        [sys.executable, "-P", "-m", "perflab.engines.run.counted_worker"],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        pass_fds=(write_fd,),
        env=_env(),
    )
    os.close(write_fd)
    _, err = proc.communicate(json.dumps({**_plan(bench), "fd": write_fd}).encode(), timeout=120)
    with os.fdopen(read_fd) as pipe:
        events = [json.loads(line) for line in pipe]
    assert proc.returncode == 3, err
    assert [e["event"] for e in events] == ["start", "error"]
    assert events[1]["phase"] == "counting" and events[1]["type"] == "NotUnderValgrind"


def test_perflab_runs_the_counted_worker_when_counting_and_the_timed_one_otherwise() -> None:
    assert counted.worker_argv({"count": counted.plan_entry(False)})[-1] == (
        "perflab.engines.run.counted_worker"
    )
    assert counted.worker_argv({"count": None})[-1] == "perflab.engines.run.worker"


def test_the_counts_carry_whether_the_type_cache_was_emptied() -> None:
    dump = callgrind.Dump(1, 1, None, "", {"Ir": 100})
    dumps = {"cold": dump, "sample:0": dump, "empty:0": dump}
    events = [
        {"event": "count_start", "gc_enabled": True, "type_cache_cleared": True},
        {"event": "counted", "iterations": 1, "samples": 1, "empty_samples": 1},
    ]
    record = counted.counts_record(dumps, events, "3.19.0")
    assert record is not None and record.type_cache_cleared is True
    assert Counts.from_dict(record.to_dict()).type_cache_cleared is True
    events[0].pop("type_cache_cleared")  # a worker of an older perflab: unknown
    assert counted.counts_record(dumps, events, "3.19.0").type_cache_cleared is None  # type: ignore[union-attr]


def test_a_schema_3_file_loads_with_the_field_unknown() -> None:
    from perflab.model.versions import SCHEMA_VERSION, migrate

    data = migrate({"tool": "perflab", "schema_version": 3, "benchmarks": []})
    assert data["schema_version"] == SCHEMA_VERSION == 4


def test_the_dump_prefix_is_callgrinds() -> None:
    assert counting.DUMP_PREFIX == callgrind.DUMP_PREFIX


HEADER = b"""# callgrind format
version: 1
creator: callgrind-3.19.0
pid: 4242
cmd:  python -m perflab.engines.run.counted_worker
part: 2

desc: I1 cache:
desc: Trigger: Client Request: perflab:calibrate

positions: line
events: Ir Dr Dw
summary: 29222017 100 50
"""


def test_the_header_of_a_dump_gives_its_instructions_by_reason() -> None:
    assert counting.header_ir(HEADER, "calibrate") == 29_222_017
    assert counting.header_ir(HEADER, "cold") is None  # another dump's file
    assert counting.header_ir(HEADER.replace(b"events: Ir", b"events: Dr"), "calibrate") is None
    assert counting.header_ir(HEADER.split(b"summary")[0], "calibrate") is None  # cut short


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="Valgrind is not installed")
def test_a_worker_reads_its_own_dump_as_the_parent_does(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        from perflab import _core
        from perflab.engines.run.counting import counted_loop, _own_dump_ir
        _core.callgrind_start_instrumentation()
        counted_loop(lambda: sum(range(500)), 10, "calibrate")
        _core.callgrind_stop_instrumentation()
        print(_own_dump_ir({str(tmp_path)!r}, "calibrate", 1))
        """
    )
    argv = [*callgrind.valgrind_command(tmp_path), sys.executable, "-c", script]
    done = subprocess.run(
        argv, capture_output=True, text=True, env=_env(), timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    parent = callgrind.dumps_by_reason(callgrind.read_dumps(tmp_path))["calibrate"]
    assert int(done.stdout.split()[-1]) == parent.events["Ir"] > 0


@pytest.mark.parametrize("plan", [{}, {"file": "b.py", "count": {"dir": "/tmp/x", "samples": 3}}])
def test_the_plans_text_is_as_long_whatever_the_pipes_number(plan: dict) -> None:
    texts = [counted.plan_text(plan, fd) for fd in (3, 9, 10, 123, 65535)]
    assert len({len(t) for t in texts}) == 1
    assert [json.loads(t) for t in texts] == [{"fd": fd, **plan} for fd in (3, 9, 10, 123, 65535)]


def test_a_counted_plan_sees_its_code_at_one_fixed_path(tmp_path: Path) -> None:
    """Two checkouts at paths of other lengths and depths: both plans name their files
    and redirect through the same string, /proc/self/fd/N, N the descriptor the worker
    moves the root folder it inherits to (what it then lists is that checkout)."""
    from perflab.engines.run.counted_worker import ALIAS, take_root

    current = str(tmp_path / "a")
    for root in (tmp_path / "a", tmp_path / "b/c/d/much-longer"):
        (root / "pkg").mkdir(parents=True)
        (root / "pkg" / f"{root.name}.txt").write_text("")
        plan = {"file": str(root / "pkg" / "bench.py"), "redirect": [current, str(root)]}
        counted.alias_paths(plan)
        assert plan["file"] == f"{ALIAS}/pkg/bench.py"
        assert plan["redirect"] == [current, ALIAS] and plan["alias"] == [ALIAS, str(root)]
        text = counted.plan_text(plan, 7)
        assert text.startswith('{"fd":          7, "root_fd": ')
        assert json.loads(text)["root_fd"] == plan["root_fd"]
        take_root(plan)  # here, as the worker does (the descriptor moves to ALIAS_FD)
        assert os.listdir(f"{ALIAS}/pkg") == [f"{root.name}.txt"]
        os.close(int(ALIAS.rsplit("/", 1)[1]))
    alone = {"file": str(tmp_path / "a" / "pkg" / "bench.py")}  # no --compare-to
    counted.alias_paths(alone)
    os.close(alone.pop("root_fd"))
    assert alone["file"] == f"{ALIAS}/bench.py" and "redirect" not in alone


def test_a_counted_workers_errors_name_the_real_files() -> None:
    from perflab.engines.run.counted_worker import _real_paths

    plan = {"alias": ["/tmp/perflab-callgrind-x/r", "/home/me/project"]}
    exc = ValueError("/tmp/perflab-callgrind-x/r/bench.py:3: boom")
    fields = _real_paths(plan, "load", exc)
    assert fields["message"] == "/home/me/project/bench.py:3: boom"
    assert fields["phase"] == "load" and "perflab-callgrind" not in fields["traceback"]
    assert _real_paths({}, "load", exc)["message"] == str(exc)
