"""The fixed cost of `perflab http`: which modules its whole code path imports.

Its whole-process CPU per request is compared with wrk's and h2load's (issue 30), so
what the process spends outside the engine counts. numpy alone costs more start-up CPU
than a second of the engine's per-request work at low rates; the HTTP path uses none
of it. The test runs a real `perflab http` (a `perflab serve` target, the table printed,
the results file and history written) and asserts, from the child's ``sys.modules`` at
exit, that the heavy libraries were never loaded. No timing is asserted.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import popen_perflab

#: modules `perflab http` must not load unless a flag asks for what needs them
HEAVY = ("numpy", "scipy", "matplotlib", "ray", "pandas")
#: lighter ones (1-4 ms of CPU each) that the plain path has no use for: OpenSSL through
#: hashlib (SHA-256 comes from CPython's own module), the idna codec's Unicode tables
#: (an ASCII host goes to the resolver as bytes), CSV, HTML escaping, statistics, and
#: the history listing's types (recording needs only SummaryRow)
LIGHT = ("hashlib", "secrets", "encodings.idna", "csv", "html", "statistics")

#: runs `perflab http ARGV` in this interpreter and writes its sys.modules at exit
RUNNER = """
import atexit, json, sys
out = sys.argv.pop(1)
atexit.register(lambda: open(out, "w").write(json.dumps(sorted(sys.modules))))
sys.argv = ["perflab", *sys.argv[1:]]
from perflab.cli import main
main()
"""


@pytest.fixture(scope="module")
def serve():
    """`perflab serve` in its own process: its address."""
    proc = popen_perflab(
        ["serve", "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        yield line.split("http://")[1].split("/")[0]
    finally:
        proc.kill()
        proc.wait()


def modules_of_run(tmp_path: Path, *argv: str) -> set[str]:
    """The modules loaded by one `perflab http ARGV` process, at its exit."""
    out = tmp_path / "modules.json"
    proc = subprocess.run(
        [sys.executable, "-c", RUNNER, str(out), "http", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(out.read_text()))


#: a short closed-loop or open-loop step on one engine thread
SHORT = ["--duration", "0.4s", "--warmup", "0.1s", "--threads", "1"]


def loaded(modules: set[str], name: str) -> bool:
    return name in modules or any(m.startswith(name + ".") for m in modules)


@pytest.mark.parametrize(
    "load", [["--connections", "2"], ["--rate", "200"], ["--connections", "2", "--http2"]]
)
def test_http_never_loads_numpy_scipy_or_matplotlib(tmp_path: Path, serve, load) -> None:
    modules = modules_of_run(
        tmp_path,
        f"http://{serve}/",
        *load,
        *SHORT,
        "--json",
        str(tmp_path / "r.json"),
    )
    assert "perflab.analyze.http" in modules  # the run did analyse and print its step
    assert "perflab.history.record" in modules  # and recorded it in history
    assert [name for name in HEAVY if loaded(modules, name)] == []
    assert [name for name in LIGHT if loaded(modules, name)] == []
    assert "perflab.model.history" not in modules
    # rich's emoji-name table: loaded only when a console looks codes up (make_console
    # turns that off; the table, the progress lines and the footnotes print no emoji)
    assert "rich.table" in modules and "rich._emoji_codes" not in modules
    # nor the benchmark-file authoring API that `import perflab` once loaded eagerly
    assert "perflab.engines.run.suite" not in modules


def test_the_authoring_api_still_loads_on_first_use(tmp_path: Path) -> None:
    code = (
        "import sys, perflab; assert 'perflab.engines.run.suite' not in sys.modules; "
        "from perflab import bench, metric; from perflab.engines.run import suite; "
        "assert bench is suite.bench and metric is suite.metric and perflab.bench is bench"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_the_check_sees_a_heavy_import(tmp_path: Path, serve) -> None:
    """The guard can fail: --chart draws with matplotlib, which loads numpy."""
    modules = modules_of_run(
        tmp_path,
        f"http://{serve}/",
        "--connections",
        "2",
        *SHORT,
        "--chart",
        str(tmp_path / "c.png"),
    )
    assert loaded(modules, "matplotlib") and loaded(modules, "numpy")
