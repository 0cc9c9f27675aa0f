"""The names that cross the Rust/Python seam (``perflab._core``): every dict the native
core returns is the engine's serde types converted by one converter, so these key sets are
the Rust field names. A rename on either side fails here first."""

from __future__ import annotations

import pytest

from perflab import _core

SUMMARY = {"count", "min_us", "p50_us", "p90_us", "p99_us", "p999_us", "max_us", "mean_us"}
STEP = {
    "index",
    "mode",
    "arrival",
    "offered_rate",
    "connections",
    "threads",
    "duration_s",
    "warmup_s",
    "elapsed_s",
    "wall_s",
    "drain_s",
    "interrupted",
    "requests_sent",
    "ok_responses",
    "ok_from_warmup",
    "drained",
    "failures",
    "unsent",
    "unfinished",
    "status_counts",
    "errors",
    "bytes_in",
    "bytes_out",
    "connections_opened",
    "connections_closed",
    "connections_errored",
    "connections_peak",
    "connect_failures",
    "protocol",
    "streams",
    "pool_waits",
    "pool_idle_closed",
    "thread_cpu_s",
    "histograms",
    "start_lead_s",
    "shape",
    "timeline",
}
ERRORS = [
    "connect_refused",
    "connect_timeout",
    "read_timeout",
    "reset",
    "closed_mid_response",
    "protocol",
    "tls",
    "other",
]
SNAPSHOT = {
    "step",
    "steps",
    "offered_rate",
    "wall_s",
    "in_warmup",
    "completed",
    "ok_responses",
    "failures",
    "achieved_rate",
    "p99_us",
}


def test_http_run_result_progress_and_serve_stats() -> None:
    snapshots: list[dict] = []
    with _core.serve({"port": 0, "delay": "1ms", "seed": None}) as server:
        raw = _core.http_run(
            {
                "url": f"http://{server.address}/",
                "rate": 200.0,
                "duration_s": 0.4,
                "warmup_s": 0.1,
                "threads": 1,
                "method": "POST",
                "body": b"\x00\xff",
                "headers": [("A", "b")],
                "connections": None,
            },
            snapshots.append,
        )
        stats = server.stats()
    assert set(raw) == {"steps", "interrupted", "address", "url", "histogram_unit"}
    assert (raw["address"], raw["url"], raw["histogram_unit"]) == (
        server.address,
        f"http://{server.address}/",
        "us",
    )
    step = raw["steps"][0]
    assert set(step) == STEP
    assert list(step["errors"]) == ERRORS  # report order, every kind
    assert set(step["status_counts"]) == {200} and step["status_counts"][200] > 0
    assert (step["mode"], step["arrival"], step["offered_rate"]) == ("open", "constant", 200.0)
    assert isinstance(step["thread_cpu_s"], list) and len(step["thread_cpu_s"]) == 1
    assert set(step["histograms"]) == {
        "latency",
        "service_time",
        "send_lag",
        "dispatch_lag",
        "failed_latency",
        "connect",
        "tls_handshake",
        "ttfb",
        "body_time",
    }
    for hist in step["histograms"].values():
        assert set(hist) == SUMMARY | {"encoded_b64"}
    assert snapshots and all(set(s) == SNAPSHOT for s in snapshots)
    assert (
        stats
        == {
            "connections": stats["connections"],
            "requests": stats["requests"],
            "errors_injected": 0,
        }
        and stats["requests"] > 0
    )
    decoded = _core.hdr_decode(step["histograms"]["latency"]["encoded_b64"], [0.5, 1.0])
    assert set(decoded) == SUMMARY | {"values", "counts", "quantiles"}
    assert set(decoded["quantiles"]) == {0.5, 1.0}
    assert decoded["count"] == step["histograms"]["latency"]["count"]


OPEN = {"url": "http://127.0.0.1:9/", "rate": 1.0}


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({**OPEN, "sped": 2}, "unknown field `sped`"),
        ({**OPEN, "threads": "two"}, "http_run config: threads:"),
        ({**OPEN, "headers": 3}, "headers: .*list of"),
        ({**OPEN, "body": 3}, "body: .*str or bytes"),
        ({**OPEN, "ok": "abc"}, "ok: bad status range"),
        (
            {**OPEN, "requests": [{"verb": "GET"}]},
            r"requests\[0\]\.verb: unknown field `verb`, expected one of `method`",
        ),
        ({"url": "http://127.0.0.1:9/"}, "open loop needs"),
        ({"rate": 1.0}, "missing field `url`"),
    ],
)
def test_bad_http_configs_are_value_errors_naming_the_key(config: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _core.http_check(config)


def test_good_http_configs_in_every_accepted_shape() -> None:
    for extra in (
        {"headers": {"A": "b"}},
        {"headers": [["A", "b"]]},
        {"body": "text"},
        {"ok": [(200, 299), (304, 304)]},
        {"ok": "200-299,304"},
        {"requests": [{"path": "/a", "body": b"x"}, {}]},
        {"seed": 2**64 - 1},
        {"mode": "closed", "connections_list": [1, 2]},
    ):
        _core.http_check({**OPEN, **extra})


def test_serve_config_keys() -> None:
    with pytest.raises(
        ValueError, match="serve config: dealy: unknown field `dealy`, expected one of `host`"
    ):
        _core.serve({"dealy": "1ms"})
    with pytest.raises(ValueError, match="serve config: fault: unknown fault"):
        _core.serve({"fault": "boom"})


def test_clock_probe_and_ntp_state() -> None:
    probe = _core.clock_probe(2_000_000, 1_000_000, 10**9, None)
    assert set(probe) == {
        "iterations",
        "windows",
        "events",
        "events_dropped",
        "torn_reads",
        "backward",
        "longest_gap",
    }
    assert list(probe["backward"]) == ["monotonic", "realtime", "monotonic_raw", "boottime"]
    snapshot = probe["windows"][0]
    assert isinstance(snapshot, tuple) and len(snapshot) == 5
    assert len(probe["longest_gap"]) == 2 and isinstance(probe["longest_gap"][0], tuple)
    assert isinstance(_core.clock_snapshot(), tuple)
    ntp = _core.ntp_state()
    if ntp is not None:  # adjtimex may be refused by a seccomp filter
        assert set(ntp) == {
            "state",
            "status",
            "synchronised",
            "freq_ppm",
            "offset_ns",
            "maxerror_us",
            "esterror_us",
        }
