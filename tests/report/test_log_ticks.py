"""Log-axis tick labels render as text, never raw math markup (issue 28 §1)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from perflab.analyze.fit.models import fit_complexity
from perflab.report.fit_chart import complexity_chart
from perflab.report.pyplot import pyplot


def _labels(path: Path, monkeypatch) -> list[str]:  # type: ignore[no-untyped-def]
    """Draw the complexity chart and return every tick label as drawn."""
    plt = pyplot()
    seen: list[str] = []
    real = plt.Figure.savefig

    def grab(fig, *args, **kwargs):  # type: ignore[no-untyped-def]
        out = real(fig, *args, **kwargs)
        for ax in fig.axes:
            for axis in (ax.xaxis, ax.yaxis):
                seen.extend(t.get_text() for t in axis.get_ticklabels(which="both"))
        return out

    monkeypatch.setattr(plt.Figure, "savefig", grab)
    n = np.geomspace(10, 1e5, 6)
    cost = 2e-6 + 5e-8 * n
    complexity_chart(fit_complexity(n, cost, 0.02 * cost), n, cost, path)
    return seen


def test_complexity_chart_log_axis_labels_are_plain_text(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    labels = [t for t in _labels(tmp_path / "c.png", monkeypatch) if t]
    assert labels, "no tick label drawn"
    assert not any("$" in t or "mathdefault" in t for t in labels), labels
    assert {"10", "100", "1,000", "10⁴"} & set(labels)


def test_power_of_ten() -> None:
    from perflab.report.pyplot import power_of_ten

    assert [power_of_ten(v) for v in (1e-3, 1, 10, 1000, 1e4, 3e4)] == [
        "10⁻³",
        "1",
        "10",
        "1,000",
        "10⁴",
        "",
    ]
