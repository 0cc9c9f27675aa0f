"""`perflab compare` through the real entry point: output formats, the CI gate, bad input.

Results files are synthetic (seeded samples, saved with perflab.model.save),
so verdicts are deterministic; one test runs `perflab run --compare-to` for real
with tiny budgets and asserts only that the comparison is printed.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from perflab import model
from perflab.model import Results
from tests.conftest import lognormal_groups, make_bench


def save(path: Path, *benches, **env) -> Path:  # type: ignore[no-untyped-def]
    results = Results(
        "run",
        ["perflab", "run", "x.py"],
        "2026-01-01T00:00:00+00:00",
        "0.1.0",
        environment={"hostname": "ci", "cpu_count": 2, **env},
        benchmarks=list(benches),
    )
    return model.save(results, path)


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    """A and B: "slow" is 10% slower in B, "same" unchanged, "gone" only in A, "new" only in B."""

    def bench(name: str, factor: float, seed: int):  # type: ignore[no-untyped-def]
        return make_bench(name, lognormal_groups(1e-6 * factor, 12, 30, 0.005, 0.002, seed))

    a = save(
        tmp_path / "a.json", bench("slow", 1.0, 1), bench("same", 1.0, 2), bench("gone", 1.0, 3)
    )
    b = save(
        tmp_path / "b.json",
        bench("slow", 1.1, 4),
        bench("same", 1.0, 5),
        bench("new", 1.0, 6),
        cpu_model="Other CPU",
    )
    return a, b


def one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


def test_table_shows_verdicts_missing_benchmarks_and_cost(files, perflab_cli) -> None:
    proc = perflab_cli("compare", *map(str, files))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "g/slow" in out and "slower" in out and "1.10×" in out
    assert "g/same" in out and "same" in out
    assert "only in A" in out and "g/gone" in out and "g/new" in out
    assert "cost of A" in out and "24 processes" in out


def test_fail_on_slower_trips_the_gate(files, perflab_cli) -> None:
    proc = perflab_cli("compare", *map(str, files), "--fail-on", "slower")
    assert proc.returncode == 1
    assert "gate: --fail-on slower tripped by 1 benchmark(s): g/slow" in proc.stderr
    assert perflab_cli("compare", *map(str, files), "--fail-on", "faster").returncode == 0
    assert perflab_cli("compare", *map(str, files), "--fail-on", "missing").returncode == 1


def test_a_wide_threshold_silences_the_gate(files, perflab_cli) -> None:
    proc = perflab_cli(
        "compare", *map(str, files), "--fail-on", "slower,inconclusive", "--threshold", "20%"
    )
    assert proc.returncode == 0, proc.stdout


def test_markdown_is_ready_for_a_pull_request(files, perflab_cli) -> None:
    proc = perflab_cli("compare", *map(str, files), "--format", "markdown")
    assert proc.returncode == 0
    out = proc.stdout
    assert out.startswith("### compare: B = ")
    assert "| g/slow |" in out and "|---|" in out
    assert "- CPU differs: A" not in out  # A has no cpu_model: not compared
    assert "\x1b[" not in out  # no terminal colours in a PR comment


def test_json_on_stdout_and_to_a_file(files, perflab_cli, tmp_path: Path) -> None:
    proc = perflab_cli("compare", *map(str, files), "--json", "--fail-on", "slower")
    assert proc.returncode == 1
    doc = json.loads(proc.stdout)
    assert doc["kind"] == "compare" and doc["threshold"] == 0.02
    rows = {r["id"]: r for r in doc["rows"]}
    assert rows["g/slow"]["verdict"] == "slower"
    assert rows["g/slow"]["ratio"]["ci_low"] > 1.02
    assert doc["only_in_a"] == ["g/gone"] and doc["only_in_b"] == ["g/new"]
    assert doc["gate"] == {"fail_on": ["slower"], "tripped": ["g/slow"], "held": []}
    assert doc["machine_speed"] is None and doc["held"] == {}  # no reference timings
    target = tmp_path / "cmp.json"
    proc = perflab_cli("compare", *map(str, files), "--json", str(target), "--format", "csv")
    assert json.loads(target.read_text())["counts"]["slower"] == 1
    assert proc.stdout.startswith("id,kind,metric,unit,a_value")


def test_environment_differences_are_flagged_not_refused(tmp_path: Path, perflab_cli) -> None:
    bench = make_bench("f", lognormal_groups(1e-6, 5, 10))
    a = save(tmp_path / "a.json", bench, cpu_model="Intel X", python={"version": "3.11.7"})
    b = save(tmp_path / "b.json", bench, cpu_model="AMD Y", python={"version": "3.13.0"})
    proc = perflab_cli("compare", str(a), str(b))
    assert proc.returncode == 0
    assert "CPU differs: A 'Intel X', B 'AMD Y'" in proc.stdout
    assert "Python version differs" in proc.stdout


def _write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    "content, message",
    [
        ("[1, 2, 3]", "is not a perflab results file"),
        ('{"tool": "perflab", "schema_version": 99, "kind": "run"}', "newer than this perflab"),
        ('{"tool": "perflab", "schema_version": 1, "kind": "run", "benchm', "not valid JSON"),
    ],
)
def test_bad_files_give_one_line_and_exit_2(
    files, tmp_path: Path, perflab_cli, content: str, message: str
) -> None:
    bad = _write(tmp_path / "bad.json", content)
    for args in ((bad, str(files[1])), (str(files[0]), bad)):
        proc = perflab_cli("compare", *args)
        assert proc.returncode == 2
        line = one_error_line(proc.stderr)
        assert message in line and "bad.json" in line


def test_no_benchmark_in_common_is_exit_2(tmp_path: Path, perflab_cli) -> None:
    a = save(tmp_path / "a.json", make_bench("x", lognormal_groups(1e-6, 3, 5)))
    b = save(tmp_path / "b.json", make_bench("y", lognormal_groups(1e-6, 3, 5)))
    proc = perflab_cli("compare", str(a), str(b))
    assert proc.returncode == 2
    line = one_error_line(proc.stderr)
    assert "no benchmark in common" in line and "'g/x'" in line and "'g/y'" in line


@pytest.mark.parametrize(
    "option, value, message",
    [
        ("--threshold", "lots", "--threshold 'lots' is not a number"),
        ("--threshold", "150%", "below 100%"),
        ("--fail-on", "slow", "--fail-on slow: not a verdict"),
        ("--percentiles", "0,99", "above 0"),
    ],
)
def test_bad_options_are_exit_2(files, perflab_cli, option: str, value: str, message: str) -> None:
    proc = perflab_cli("compare", *map(str, files), option, value)
    assert proc.returncode == 2
    assert message in one_error_line(proc.stderr)


def test_missing_file_is_exit_2(tmp_path: Path, perflab_cli) -> None:
    proc = perflab_cli("compare", str(tmp_path / "nope.json"), str(tmp_path / "b.json"))
    assert proc.returncode == 2
    assert "no such file" in one_error_line(proc.stderr)


FAST = [
    "--budget",
    "0.5s",
    "--min-processes",
    "2",
    "--process-time",
    "20ms",
    "--quiet",
    "--no-alloc",
]


def test_run_compare_to_runs_and_compares_in_one_go(tmp_path: Path, perflab_cli) -> None:
    bench = tmp_path / "bench.py"
    bench.write_text(
        "import perflab\n"
        + textwrap.dedent("""
        @perflab.bench(group="g")
        def total():
            return sum(range(200))
    """)
    )
    base = tmp_path / "base.json"
    assert perflab_cli("run", str(bench), "--json", str(base), *FAST).returncode == 0
    proc = perflab_cli(
        "run",
        str(bench),
        "--json",
        str(tmp_path / "new.json"),
        *FAST,
        "--compare-to",
        str(base),
        "--format",
        "markdown",
    )
    assert proc.returncode == 0, proc.stderr
    assert "### compare: B = this run against A = " in proc.stdout
    assert "| g/total |" in proc.stdout


def test_run_compare_to_gates_with_fail_on(tmp_path: Path, perflab_cli) -> None:
    bench = tmp_path / "bench.py"
    bench.write_text("import perflab\n@perflab.bench\ndef f():\n    return sum(range(50))\n")
    base = tmp_path / "base.json"
    assert perflab_cli("run", str(bench), "--json", str(base), *FAST).returncode == 0
    # The same f, 100x the work: never "same" or "faster"; with two processes a side
    # usually "inconclusive", but "slower" when the two runs' spreads are narrow (a
    # quiet machine, or a load that changes between the runs), so the gate names both.
    bench.write_text("import perflab\n@perflab.bench\ndef f():\n    return sum(range(5000))\n")
    proc = perflab_cli(
        "run",
        str(bench),
        "--json",
        str(tmp_path / "new.json"),
        *FAST,
        "--compare-to",
        str(base),
        "--fail-on",
        "slower,inconclusive",
    )
    assert proc.returncode == 1, proc.stderr
    assert "gate: --fail-on slower,inconclusive tripped" in proc.stderr
    alone = perflab_cli("run", str(bench), *FAST, "--fail-on", "slower")
    # no baseline benchmark and no --compare-to: nothing to judge (the in-run verdicts are
    # tested in tests/cli/test_gates.py)
    assert alone.returncode == 2 and "--fail-on has nothing to judge" in one_error_line(
        alone.stderr
    )


def test_run_compare_to_a_bad_file_fails_before_measuring(tmp_path: Path, perflab_cli) -> None:
    bench = tmp_path / "bench.py"
    bench.write_text("import perflab\n@perflab.bench\ndef f():\n    pass\n")
    proc = perflab_cli(
        "run",
        str(bench),
        *FAST,
        "--compare-to",
        _write(tmp_path / "x.json", "{"),
        "--json",
        str(tmp_path / "out.json"),
    )
    assert proc.returncode == 2
    assert "not valid JSON" in one_error_line(proc.stderr)
    assert not (tmp_path / "out.json").exists()


def test_compares_real_perflab_cmd_results(tmp_path: Path, perflab_cli) -> None:
    """The same command name measured as `sleep 0.01` then as `sleep 0.05`: B is about 5×
    slower, far outside any noise a shared machine adds to a sleep, so the verdict is
    "slower" whatever the load."""
    paths = [tmp_path / "a.json", tmp_path / "b.json"]
    for path, seconds in zip(paths, ("0.01", "0.05")):
        proc = perflab_cli("cmd", f"sleep {seconds}", "--runs", "5", "--quiet", "--json", str(path))
        assert proc.returncode == 0, proc.stderr
        data = json.loads(path.read_text())
        data["benchmarks"][0]["name"] = "sleep"  # one benchmark id on both sides
        path.write_text(json.dumps(data))
    proc = perflab_cli("compare", *map(str, paths), "--json")
    assert proc.returncode == 0, proc.stderr
    row, *memory = json.loads(proc.stdout)["rows"]
    assert [r["metric"] for r in memory] == ["max RSS"]  # each run's peak RSS compared too
    assert row["kind"] == "command" and row["a"]["units"] == 5
    assert row["verdict"] == "slower"


def test_compares_real_perflab_http_results_step_by_step(tmp_path: Path, perflab_cli) -> None:
    """Two short open-loop sweeps (0.5 s steps, ≤ 200 req/s) against one loopback target."""
    from perflab import _core

    paths = [tmp_path / "a.json", tmp_path / "b.json"]
    with _core.serve({"host": "127.0.0.1", "port": 0, "delay": "1ms"}) as server:
        for path in paths:
            proc = perflab_cli(
                "http",
                f"http://{server.address}/",
                "--rate",
                "100,200",
                "--duration",
                "0.5s",
                "--warmup",
                "0.1s",
                "--threads",
                "1",
                "--quiet",
                "--json",
                str(path),
            )
            assert proc.returncode == 0, proc.stderr
    proc = perflab_cli("compare", *map(str, paths), "--json", "--percentiles", "50,99")
    assert proc.returncode == 0, proc.stderr
    ids = [r["id"] for r in json.loads(proc.stdout)["rows"]]
    assert [i.split("/ ")[1] for i in ids] == [
        "open 100/s rate",
        "open 100/s p50",
        "open 100/s p99",
        "open 200/s rate",
        "open 200/s p50",
        "open 200/s p99",
    ]
