"""Load shapes (``--rate 1k..20k/60s``, ``1k,5k,10k/20s``, ``5k~2k/30s``) and the
per-interval timeline: parsing, and the real engine against ``perflab serve`` on
127.0.0.1, checked by accounting identities only (never by speed)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from perflab import _core
from perflab.engines.http.shapes import parse_rate
from perflab.engines.http.steps import step_from_raw
from perflab.errors import UsageError
from perflab.model import HttpStep
from perflab.model.http_timeline import Timeline, shape_label
from tests.conftest import ROOT
from tests.engines.http.test_http import plan_for


def test_rate_forms() -> None:
    ramp = parse_rate("1k..20k/60s")
    assert ramp.shape == {"kind": "ramp", "from": 1000.0, "to": 20000.0, "over_s": 60.0}
    assert (ramp.rates, ramp.length_s) == ([20000.0], 60.0)
    sine = parse_rate("5k~2k/30s")
    assert sine.shape == {"kind": "sine", "mean": 5000.0, "amplitude": 2000.0, "period_s": 30.0}
    assert sine.rates == [7000.0]
    steps = parse_rate("1k,5k,10k/20s")
    assert (steps.rates, steps.shape, steps.length_s) == ([1000.0, 5000.0, 10000.0], None, 20.0)
    assert parse_rate("500").rates == [500.0] and parse_rate("500").length_s is None
    assert shape_label(ramp.shape) == "1,000→20,000/s over 60 s"
    assert shape_label(sine.shape) == "5,000±2,000/s, period 30 s"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("1k..20k", "needs its length"),
        ("0..20k/10s", "above zero"),
        ("5k~5k/10s", "AMPLITUDE < MEAN"),
        ("5k~2k/soon", "--rate length"),
        ("x..2/1s", "not a number"),
    ],
)
def test_bad_rate_forms_say_what_to_write(text: str, words: str) -> None:
    with pytest.raises(UsageError, match=words):
        parse_rate(text)


def test_the_length_is_the_step_duration_unless_given() -> None:
    url = "http://127.0.0.1:9/"
    plan = plan_for(url, rate="100..300/2s", duration=None, warmup="0s")
    assert plan.config["duration_s"] == 2.0
    assert plan.step_config(0)["shape"]["kind"] == "ramp"
    assert "rate" not in plan.step_config(0)
    held = plan_for(url, rate="100,200/3s", duration=None, warmup="0s")
    assert (held.rates, held.config["duration_s"]) == ([100.0, 200.0], 3.0)
    assert plan_for(url, rate="100..300/2s", duration="1s").config["duration_s"] == 1.0
    with pytest.raises(UsageError, match="interval"):
        plan_for(url, rate="100", interval="10us")
    assert plan_for(url, rate="100", interval="0").config["interval_s"] == 0


def _run(config: dict) -> HttpStep:
    with _core.serve({"host": "127.0.0.1", "port": 0, "delay": "1ms"}) as target:
        raw = _core.http_run({"url": f"http://{target.address}/", "threads": 1, **config})
    (step,) = [step_from_raw(s) for s in raw["steps"]]
    return step


def _balanced(step: HttpStep) -> Timeline:
    """The timeline sums to the step's own counters: every request in exactly one
    interval by its intended time, every response in exactly one by its completion."""
    tl = step.timeline
    assert tl is not None and len(tl)
    # No warmup here: every request is recorded.
    assert step.warmup_s == 0
    assert sum(tl.sent) == step.requests_sent
    assert sum(tl.ok) == step.ok_responses + (step.drained or 0)
    assert sum(tl.errors) == step.failures
    return tl


@pytest.mark.parametrize("arrival", ["constant", "poisson"])
def test_a_ramp_is_offered_as_shaped_and_accounted_per_interval(arrival: str) -> None:
    shape = {"kind": "ramp", "from": 100.0, "to": 500.0, "over_s": 0.8}
    step = _run(
        {"shape": shape, "arrival": arrival, "duration_s": 0.8, "interval_s": 0.2, "seed": 3}
    )
    assert step.shape == shape
    # Offered over the window = Λ(0.8)/0.8 = (100 + 500)/2.
    assert step.offered_rate == pytest.approx(300.0)
    tl = _balanced(step)
    assert tl.interval_s == pytest.approx(0.2)
    assert tl.offered_rate[:4] == pytest.approx([150.0, 250.0, 350.0, 450.0])
    if arrival == "constant" and step.unsent == 0:
        # Λ over each 0.2 s interval: 30, 50, 70, 90 requests (±1 at the edges).
        assert [abs(a - b) <= 1 for a, b in zip(tl.sent, [30, 50, 70, 90])] == [True] * 4
        assert step.requests_sent == 240
    assert sum(h is not None for h in tl.p99_us) >= 1
    # The file form round-trips.
    again = HttpStep.from_dict(json.loads(json.dumps(_json(step))))
    assert again.timeline == tl and again.shape == shape


def test_a_sine_and_no_timeline() -> None:
    shape = {"kind": "sine", "mean": 300.0, "amplitude": 200.0, "period_s": 0.5}
    step = _run({"shape": shape, "duration_s": 0.5, "interval_s": 0.125})
    tl = _balanced(step)
    # The mean of 300 + 200·sin over each quarter period: 300 ± 200·2/π.
    quarter = 200 * 2 / math.pi
    assert tl.offered_rate[:4] == pytest.approx([300 + quarter] * 2 + [300 - quarter] * 2)
    assert max(tl.offered_rate) > 300 > min(tl.offered_rate)
    off = _run({"rate": 200.0, "duration_s": 0.3, "interval_s": 0})
    assert off.timeline is None and off.shape is None


def test_the_engine_refuses_bad_shapes() -> None:
    for shape, word in [
        ({"kind": "sine", "mean": 5.0, "amplitude": 9.0, "period_s": 1.0}, "amplitude"),
        ({"kind": "spiral"}, "spiral"),
    ]:
        with pytest.raises(ValueError, match=word):
            _core.http_check({"url": "http://127.0.0.1:9/", "shape": shape})
    with pytest.raises(ValueError, match="not both"):
        _core.http_check(
            {
                "url": "http://127.0.0.1:9/",
                "rate": 5.0,
                "shape": {"kind": "ramp", "from": 1.0, "to": 2.0, "over_s": 1.0},
            }
        )


def _json(step: HttpStep) -> dict:
    from perflab.model.json_form import json_types

    return json_types(step)


@pytest.mark.parametrize("field", ["timeline", "shape"])
def test_a_malformed_timeline_or_shape_is_one_error_line(
    tmp_path: Path, perflab_cli: Any, field: str
) -> None:
    """A results file whose step holds a timeline or shape of the wrong type (found by the
    mutation property test: ``"timeline": true`` was an internal error) is refused by the
    schema with one line and exit 2."""
    doc = json.loads((ROOT / "tests" / "golden" / "data" / "http-open.json").read_text())
    doc["benchmarks"][0]["steps"][0][field] = True
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    done = perflab_cli("show", str(bad))
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: ") and len(done.stderr.strip().splitlines()) == 1
