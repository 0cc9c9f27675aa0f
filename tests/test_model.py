"""The results model: round trips, and refusing what isn't ours or is too new."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from perflab import model
from perflab.errors import ResultsFileError
from tests.conftest import make_bench


def _results() -> model.Results:
    bench = make_bench("f", [[1e-6, 1.1e-6], [1.2e-6]], params={"n": 3})
    return model.Results(
        kind="run",
        command_line=["perflab", "run", "x.py"],
        created="2026-01-01T00:00:00+00:00",
        perflab_version="0.1.0",
        environment={"cpu_model": "x"},
        benchmarks=[bench],
    )


def test_round_trip_keeps_raw_samples(tmp_path: Path) -> None:
    path = model.save(_results(), tmp_path / "r.json")
    loaded = model.load(path)
    assert loaded == _results()
    assert loaded.benchmarks[0].processes[1].samples[0].per_op_s == pytest.approx(1.2e-6)


def test_benchmark_id_is_stable() -> None:
    bench = model.Benchmark(name="f", group="g", stage="s", params={"b": 1, "a": "x"}, threads=4)
    assert bench.id == "g/f[s](a=x,b=1)@4t"


@pytest.mark.parametrize(
    "text,needle",
    [
        ('{"schema_version": 1, "tool": "perflab", "kind": "run"', "not valid JSON (truncated?)"),
        ('{"hello": "world"}', "is not a perflab results file"),
        ("[1, 2]", "is not a perflab results file"),
        ('{"tool": "perflab", "schema_version": 99}', "newer than this perflab knows"),
    ],
)
def test_bad_files_are_refused_clearly(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(ResultsFileError, match=re.escape(needle)):
        model.load(path)


def test_unknown_keys_are_ignored_for_forward_compatibility(tmp_path: Path) -> None:
    data = _results().to_dict()
    data["benchmarks"][0]["future_field"] = 1
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    assert model.load(path).benchmarks[0].name == "f"


def test_nan_is_written_as_null(tmp_path: Path) -> None:
    results = _results()
    results.environment["x"] = float("nan")
    path = model.save(results, tmp_path / "r.json")
    assert json.loads(path.read_text())["environment"]["x"] is None


def test_json_types_converts_nested_dataclasses_tuples_and_non_finite_floats() -> None:
    from dataclasses import dataclass

    from perflab.model import json_types

    @dataclass
    class Inner:
        pair: tuple[float, float]
        label: str | None = None

    @dataclass
    class Outer:
        items: list[Inner]
        extra: dict[str, float]
        flag: bool = True

    value = Outer([Inner((1.5, math.nan)), Inner((math.inf, -2.0), "x")], {"a": -math.inf})
    assert json_types(value) == {
        "items": [{"pair": [1.5, None], "label": None}, {"pair": [None, -2.0], "label": "x"}],
        "extra": {"a": None},
        "flag": True,
    }


def test_a_schema_1_http_file_loads_with_its_drain_marked_unknown(tmp_path: Path) -> None:
    # Schema 1 counted responses that came while a step drained in ok_responses; the
    # split is lost, so drained is unknown and drain_s is estimated from the wall time.
    step = {
        "offered_rate": 1500.0,
        "connections": 1024,
        "mode": "open",
        "duration_s": 2.0,
        "warmup_s": 0.4,
        "elapsed_s": 1.6,
        "requests_sent": 2905,
        "ok_responses": 2905,
        "wall_s": 4.1,
    }
    data = {
        "schema_version": 1,
        "tool": "perflab",
        "kind": "http",
        "command_line": [],
        "created": "2026-01-01T00:00:00+00:00",
        "perflab_version": "0.1.0",
        "benchmarks": [{"name": "GET http://127.0.0.1:18601/", "kind": "http", "steps": [step]}],
    }
    path = tmp_path / "old.json"
    path.write_text(json.dumps(data))
    loaded = model.load(path)
    assert loaded.schema_version == model.SCHEMA_VERSION
    got = loaded.benchmarks[0].steps[0]
    assert (got.ok_responses, got.drained, got.ok_from_warmup) == (2905, None, None)
    assert got.drain_s == pytest.approx(4.1 - 2.0 - 0.03)
    # Written again, it is a schema-2 file that loads the same.
    again = model.load(model.save(loaded, tmp_path / "new.json")).benchmarks[0].steps[0]
    assert (again.ok_responses, again.drained, again.drain_s) == (2905, None, got.drain_s)


def test_an_http_step_whose_times_were_not_measured_loads_as_nan(tmp_path: Path) -> None:
    # NaN is written as null; it loads back as NaN, so that comparisons never meet None.
    step = model.HttpStep(
        offered_rate=10.0, connections=1, mode="open", duration_s=1.0, warmup_s=0.0, elapsed_s=1.0
    )
    results = model.Results(
        kind="http",
        command_line=[],
        created="2026-01-01T00:00:00+00:00",
        perflab_version="0.1.0",
        benchmarks=[model.Benchmark(name="u", kind="http", steps=[step])],
    )
    loaded = model.load(model.save(results, tmp_path / "r.json")).benchmarks[0].steps[0]
    assert math.isnan(loaded.drain_s) and math.isnan(loaded.wall_s)
