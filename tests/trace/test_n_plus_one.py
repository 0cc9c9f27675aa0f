"""The N+1 example (examples/n_plus_one.py) under perflab http: the middleware sends each
span name's count per request, the engine keeps it per step, and the table flags ``db``
with its 41 queries per request; the batched page is not flagged."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from perflab import cli, model
from perflab.trace.middleware import header_value, metric_entry
from tests.conftest import ROOT


def test_the_header_carries_a_count_only_for_repeated_spans() -> None:
    assert metric_entry("db", 2_500_000, 41) == "db;dur=2.5;count=41"
    assert metric_entry("db", 2_500_000, 1) == "db;dur=2.5"
    assert header_value([("db", 1_000_000, 3), (None, 4_000_000, 1)], "app") == (
        "db;dur=1;count=3, app;dur=4"
    )


@pytest.fixture(scope="module")
def example() -> Any:
    spec = importlib.util.spec_from_file_location("n_plus_one", ROOT / "examples/n_plus_one.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    server = module.serve(120.0)
    yield module, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.mark.parametrize(
    ("path", "queries", "flagged", "limit"),
    [("/n1", 41, True, []), ("/batched", 2, False, []), ("/n1", 41, False, ["--n-plus-one", "41"])],
)
def test_n_plus_one_is_flagged_with_its_count(
    example: Any,
    path: str,
    queries: int,
    flagged: bool,
    limit: list[str],
    tmp_path: Path,
    capsys: Any,
) -> None:
    """``--n-plus-one 41`` raises the limit to the page's 41 queries: not flagged, and
    the file keeps the limit (``show`` applies it again)."""
    module, url = example
    out = tmp_path / "h.json"
    code = cli.main(
        ["http", url + path, "--rate", "50", "--duration", "0.4s", "--warmup", "0s"]
        + ["-H", f"X-Perflab-Token: {module.TOKEN}", "--json", str(out), "--quiet"]
        + ["--no-history", *limit]
    )
    printed = capsys.readouterr().out
    assert code == 0
    (step,) = model.load(str(out)).benchmarks[0].steps
    counts = step.server_timing.counts
    if queries > 1:
        assert counts["db"].count > 0 and counts["db"].p50_us == counts["db"].max_us == queries
    assert ("N+1: db ran 41 times in one request" in " ".join(printed.split())) is flagged
    assert model.load(str(out)).settings.get("n_plus_one") == (41 if limit else None)
