"""``run --count instructions --profile`` (issue 31 §2): each benchmark's instructions
per function from its counted workers' Callgrind files, over the counted samples only,
from its first counted process whatever order the workers ended in. Instruction counts
repeat: nothing here depends on the machine's speed."""

from __future__ import annotations

from pathlib import Path

from perflab import model
from perflab.engines.callgrind_profile import instruction_stacks
from perflab.engines.run import counted
from perflab.model import Benchmark, Process
from perflab.model.counts import Counts
from tests.conftest import debian_tool

DUMP = """# callgrind format
version: 1
creator: callgrind-3.19.0
pid: 4242
cmd:  python3 -m perflab.engines.run.worker
part: {part}

desc: I1 cache:
desc: Trigger: Client Request: perflab:{reason}

positions: line
events: Ir
summary: {total}

ob=(1) /usr/lib/libpython3.so
fl=(1) ???
fn=(1) list_sort_impl
0 {sort}
fn=(2) PyLong_FromLong
0 {long}
totals: {total}
"""


def _dump(folder: Path, part: int, reason: str, sort: int, long: int) -> None:
    text = DUMP.format(part=part, reason=reason, sort=sort, long=long, total=sort + long)
    (folder / f"callgrind.out.4242.{part}").write_text(text)


def test_only_the_counted_samples_dumps_and_no_process_root(tmp_path: Path) -> None:
    _dump(tmp_path, 1, "cold", 10_000, 10_000)
    _dump(tmp_path, 2, "sample:0", 700, 300)
    _dump(tmp_path, 3, "sample:1", 700, 300)
    _dump(tmp_path, 4, "empty:0", 0, 5)
    stacks = instruction_stacks(tmp_path, "sample:", by_process=False)
    assert stacks == {
        "list_sort_impl (libpython3.so)": 1400,
        "PyLong_FromLong (libpython3.so)": 600,
    }
    rooted = instruction_stacks(tmp_path)  # cmd's reading: every file, by process
    assert sum(rooted.values()) == 20_000 + 2_000 + 5
    assert all(s.startswith("process: ") for s in rooted)


def _proc(index: int, pid: int) -> Process:
    proc = Process(index=index, pid=pid, started_s=0.0, timer_error_ns=0.0)
    proc.counts = Counts(["Ir"], 10, [5], samples=[[100]] * 5, empty=[[1]] * 3, valgrind="3.19.0")
    return proc


def test_the_first_counted_process_is_the_profile_whatever_order_they_end_in() -> None:
    bench = Benchmark(name="f")
    procs = [_proc(i, 100 + i) for i in range(3)]
    bench.processes = list(procs)
    for proc in (procs[2], procs[0], procs[1]):  # the order parallel workers ended in
        stacks = {f"f{proc.index} (lib.so)": 1000 + proc.index}
        counted.keep_profile(bench, proc, {counted.FUNCTIONS: stacks}, 2.0)
    profile = bench.profile
    assert profile is not None and profile.kind == "instructions"
    assert profile.stacks == {"f0 (lib.so)": 1000} and profile.pids == [100]
    assert profile.calls == 50 and profile.sampler == "callgrind 3.19.0"
    assert "counted process 1" in profile.note
    counted.keep_profile(Benchmark(name="g"), procs[0], {}, 1.0)  # no FUNCTIONS: no profile


BENCH = """
import perflab

def hot(n):
    return sorted(range(n, 0, -1))

@perflab.bench
def sort_reversed():
    return hot(2000)
"""


def test_run_count_instructions_profile(tmp_path: Path, perflab_cli) -> None:  # type: ignore[no-untyped-def]
    debian_tool("valgrind")
    file = tmp_path / "bench_sort.py"
    file.write_text(BENCH)
    out = tmp_path / "c.json"
    done = perflab_cli(
        "run", str(file), "--count", "instructions", "--profile", "--no-history",
        "--json", str(out), timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (bench,) = model.load(str(out)).benchmarks
    profile = bench.profile
    assert profile.kind == "instructions" and profile.sampler.startswith("callgrind")
    first = bench.processes[0]
    assert profile.pids == [first.pid]
    # the profile is the counted samples' instructions: their functions' exclusive Ir add
    # up to each dump's `totals:` line exactly; the counts read its `summary:` line, which
    # Callgrind writes a few Ir lower (8 in a dump of 310,208: the client request's own)
    ir = sum(s[first.counts.events.index("Ir")] for s in first.counts.samples)
    assert abs(profile.total - ir) <= 1e-5 * ir
    assert not any(s.startswith("process: ") for s in profile.stacks)
    sort_share = (
        sum(v for k, v in profile.stacks.items() if k.startswith("list_sort")) / profile.total
    )
    assert sort_share > 0.05, profile.stacks
    assert "profile: sort_reversed" in done.stdout and "list_sort_impl" in done.stdout
    assert (tmp_path / "c.profile").is_dir()
    shown = perflab_cli("show", str(out), "--profile")
    assert shown.returncode == 0 and "list_sort_impl" in shown.stdout
