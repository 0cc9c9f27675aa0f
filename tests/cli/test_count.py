"""``--count instructions`` end to end, through the real entry point and real Valgrind:
a counted run of a tiny benchmark (Ir per op, the band, the cold count, the GC state and
the layouts recorded), show, compare (same on a recount, slower with 10% more work), the
--fail-on gate, and perflab cmd's counted runs. Skipped where Valgrind is missing.
Counts, not times: nothing here depends on the machine's speed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from perflab.engines.run.counted import COUNT_SAMPLES, EMPTY_SAMPLES
from tests.cli.test_run_paired import _git, _repo

pytestmark = pytest.mark.skipif(
    shutil.which("valgrind") is None, reason="Valgrind is not installed (apt-get install valgrind)"
)

BENCH = """
import os
import perflab

WORK = int(os.environ.get("COUNT_TEST_WORK", "100"))

@perflab.bench()
def loop():
    total = 0
    for i in range(WORK * 100):
        total += i % 7
    return total
"""


def perflab(
    *argv: str, work: int = 100, cwd: Path | None = None, **extra_env: str
) -> subprocess.CompletedProcess[str]:
    """``python -m perflab ARGV`` with the benchmark's work set (and ``extra_env``)."""
    env = {**os.environ, "COUNT_TEST_WORK": str(work), "PERFLAB_HISTORY": "off", **extra_env}
    return subprocess.run(
        [sys.executable, "-m", "perflab", *argv],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
        cwd=cwd,
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Counted runs: a (work 100), a2 (a recount of a), b (work 110)."""
    folder = tmp_path_factory.mktemp("count")
    bench = folder / "bench_count.py"
    bench.write_text(BENCH)
    out = {}
    for name, work in (("a", 100), ("a2", 100), ("b", 110)):
        path = folder / f"{name}.json"
        done = perflab(
            "run",
            str(bench),
            "--count",
            "instructions",
            "--json",
            str(path),
            "--quiet",
            "--format",
            "markdown",
            work=work,
        )
        assert done.returncode == 0, done.stderr
        (folder / f"{name}.stdout").write_text(done.stdout)
        out[name] = path
    return out


def test_a_counted_run_records_and_prints_instructions(runs: dict[str, Path]) -> None:
    data = json.loads(runs["a"].read_text())
    assert data["settings"]["count"] == "instructions"
    [bench] = data["benchmarks"]
    procs = bench["processes"]
    assert len(procs) == 3  # the layout band
    assert len({p["layout"]["hash_seed"] for p in procs}) == 3
    for p in procs:
        c = p["counts"]
        assert c["events"] == ["Ir"] and c["iterations"] >= 1
        assert len(c["samples"]) == COUNT_SAMPLES and len(c["empty"]) == EMPTY_SAMPLES
        assert c["gc_enabled"] is True and c["aslr_off"] is True and c["valgrind"]
        # a sample's count is far above the empty loop's: the loop's work is counted
        assert min(s[0] for s in c["samples"]) > 10 * max(e[0] for e in c["empty"])
    per_op = [
        (min(s[0] for s in p["counts"]["samples"]) - p["counts"]["empty"][0][0])
        / p["counts"]["iterations"]
        for p in procs
    ]
    # 10,000 iterations of a loop body: tens to hundreds of instructions each (the
    # interpreter's dispatch, and a new int object for i and for total each time)
    assert all(100_000 < v < 20_000_000 for v in per_op)
    text = (runs["a"].parent / "a.stdout").read_text()
    assert "instructions/op" in text and "layout band" in text and "loop" in text


def test_show_compare_and_the_gate(runs: dict[str, Path]) -> None:
    shown = perflab("show", str(runs["a"]), "--format", "markdown")
    assert shown.returncode == 0, shown.stderr
    assert "instructions/op" in shown.stdout
    same = perflab("compare", str(runs["a"]), str(runs["a2"]), "--format", "csv")
    assert same.returncode == 0, same.stderr
    assert _verdict(same.stdout) == "same"
    slower = perflab(
        "compare", str(runs["a"]), str(runs["b"]), "--format", "csv", "--fail-on", "slower"
    )
    assert slower.returncode == 1, slower.stderr
    assert _verdict(slower.stdout) == "slower"
    assert "gate:" in slower.stderr


def _verdict(csv_text: str) -> str:
    import csv
    import io

    rows = [r for r in csv.DictReader(io.StringIO(csv_text)) if r.get("metric") == "instructions"]
    assert rows, csv_text
    return rows[0]["verdict"]


def test_compare_to_a_git_ref_counts_the_baseline_too(tmp_path: Path) -> None:
    """--count with --compare-to HEAD~1: the baseline's code is counted in this run, each
    of its processes with the layout of the same process of this run's case, and judged
    by the counted rule (f does 20× the work since HEAD~1, g is unchanged)."""
    repo = _repo(tmp_path)
    out = tmp_path / "c.json"
    argv = ["run", "bench.py", "--count", "instructions", "--min-processes", "2"]
    argv += ["--json", str(out), "--quiet", "--format", "csv", "--compare-to", "HEAD~1"]
    done = perflab(*argv, "--fail-on", "slower", cwd=repo)
    assert done.returncode == 1, done.stderr  # the gate: f is slower
    assert "gate:" in done.stderr and "error" not in done.stderr.lower()
    import csv
    import io

    compared = done.stdout[done.stdout.index("id,kind,metric") :]  # after the count table
    rows = {
        r["id"]: r
        for r in csv.DictReader(io.StringIO(compared))
        if r.get("metric") == "instructions"
    }
    assert rows["f"]["verdict"] == "slower" and rows["g"]["verdict"] == "same", done.stdout
    assert float(rows["f"]["ratio"]) > 5
    data = json.loads(out.read_text())
    assert data["baseline"]["spec"] == "HEAD~1"
    assert data["baseline"]["commit"] == _git(repo, "rev-parse", "HEAD~1")
    base = {b["name"]: b for b in data["baseline"]["benchmarks"]}
    for bench in data["benchmarks"]:
        twin = base[bench["name"]]
        assert [p["layout"] for p in twin["processes"]] == [p["layout"] for p in bench["processes"]]
        assert all(p["counts"]["samples"] for p in twin["processes"])

    # the baseline counted its own code: f's count is far lower there, g's the same
    def ir(bench: dict) -> float:  # Ir per op of the first process
        c = bench["processes"][0]["counts"]
        return (min(s[0] for s in c["samples"]) - c["empty"][0][0]) / c["iterations"]

    now = {b["name"]: b for b in data["benchmarks"]}
    assert ir(now["f"]) > 5 * ir(base["f"])
    assert abs(ir(now["g"]) / ir(base["g"]) - 1) < 0.05


def test_cmd_counts_a_command_and_its_children(tmp_path: Path) -> None:
    sh = shutil.which("sh")
    done = perflab(
        "cmd",
        f"{sh} -c 'true; {shutil.which('echo')} hi'",
        "--count",
        "instructions",
        "--runs",
        "3",
        "--json",
        str(tmp_path / "c.json"),
        "--quiet",
        "--format",
        "markdown",
    )
    assert done.returncode == 0, done.stderr
    assert "instructions" in done.stdout and "processes" in done.stdout
    [bench] = json.loads((tmp_path / "c.json").read_text())["benchmarks"]
    assert len(bench["counts"]) == 3
    assert all(c["processes"] == 2 and c["totals"][0] > 10_000 for c in bench["counts"])


def test_where_the_code_lies_does_not_move_its_count(tmp_path: Path) -> None:
    """The same code counted from folders of other depths and lengths, with environments
    of other sizes, counts the same Ir per op: a --compare-to baseline checked out
    elsewhere, or another CI folder, must not make unchanged code slower. (Before the
    counted worker saw its code through an alias of fixed length, sum(range(2000))
    counted 323,624 Ir/op from one folder and 349,784 from a deeper one: +8%.)"""
    mod = "def g():\n    return sum(range(2000))\n"
    bench = "import perflab\nfrom mod import g\n\nperflab.bench(g)\n"
    per_op = {}
    places = [("a", 1), ("b/c/d/e/f/g", 3000), ("h/i/" + "j" * 40, 40)]
    for place, env_bytes in places:
        folder = tmp_path / place
        folder.mkdir(parents=True)
        (folder / "mod.py").write_text(mod)
        (folder / "bench.py").write_text(bench)
        out = folder / "r.json"
        argv = ["run", "bench.py", "--count", "instructions", "--json", str(out), "--quiet"]
        done = perflab(*argv, cwd=folder, COUNT_TEST_PAD="x" * env_bytes)
        assert done.returncode == 0, done.stderr
        [b] = json.loads(out.read_text())["benchmarks"]
        per_op[place] = [
            (min(s[0] for s in p["counts"]["samples"]) - p["counts"]["empty"][0][0])
            / p["counts"]["iterations"]
            for p in b["processes"]
        ]
    first = per_op["a"]
    for place, values in per_op.items():
        for k, (v, w) in enumerate(zip(values, first, strict=True)):
            assert abs(v / w - 1) < 0.001, (place, k, per_op)
