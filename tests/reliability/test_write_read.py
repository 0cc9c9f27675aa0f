"""Issue 33, property: every results file perflab writes, ``perflab show`` reads back.

Results of each kind are filled with fuzzed names (control characters, markup, up to
200,000 characters), command lines, request headers of any size, Server-Timing metric
names and counts, and sizes of every integer field that the engines fill from what
they observed; :func:`perflab.model.save` writes them and ``perflab show`` (the real
entry point, in-process) must exit 0. Before issue 33 a 120 KB header value made a
file that perflab wrote and then refused to read.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perflab import cli, model
from perflab.model.http_step import ServerTiming
from tests.reliability.samples import MAKERS

names = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["", "[/]", "\x1b[31mred", "\u202eevil", "a\nb", "=1+1", "<b>x</b>"]),
    st.integers(0, 200_000).map(lambda n: "x" * n),
)
sizes = st.one_of(st.integers(0, 2**63 - 1), st.sampled_from([0, 2**62, 2**63 - 1, 10**19]))


@st.composite
def written(draw: st.DrawFn) -> tuple[str, model.Results]:
    """(kind, results) as an engine could have filled them from hostile input."""
    kind = draw(st.sampled_from(sorted(MAKERS)))
    results = MAKERS[kind](draw(st.integers(0, 3)))
    for bench in results.benchmarks:
        bench.name = draw(names)
    results.command_line = ["perflab", kind, *draw(st.lists(names, max_size=4))]
    if kind == "http":
        results.settings["headers"] = [
            [draw(names), draw(names)] for _ in range(draw(st.integers(0, 3)))
        ]
        results.settings["url"] = "http://127.0.0.1:9/" + draw(names)
        step = results.benchmarks[0].steps[0]
        metrics = {draw(names): step.latency for _ in range(draw(st.integers(0, 70)))}
        step.server_timing = ServerTiming(
            responses=draw(sizes),
            malformed=draw(sizes),
            metrics_dropped=draw(sizes),
            metrics=metrics,
        )
    return kind, results


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=written())
def test_every_file_perflab_writes_reads_back(tmp_path: Path, case: tuple) -> None:
    kind, results = case
    path = tmp_path / f"{kind}.json"
    path.unlink(missing_ok=True)
    with contextlib.redirect_stderr(io.StringIO()):
        model.save(results, path)
    assert json.loads(path.read_text())["tool"] == "perflab"
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["show", str(path), "--format", "csv"])
    assert code == 0, err.getvalue()[-500:]
