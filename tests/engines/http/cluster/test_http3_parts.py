"""Load agents over HTTP/3: a step's shares keep the protocol and streams, each share runs
over QUIC against `perflab serve --http3` on 127.0.0.1, and the merge keeps the phases
(the QUIC handshake under tls_handshake, no TCP connect). 0.4 s at 400 req/s."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from perflab import _core
from perflab.engines.http.cluster.merge import merge_steps
from perflab.engines.http.cluster.split import split_step
from perflab.engines.http.steps import step_from_raw


@pytest.fixture
def h3_server() -> Iterator[Any]:
    with _core.serve({"host": "127.0.0.1", "port": 0, "delay": "1ms", "http3": True}) as s:
        yield s


def test_http3_agents_keep_protocol_and_streams_and_merge_the_phases(h3_server: Any) -> None:
    config = {
        "url": f"https://127.0.0.1:{h3_server.port}/",
        "mode": "open",
        "rate": 400.0,
        "duration_s": 0.4,
        "threads": 1,
        "insecure": True,
        "protocol": "http3",
        "streams": 4,
    }
    parts = [p for p in split_step(config, 2) if p is not None]
    assert len(parts) == 2
    assert all((p["protocol"], p["streams"], p["insecure"]) == ("http3", 4, True) for p in parts)
    steps = [step_from_raw(_core.http_run(p)["steps"][0]) for p in parts]
    merged = merge_steps(steps)
    assert (merged.protocol, merged.streams) == ("h3", 4)
    assert merged.requests_sent == sum(s.requests_sent for s in steps) > 0
    assert merged.failures == 0
    for name in ("ttfb", "body_time", "tls_handshake"):
        assert getattr(merged, name).count == sum(getattr(s, name).count for s in steps)
    assert merged.connect.count == 0 and merged.body_time.count > 0
