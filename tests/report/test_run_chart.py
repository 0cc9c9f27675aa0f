"""The run chart's figures: it draws what the summary counted and computed."""

from __future__ import annotations

import pytest

from perflab.analyze.run.summary import summarize
from perflab.report.run_chart import distribution
from tests.conftest import make_bench


def test_the_dots_are_the_summarys_process_medians_per_op() -> None:
    # ops=4: every figure is per op, the chart's samples as much as the summary's median
    bench = make_bench("b", [[4e-6, 8e-6, 6e-6], [12e-6, 16e-6], [20e-6]], ops_per_call=4)
    bench.processes[0].samples[1].flagged = "clock"  # left out of the statistics and the box
    summary = summarize(bench)
    assert summary.process_medians_s == pytest.approx([1.25e-6, 3.5e-6, 5e-6])
    samples, dots = distribution(bench, summary)
    assert samples == pytest.approx([1e-6, 1.5e-6, 3e-6, 4e-6, 5e-6])
    assert dots == summary.process_medians_s
    assert summary.to_dict()["process_medians_s"] == dots  # saved with the summary
