"""`perflab run` through the real entry point: a good run and every bad input of issue 2.

Budgets are tiny (a few hundred ms per benchmark) so the file runs in well under a
minute; timings themselves are not asserted here (see tests/engines for logic).
"""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest

from perflab.model import SCHEMA_VERSION
from tests.conftest import popen_perflab

# a budget of 1.5 s: two processes of ~0.3 s each fit it even on a loaded shared machine
FAST = [
    "--budget",
    "1.5s",
    "--min-processes",
    "2",
    "--max-processes",
    "2",
    "--process-time",
    "20ms",
    "--quiet",
    "--no-alloc",
]


def write(tmp_path: Path, body: str, name: str = "bench.py") -> Path:
    path = tmp_path / name
    path.write_text("import perflab\n" + textwrap.dedent(body))
    return path


def one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


def test_good_run_prints_a_table_and_saves_results(tmp_path: Path, perflab_cli) -> None:
    bench = write(
        tmp_path,
        """
        @perflab.bench(group="g", baseline=True, params={"n": [10, 100]})
        def total(n):
            return sum(range(n))

        @perflab.metric(group="g", name="digits", unit="")
        def digits(result):
            return len(str(result))
    """,
    )
    out = tmp_path / "r.json"
    result = perflab_cli("run", str(bench), "--json", str(out), *FAST)
    assert result.returncode == 0, result.stderr
    assert "total n=10" in result.stdout and "× best" in result.stdout
    data = json.loads(out.read_text())
    assert data["schema_version"] == SCHEMA_VERSION and data["kind"] == "run"
    assert data["command_line"][:2] == ["perflab", "run"]
    assert data["environment"]["python"]["version"]
    bench0 = data["benchmarks"][0]
    assert bench0["params"] == {"n": 10} and len(bench0["processes"]) >= 2
    sample = bench0["processes"][0]["samples"][0]
    assert {"iterations", "wall_ns", "cpu_ns", "gc_collections"} <= set(sample)
    assert bench0["processes"][0]["metrics"] == {"digits": 2.0}
    assert bench0["summary"]["unit"] == "s/op"


def test_show_renders_markdown_and_csv(tmp_path: Path, perflab_cli) -> None:
    bench = write(
        tmp_path,
        """
        @perflab.bench
        def noop():
            pass
    """,
    )
    out = tmp_path / "r.json"
    assert perflab_cli("run", str(bench), "--json", str(out), *FAST).returncode == 0
    md = perflab_cli("show", str(out), "--format", "markdown")
    assert md.returncode == 0 and "| benchmark | time/op ± CI |" in md.stdout
    csv = perflab_cli("show", str(out), "--format", "csv")
    assert csv.stdout.splitlines()[0].startswith("id,group,benchmark,stage,median_s")
    env = perflab_cli("show", str(out), "--env")
    assert "environment:" in env.stdout and "clocksource" in env.stdout


def test_filter_runs_only_matching_benchmarks(tmp_path: Path, perflab_cli) -> None:
    bench = write(
        tmp_path,
        """
        @perflab.bench
        def alpha():
            pass

        @perflab.bench
        def beta():
            pass
    """,
    )
    out = tmp_path / "r.json"
    assert (
        perflab_cli("run", str(bench), "--filter", "alp", "--json", str(out), *FAST).returncode == 0
    )
    names = [b["name"] for b in json.loads(out.read_text())["benchmarks"]]
    assert names == ["alpha"]
    nothing = perflab_cli("run", str(bench), "--filter", "gamma", *FAST)
    assert nothing.returncode == 2 and "matches no benchmark" in one_error_line(nothing.stderr)


def test_missing_file(tmp_path: Path, perflab_cli) -> None:
    result = perflab_cli("run", str(tmp_path / "nope.py"))
    assert result.returncode == 2 and "no such file" in one_error_line(result.stderr)


def test_syntax_error_names_the_line(tmp_path: Path, perflab_cli) -> None:
    bench = write(tmp_path, "def broken(:\n    pass\n")
    result = perflab_cli("run", str(bench))
    line = one_error_line(result.stderr)
    assert result.returncode == 2 and "bench.py:2: syntax error" in line


def test_no_benchmarks_found(tmp_path: Path, perflab_cli) -> None:
    bench = write(tmp_path, "x = 1\n")
    result = perflab_cli("run", str(bench))
    assert result.returncode == 2 and "no benchmarks found" in one_error_line(result.stderr)


def test_unknown_params(tmp_path: Path, perflab_cli) -> None:
    bench = write(
        tmp_path,
        """
        @perflab.bench(params={"size": [1, 2]})
        def f(n):
            pass
    """,
    )
    result = perflab_cli("run", str(bench))
    line = one_error_line(result.stderr)
    assert result.returncode == 2 and "'f': unknown params ['size']" in line


@pytest.mark.parametrize(
    "option",
    [["--precision", "0"], ["--precision", "abc"], ["--budget", "-1s"], ["--timeout", "soon"]],
)
def test_bad_options_are_usage_errors(tmp_path: Path, perflab_cli, option: list[str]) -> None:
    bench = write(tmp_path, "@perflab.bench\ndef f():\n    pass\n")
    result = perflab_cli("run", str(bench), *option)
    assert result.returncode == 2
    one_error_line(result.stderr)


def _failure_run(tmp_path: Path, perflab_cli, body: str, *extra: str):
    bench = write(
        tmp_path,
        body
        + """
@perflab.bench
def healthy():
    return sum(range(10))
""",
    )
    out = tmp_path / "r.json"
    result = perflab_cli("run", str(bench), "--json", str(out), *FAST, *extra)
    data = json.loads(out.read_text())
    healthy = [b for b in data["benchmarks"] if b["name"] == "healthy"][0]
    assert healthy["error"] is None and healthy["processes"][0]["samples"], "others still run"
    assert result.returncode == 1, result.stderr
    return result, data


def test_a_raising_benchmark_fails_alone(tmp_path: Path, perflab_cli) -> None:
    result, data = _failure_run(
        tmp_path,
        perflab_cli,
        """
@perflab.bench
def raises():
    raise ValueError("bad input data")
""",
    )
    assert "'raises' raised ValueError in first call: bad input data" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr


def test_a_hanging_benchmark_times_out(tmp_path: Path, perflab_cli) -> None:
    result, _ = _failure_run(
        tmp_path,
        perflab_cli,
        """
import time
@perflab.bench
def hangs():
    time.sleep(3600)
""",
        "--timeout",
        "1s",
    )
    assert "'hangs' timed out after 1 s" in result.stdout


@pytest.mark.parametrize(
    "body,signal_name",
    [
        ("import os\n@perflab.bench\ndef dies():\n    os.abort()\n", "SIGABRT"),
        ("import ctypes\n@perflab.bench\ndef dies():\n    ctypes.string_at(0)\n", "SIGSEGV"),
    ],
)
def test_a_dying_worker_is_reported(
    tmp_path: Path, perflab_cli, body: str, signal_name: str
) -> None:
    result, _ = _failure_run(tmp_path, perflab_cli, body)
    assert f"'dies' killed its worker with {signal_name}" in result.stdout


def test_debug_shows_the_traceback(tmp_path: Path, perflab_cli) -> None:
    result = perflab_cli("run", str(tmp_path / "nope.py"), "--debug")
    assert result.returncode != 0 and "Traceback" in result.stderr


def test_help_and_version(perflab_cli) -> None:
    assert "perflab" in perflab_cli("--version").stdout
    help_text = perflab_cli("--help").stdout
    assert all(cmd in help_text for cmd in ("run", "cmd", "http", "doctor", "compare", "fit"))


def _long_run(bench: Path, out: Path) -> Any:
    """``perflab run`` of ``bench`` that would take a minute (a precision it can't reach),
    its results to ``out``, started in the background (stdout and stderr piped, as text):
    the run a signal interrupts."""
    return popen_perflab(
        ["run", str(bench), "--json", str(out), "--quiet", "--budget", "60s"]
        + ["--precision", "0.0001%", "--process-time", "50ms"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for_processes(imports: Path, proc: Any, within_s: float = 120.0) -> None:
    """Wait until 4 processes have imported the benchmark file (each appends its pid to
    ``imports``): with at most two that are not workers (perflab's own, a discovery
    process) and workers run one at a time, one worker at least has finished. Bounded."""
    import time

    deadline = time.monotonic() + within_s
    while not imports.exists() or len(set(imports.read_text().split())) < 4:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no worker finished"
        time.sleep(0.02)


def test_ctrl_c_keeps_what_was_measured(tmp_path: Path) -> None:
    """SIGINT mid-run: exit 130 and a results file holding the processes measured so far."""
    import signal

    imports = tmp_path / "imports"
    bench = write(
        tmp_path,
        f"""
        import os
        with open({str(imports)!r}, "a") as log:
            log.write(f"{{os.getpid()}}\\n")

        @perflab.bench
        def first():
            return sum(range(100))

        @perflab.bench
        def second():
            return sum(range(100))
    """,
    )
    out = tmp_path / "r.json"
    proc = _long_run(bench, out)
    _wait_for_processes(imports, proc)  # a worker has finished, however busy the box
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    data = json.loads(out.read_text())
    assert data["interrupted"] is True
    measured = [p for b in data["benchmarks"] for p in b["processes"] if p["samples"]]
    assert measured, "processes finished before Ctrl-C are kept"
    assert {b["stop_reason"] for b in data["benchmarks"]} == {"interrupted"}


@pytest.mark.parametrize("sig,code", [("SIGTERM", 143), ("SIGHUP", 129)])
def test_sigterm_and_sighup_stop_like_ctrl_c_and_exit_with_the_signals_code(
    tmp_path: Path, sig: str, code: int
) -> None:
    """issue 12: SIGTERM/SIGHUP exited 143/129 at once and wrote nothing. Now: workers
    stopped, finished samples kept, results saved and printed, exit 128 + the signal."""
    import signal

    imports = tmp_path / "imports"
    bench = write(
        tmp_path,
        f"""
        import os
        with open({str(imports)!r}, "a") as log:
            log.write(f"{{os.getpid()}}\\n")

        @perflab.bench
        def first():
            return sum(range(100))
    """,
    )
    out = tmp_path / "r.json"
    proc = _long_run(bench, out)
    _wait_for_processes(imports, proc)  # a worker has finished, however busy the box
    proc.send_signal(getattr(signal, sig))
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == code, stderr
    assert "first" in stdout and "interrupted" in stdout, "the table is printed"
    data = json.loads(out.read_text())
    assert data["interrupted"] is True
    assert [p for p in data["benchmarks"][0]["processes"] if p["samples"]], "samples kept"


@pytest.mark.parametrize("threads", ["[0, -1]", "[2.5]", "[]", "4"])
def test_bad_thread_counts_are_bad_input(tmp_path: Path, perflab_cli, threads: str) -> None:
    """issue 12: threads=[0, -1] gave a FAILED row and exit 1; it is bad input."""
    bench = write(
        tmp_path,
        f"""
        @perflab.bench(threads={threads})
        def f():
            pass
    """,
    )
    result = perflab_cli("run", str(bench), *FAST)
    line = one_error_line(result.stderr)
    assert result.returncode == 2 and "bench.py:3: threads=" in line
    assert "whole numbers from 1 to" in line or "list of thread counts" in line


@pytest.mark.parametrize(
    "option",
    [
        ["--process-time", "1e30s"],
        ["--process-time", "20s", "--budget", "10s"],
        ["--process-time", "60s", "--budget", "120s"],
        ["--budget", "1e400s"],
        ["--timeout", "1e30s"],
    ],
)
def test_durations_that_cannot_fit_are_rejected(
    tmp_path: Path, perflab_cli, option: list[str]
) -> None:
    """issue 12: --process-time 1e30s was accepted and ran far past --budget."""
    bench = write(tmp_path, "@perflab.bench\ndef f():\n    pass\n")
    result = perflab_cli("run", str(bench), *option)
    line = one_error_line(result.stderr)
    assert result.returncode == 2
    assert "longer than any run can last" in line or "must fit in --budget" in line


def test_sys_exit_in_a_benchmark_is_explained(tmp_path: Path, perflab_cli) -> None:
    """issue 12: sys.exit(0) in a benchmark read "worker exited with status 0 (no output)"."""
    result, _ = _failure_run(
        tmp_path,
        perflab_cli,
        """
import os, sys
@perflab.bench
def exits():
    sys.exit(0)

@perflab.bench
def leaves():
    os._exit(0)
""",
    )
    assert "'exits' called sys.exit(0) in first call: a benchmark must return" in result.stdout
    assert (
        "'leaves' ended its worker process (exit status 0) before the measurement finished"
        in result.stdout
        and "os._exit()" in result.stdout
    )
    assert "no output" not in result.stdout


def test_sys_exit_at_import_is_bad_input(tmp_path: Path, perflab_cli) -> None:
    bench = write(
        tmp_path,
        """
        import sys

        @perflab.bench
        def f():
            pass

        sys.exit(main())
    """.replace("main()", "0"),
    )
    result = perflab_cli("run", str(bench), *FAST)
    line = one_error_line(result.stderr)
    assert result.returncode == 2 and "bench.py:9: calls sys.exit(0) when imported" in line
    assert "if __name__ == '__main__':" in line


def test_each_worker_gets_its_own_recorded_layout(tmp_path: Path, perflab_cli) -> None:
    """Layout randomization: every process gets a padding variable and a hash seed of its
    own (recorded in the file and seen by the benchmark), --seed repeats the draws and
    --no-randomize turns them off."""
    bench = write(
        tmp_path,
        """
        import os

        @perflab.bench
        def f():
            return (len(os.environ.get("PERFLAB_RANDOMIZED_ENVIRONMENT_OFFSET", "")),
                    os.environ.get("PYTHONHASHSEED"))

        @perflab.metric(name="padding")
        def padding(result):
            return result[0]

        @perflab.metric(name="hash_seed")
        def hash_seed(result):
            return int(result[1]) if result[1] else -1
    """,
    )

    def layouts(*extra: str) -> list[dict]:
        out = tmp_path / f"r{len(extra)}.json"
        done = perflab_cli(
            "run",
            str(bench),
            "--json",
            str(out),
            *FAST,
            "--budget",
            "30s",
            "--max-processes",
            "3",
            "--min-processes",
            "3",
            *extra,
        )
        assert done.returncode == 0, done.stderr
        procs = json.loads(out.read_text())["benchmarks"][0]["processes"]
        for p in procs:  # what the benchmark saw is what the file says it got
            assert p["metrics"]["padding"] == p["layout"].get("env_padding_bytes", 0)
            assert p["metrics"]["hash_seed"] == p["layout"].get("hash_seed", -1)
        return [p["layout"] for p in procs]

    first = layouts("--seed", "7")
    assert len({(x["env_padding_bytes"], x["hash_seed"]) for x in first}) == 3
    assert all(0 <= x["env_padding_bytes"] < 4096 and 0 <= x["heap_objects"] < 4096 for x in first)
    assert layouts("--seed", "7", "--no-alloc") == first, "--seed repeats the draws"
    assert layouts("--no-randomize") == [{}, {}, {}]


def test_what_the_file_prints_at_import_goes_to_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # stdout holds the table or, with --json -, the results file: a print at import made
    # that file invalid JSON
    from perflab.commands.run import load_cases

    path = write(
        tmp_path,
        """
        print("hello from import")
        @perflab.bench(params={"n": [1, 2]})
        def f(n):
            pass
    """,
        "printing_bench.py",
    )
    _, cases = load_cases(str(path), ["n=2"])
    assert [c.id for c in cases] == ["f(n=2)"]
    out, err = capsys.readouterr()
    assert out == "" and "hello from import" in err
