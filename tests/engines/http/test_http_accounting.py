"""The engine's accounting of every request, as a property over random loads and servers.

For any server behaviour (delays, a serialization point, injected 500s, faults) and any
load (open or closed loop, any rate, pool, timeout, warmup and thread count), the real
engine against ``perflab serve`` must balance its books (the terms are defined in
:class:`perflab.model.HttpStep` and in README.md, "The results file"): the requests due
in the window (open loop: ``requests_sent + unsent``; closed loop: ``requests_sent``) are
``ok_in_window + drained + failures + unfinished + unsent``, with ``ok_in_window =
ok_responses − ok_from_warmup``; every response and failure is in
exactly one histogram and one status or error count, and each response's body time in the
phase histograms; every connection opened is closed (HTTP/1.1 or HTTP/2 with any streams);
the step ends within its duration plus the read timeout; and a server that completes at
most one response per ``serialize`` never shows more than ``window / serialize + 1``
successful responses in the window.
"""

from __future__ import annotations

import math
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perflab import _core
from perflab.engines.http.steps import step_from_raw
from perflab.model import HttpStep

#: Slack on the step's wall time: the 30 ms pre-open delay, thread start-up and join,
#: which a machine at load 8 can stretch to seconds; the fault it catches (a step that
#: overran) took 13 s longer.
WALL_SLACK_S = 5.0

servers = st.fixed_dictionaries(
    {},
    optional={
        "delay": st.sampled_from(["1ms", "uniform:0ms:20ms", "exp:5ms"]),
        "serialize": st.sampled_from(["2ms", "5ms"]),
        "error_rate": st.sampled_from([0.05, 0.3]),
        "fault": st.sampled_from(["close_mid_response", "endless_body"]),
        "body_size": st.integers(0, 3000),
    },
)


@st.composite
def loads(draw: Any) -> dict[str, Any]:
    duration = draw(st.sampled_from([0.15, 0.25, 0.4]))
    config: dict[str, Any] = {
        "duration_s": duration,
        "warmup_s": draw(st.sampled_from([0.0, duration / 4])),
        "read_timeout_s": draw(st.sampled_from([0.05, 0.2, 0.5])),
        "threads": draw(st.integers(1, min(2, os.cpu_count() or 1))),
        "seed": draw(st.integers(0, 2**32)),
    }
    if draw(st.booleans()):  # HTTP/2 (h2c) with 1 to 8 streams per connection
        config.update(protocol="http2", streams=draw(st.integers(1, 8)))
    if draw(st.booleans()):
        config.update(mode="closed", connections=draw(st.integers(1, 16)))
    else:
        config.update(
            mode="open",
            rate=draw(st.sampled_from([20.0, 300.0, 3000.0, 30000.0])),
            arrival=draw(st.sampled_from(["constant", "poisson"])),
            connections=draw(st.sampled_from([None, 1, 4, 64])),
        )
    return config


def check_books(step: HttpStep, raw: dict[str, Any], config: dict[str, Any]) -> None:
    """Every assertion of the module docstring, on one step."""
    ok_in_window = step.ok_responses - step.ok_from_warmup
    assert step.requests_sent == ok_in_window + step.drained + step.failures + step.unfinished
    assert step.latency.count == ok_in_window + step.drained
    assert step.failed_latency.count == step.failures
    answered = sum(step.status_counts.values())
    errors = sum(step.errors.values())
    assert answered + errors == ok_in_window + step.drained + step.failures
    assert step.connections_opened == step.connections_closed
    # Phases: every response's body is timed once; connects only where one was opened.
    assert step.body_time.count == answered
    assert step.connect.count <= step.connections_opened
    assert step.tls_handshake.count == 0
    assert step.protocol == ("h2" if config.get("protocol") == "http2" else "http/1.1")
    assert step.elapsed_s == pytest.approx(config["duration_s"] - config["warmup_s"])
    assert 0 <= step.drain_s <= step.wall_s - step.elapsed_s
    assert step.wall_s < config["duration_s"] + config["read_timeout_s"] + WALL_SLACK_S
    if config["mode"] == "closed":
        assert step.unsent == 0 and step.send_lag.count == 0
    elif config["arrival"] == "constant":
        # Evenly spaced: exactly rate × window requests fell due (±1 per thread at the
        # window's edges).
        due = config["rate"] * step.elapsed_s
        assert abs(step.requests_sent + step.unsent - due) <= raw["threads"] + 1


def capacity_bound(step: HttpStep, serialize: str | None) -> float:
    """Most successful responses a serializing server can complete in the window."""
    if serialize is None:
        return math.inf
    return step.elapsed_s / (float(serialize.removesuffix("ms")) * 1e-3) + 1


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(server=servers, load=loads())
def test_every_request_and_connection_is_accounted_for(
    server: dict[str, Any], load: dict[str, Any]
) -> None:
    with _core.serve({"host": "127.0.0.1", "port": 0, **server}) as target:
        raw = _core.http_run({"url": f"http://{target.address}/", **load})
    (raw_step,) = raw["steps"]
    step = step_from_raw(raw_step)
    check_books(step, raw_step, load)
    assert step.ok_responses <= capacity_bound(step, server.get("serialize"))
