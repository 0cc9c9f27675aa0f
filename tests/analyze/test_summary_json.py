"""The summaries in results files keep their JSON form across the Estimate change.

Summaries hold :class:`perflab.model.estimate.Estimate` objects now (the median, the
ratios); results files keep the form every earlier version wrote (``median_s``,
``ci_low_s``, ``ci_high_s``; ratios as [value, low, high] lists), so no schema version
is needed. Both directions are checked against files saved by an earlier perflab
(tests/golden/data, written by 0.1.0 before this change).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from perflab import model
from perflab.analyze.cmd import summarize_results
from perflab.analyze.run.ratios import summarize_benchmarks
from perflab.history.rows import summary_rows

OLD = Path(__file__).resolve().parents[1] / "golden" / "data"


def _shape(value: Any) -> Any:
    """The JSON shape an old reader relies on: lists keep their length, numbers are
    numbers (null where the figure is NaN), other types by name."""
    if isinstance(value, list):
        return ("list", len(value))
    if isinstance(value, (int, float)) and not isinstance(value, bool) or value is None:
        return "number or null"
    return type(value).__name__


def _new_summaries(results: model.Results) -> dict[str, dict[str, Any]]:
    """The summaries this version writes, through the JSON they are saved as."""
    if results.kind == "cmd":
        made = {s.id: s.to_dict() for s in summarize_results(results)}
    else:
        grouped = summarize_benchmarks(
            results.benchmarks, precision=results.settings.get("precision")
        )
        made = {s.id: s.to_dict() for group in grouped.values() for s in group}
    return json.loads(json.dumps(model.json_types(made)))


@pytest.mark.parametrize("name", ["run-a", "run-b", "cmd-a", "cmd-b"])
def test_every_key_an_old_file_has_is_written_in_the_same_shape(name: str) -> None:
    """New → old: what an older reader read from a summary is still there, same shape."""
    path = OLD / f"{name}.json"
    results = model.load(path)  # old → new: the earlier version's file loads
    new = _new_summaries(results)
    raws = json.loads(path.read_text())["benchmarks"]
    assert len(new) == len(results.benchmarks) == len(raws) > 1
    for bench, raw in zip(results.benchmarks, raws):
        old = raw["summary"]
        mine = new[bench.id]
        missing = [k for k in old if k not in mine]
        assert not missing, f"{bench.id}: keys an old reader reads are gone: {missing}"
        changed = {
            k: (_shape(old[k]), _shape(mine[k]))
            for k in old
            if k != "warnings"
            and _shape(old[k]) != _shape(mine[k])
            and None not in (old[k], mine[k])
        }
        assert not changed, f"{bench.id}: shapes changed: {changed}"


def test_ratios_and_medians_read_the_way_older_readers_read_them() -> None:
    """The reads of earlier code (benchmarks/workloads.py, history rows) on new output."""
    results = model.load(OLD / "run-a.json")
    grouped = summarize_benchmarks(results.benchmarks)
    new = _new_summaries(results)
    for s in (s for group in grouped.values() for s in group if s.ok):
        written = new[s.id]
        ratio, low, high = written["ratio_best"]
        want = (s.ratio_best.value, s.ratio_best.ci_low, s.ratio_best.ci_high)
        assert [math.nan if v is None else v for v in (ratio, low, high)] == pytest.approx(
            want, nan_ok=True
        )
        assert (
            written["median_s"],
            written["ci_low_s"],
            written["ci_high_s"],
            written["median_se_s"],
        ) == pytest.approx((s.median.value, s.median.ci_low, s.median.ci_high, s.median.se))
        if written["ratio_baseline"] is not None:
            assert len(written["ratio_baseline"]) == 3
    rows = {r.bench: r for r in summary_rows(results, new)}
    for s in (s for group in grouped.values() for s in group if s.ok):
        assert rows[s.id].value == pytest.approx(s.median_s)
        assert rows[s.id].ci_low == pytest.approx(s.median.ci_low)


def test_a_benchmark_s_ratio_to_itself_is_written_without_a_ci() -> None:
    results = model.load(OLD / "run-a.json")
    new = _new_summaries(results)
    selves = [
        s["ratio_best"]
        for s in new.values()
        if s["ratio_best"] is not None and s["ratio_best"][0] == 1.0 and s["ratio_best"][1] is None
    ]
    assert selves and all(r == [1.0, None, None] for r in selves)


def test_a_file_saved_now_loads_and_stores_what_the_summaries_give(tmp_path: Path) -> None:
    """A round trip through this version's writer and reader."""
    results = model.load(OLD / "cmd-b.json")
    summaries = summarize_results(results)
    out = tmp_path / "cmd.json"
    model.save(results, out, {s.id: s.to_dict() for s in summaries})
    again = model.load(out)
    assert [b.id for b in again.benchmarks] == [b.id for b in results.benchmarks]
    raws = json.loads(out.read_text())["benchmarks"]
    for s, raw in zip(summaries, raws, strict=True):
        written = raw["summary"]
        assert written["median_s"] == pytest.approx(s.median_s)
        assert [written["ci_low_s"], written["ci_high_s"]] == pytest.approx(
            [s.median.ci_low, s.median.ci_high]
        )
        assert written["ratio"] == pytest.approx([s.ratio.value, s.ratio.ci_low, s.ratio.ci_high])
        assert "median" not in written and "median_se_s" not in written
