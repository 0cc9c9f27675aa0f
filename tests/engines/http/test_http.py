"""perflab.engines.http.engine: option parsing, request files, conversion, and the real engine
against an in-process ``perflab serve`` on 127.0.0.1.

Engine runs are bounded: each step lasts 0.4-0.8 s at 100-300 req/s, so the file
stays under a minute. Timing bounds are generous (the machine is shared and noisy);
each says why it holds.
"""

from __future__ import annotations

import argparse
import base64
import itertools
import math
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perflab import _core
from perflab.analyze.http import error_reasons, summarize_steps
from perflab.commands.options import http_plan
from perflab.engines.http import engine as mh
from perflab.engines.http import requests_file
from perflab.engines.http.steps import step_from_raw
from perflab.errors import UsageError
from tests.conftest import free_port


def args(**overrides: Any) -> argparse.Namespace:
    """Parsed ``perflab http`` options with defaults, as the CLI would give them."""
    from perflab.commands.http import add_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    ns = parser.parse_args(["http://127.0.0.1:9/"])
    for key, value in overrides.items():
        setattr(ns, key, value)
    return ns


def plan_for(url: str, **overrides: Any) -> mh.Plan:
    base = {"url": url, "duration": "0.5s", "warmup": "0.1s", "threads": 1}
    return http_plan(args(**{**base, **overrides}))


# ---------------------------------------------------------------- parsing (no engine)


def test_sweep_forms() -> None:
    assert mh.parse_sweep("1000:5000:1000") == [1000, 2000, 3000, 4000, 5000]
    assert mh.parse_sweep("500, 1000,2000") == [500, 1000, 2000]
    assert mh.parse_sweep("2.5k") == [2500]
    assert mh.parse_sweep("1:2:0.3") == pytest.approx([1, 1.3, 1.6, 1.9])
    assert len(mh.parse_sweep("1000:2000")) == 10


@pytest.mark.parametrize(
    "text", ["0", "-5", "1000,0", "abc", "5000:1000:100", "1:10:0", "1:100000:1", "", "nan"]
)
def test_bad_sweeps_are_usage_errors(text: str) -> None:
    with pytest.raises(UsageError, match="--rate"):
        mh.parse_sweep(text)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 10_000), st.integers(0, 50), st.integers(1, 5_000))
def test_range_sweeps_start_at_start_and_never_pass_stop(start: int, count: int, step: int) -> None:
    stop = start + count * step
    values = mh.parse_sweep(f"{start}:{stop}:{step}")
    assert values[0] == start and values[-1] == pytest.approx(stop)
    assert len(values) == count + 1
    assert all(b > a for a, b in itertools.pairwise(values))


def test_connections_must_be_whole() -> None:
    assert mh.parse_connections("1,2,4") == [1, 2, 4]
    with pytest.raises(UsageError, match="whole"):
        mh.parse_connections("1.5")


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("localhost:8080", "malformed"),
        ("ftp://127.0.0.1/", "not supported"),
        ("http:///x", "no host"),
        ("http://127.0.0.1:99999/", "bad port"),
    ],
)
def test_bad_urls(url: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        mh.parse_url(url)


def test_url_default_ports() -> None:
    assert mh.parse_url("https://example.test/x").port == 443
    assert mh.parse_url("http://[::1]:81/").host == "::1"


def test_headers_and_ok() -> None:
    assert mh.parse_header("Accept:  text/plain ") == ("Accept", "text/plain")
    with pytest.raises(UsageError, match="Name: value"):
        mh.parse_header("no colon")
    assert mh.parse_header("X-Perflab-Token: a b:c") == ("X-Perflab-Token", "a b:c")
    for bad in ("X Token: 1", "X(y): 1", ": v", "A: b\r\nEvil: 1"):  # 400 on every request
        with pytest.raises(UsageError, match="letters, digits and -"):
            mh.parse_header(bad)
    assert mh.parse_ok("200-299, 304") == "200-299,304"
    with pytest.raises(UsageError, match="--ok"):
        mh.parse_ok("2xx")


def test_requests_file_json_lines(tmp_path: Path) -> None:
    path = tmp_path / "reqs.jsonl"
    path.write_text(
        '# comment\n{"path": "/a"}\n\n{"method": "POST", "path": "/b", '
        '"headers": {"X-A": "1"}, "body": "hi"}\n'
    )
    reqs = requests_file.load_requests(path)
    assert reqs == [
        {"path": "/a", "headers": []},
        {"method": "POST", "path": "/b", "headers": [("X-A", "1")], "body": "hi"},
    ]
    path.write_text('[{"path": "/a", "headers": [["K", "V"]]}]')
    assert requests_file.load_requests(path)[0]["headers"] == [("K", "V")]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"path": "/a"}\n{oops\n', "line 2: not valid JSON"),
        ('{"url": "/a"}', "unknown key"),
        ('{"path": "a"}', "must start with '/'"),
        ('"GET /"', "expected a JSON object"),
        ('{"headers": 3}', "headers must be"),
        ("# only a comment\n", "no requests"),
    ],
)
def test_bad_requests_files(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "reqs.jsonl"
    path.write_text(text)
    with pytest.raises(UsageError, match=message):
        requests_file.load_requests(path)
    with pytest.raises(UsageError, match="no such file"):
        requests_file.load_requests(tmp_path / "missing.jsonl")


def test_plan_open_loop_and_closed_loop() -> None:
    plan = plan_for("http://127.0.0.1:9/x", rate="100,200", header=["A: b"], method="post")
    assert plan.rates == [100, 200] and plan.steps == 2
    step = plan.step_config(1)
    assert (step["mode"], step["rate"], step["method"], step["headers"]) == (
        "open",
        200,
        "POST",
        [("A", "b")],
    )
    closed = plan_for("http://127.0.0.1:9/", connections="1,4")
    assert closed.step_config(1)["connections"] == 4 and closed.step_config(1)["mode"] == "closed"
    assert http_plan(args(url="http://h/", rate="1", duration="2s")).config[
        "warmup_s"
    ] == pytest.approx(0.4)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({}, "give --rate"),
        ({"rate": "10", "connections": "1,2"}, "pool's cap"),
        ({"connections": "2", "poisson": True}, "needs --rate"),
        ({"rate": "10", "duration": "0s"}, "above zero"),
        ({"rate": "10", "duration": "-1s"}, "duration"),
        ({"rate": "10", "warmup": "1s"}, "shorter than"),
        ({"rate": "10", "threads": 0}, "threads"),
        ({"rate": "10", "requests": "x.jsonl", "method": "PUT"}, "drop --method"),
        ({"rate": "10", "body_file": "/no/such/file"}, "no such file"),
    ],
)
def test_bad_plans(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        plan_for("http://127.0.0.1:9/", **overrides)


def test_the_engine_takes_typed_values_and_the_options_give_the_same_plan() -> None:
    """``make_plan`` (typed values, what an API caller or a load agent uses) and
    ``commands.options.http_plan`` (perflab http's option text) build the same plan."""
    typed = mh.make_plan(
        "http://127.0.0.1:9/x",
        0.5,
        0.1,
        [100.0, 200.0],
        [8],
        poisson=True,
        threads=1,
        seed=7,
        method="post",
        headers=[("A", "b")],
    )
    parsed = plan_for(
        "http://127.0.0.1:9/x",
        rate="100,200",
        connections="8",
        poisson=True,
        seed=7,
        method="post",
        header=["A: b"],
    )
    assert typed == parsed
    assert [typed.step_config(i) for i in range(2)] == [parsed.step_config(i) for i in range(2)]
    with pytest.raises(UsageError, match="shorter than the duration"):
        mh.make_plan("http://127.0.0.1:9/", 1.0, 1.0, [10.0])
    with pytest.raises(UsageError, match="drop --method"):
        mh.make_plan("http://127.0.0.1:9/", 1.0, 0.1, [10.0], method="PUT", requests=[{}])


def test_unreachable_target_is_one_clear_error() -> None:
    target = mh.parse_url(f"http://127.0.0.1:{free_port()}/")
    with pytest.raises(UsageError, match="connection refused"):
        mh.check_reachable(target, 1.0)
    with pytest.raises(UsageError, match="cannot resolve"):
        mh.check_reachable(mh.parse_url("http://no-such-host.invalid/"), 1.0)


# ---------------------------------------------------------------- conversion and the sweep loop


def raw_step(**overrides: Any) -> dict[str, Any]:
    hist = {
        "encoded_b64": "",
        "count": 10,
        "min_us": 100,
        "p50_us": 200,
        "p90_us": 300,
        "p99_us": 400,
        "p999_us": 500,
        "max_us": 600,
        "mean_us": 210.0,
    }
    empty = {"encoded_b64": "", "count": 0, **{k: 0 for k in hist if k.endswith("us")}}
    step = {
        "index": 0,
        "mode": "open",
        "arrival": "poisson",
        "offered_rate": 100.0,
        "connections": 64,
        "threads": 1,
        "duration_s": 1.0,
        "warmup_s": 0.2,
        "elapsed_s": 0.8,
        "wall_s": 1.05,
        "drain_s": 0.01,
        "interrupted": False,
        "requests_sent": 12,
        "ok_responses": 10,
        "ok_from_warmup": 1,
        "drained": 1,
        "failures": 2,
        "unsent": 1,
        "unfinished": 0,
        "status_counts": {200: 10, 503: 1},
        "errors": {"reset": 1, "tls": 0},
        "bytes_in": 5,
        "bytes_out": 6,
        "connections_opened": 3,
        "connections_closed": 3,
        "connections_errored": 1,
        "connections_peak": 3,
        "connect_failures": 0,
        "pool_waits": 2,
        "thread_cpu_s": [0.01],
        "histograms": {
            "latency": hist,
            "service_time": hist,
            "send_lag": hist,
            "dispatch_lag": hist,
            "failed_latency": empty,
        },
    }
    return {**step, **overrides}


def test_step_from_raw_names_what_it_holds() -> None:
    step = step_from_raw(raw_step())
    assert step.mode == "open-poisson"
    assert (step.elapsed_s, step.wall_s, step.ok_responses, step.failures) == (0.8, 1.05, 10, 2)
    assert (step.drained, step.ok_from_warmup, step.drain_s) == (1, 1, 0.01)
    assert step.status_counts == {"200": 10, "503": 1} and step.errors == {"reset": 1}
    assert step.latency.p99_us == 400 and math.isnan(step.failed_latency.p50_us)
    assert (step.unsent, step.pool_waits, step.connection_errors) == (1, 2, 1)
    assert step_from_raw(raw_step(mode="closed", offered_rate=None)).mode == "closed"


def fake_engine(results: list[dict[str, Any] | BaseException]) -> Any:
    calls: list[dict[str, Any]] = []

    def engine(config: dict[str, Any], progress: Any) -> dict[str, Any]:
        calls.append(config)
        if progress:
            progress({"step": 0})
        item = results[len(calls) - 1]
        if isinstance(item, BaseException):
            raise item
        return item

    engine.calls = calls  # type: ignore[attr-defined]
    return engine


def listening_plan(rates: str) -> tuple[mh.Plan, socket.socket]:
    """A plan whose target port accepts connections (a bare listening socket)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    return plan_for(f"http://127.0.0.1:{sock.getsockname()[1]}/", rate=rates), sock


def test_sweep_runs_each_step_and_reports_progress_and_saves() -> None:
    plan, sock = listening_plan("100,200")
    run = {"steps": [raw_step()], "interrupted": False, "address": "127.0.0.1:1"}
    engine = fake_engine([run, run])
    seen, saved = [], []
    with sock:
        out = mh.run_sweep(
            plan,
            engine,
            lambda i, n, snap: seen.append((i, n)),
            lambda o: saved.append(len(o.steps)),
        )
    assert [c["rate"] for c in engine.calls] == [100, 200]
    assert seen == [(0, 2), (1, 2)] and saved == [1, 2]
    assert len(out.steps) == 2 and not out.interrupted and out.target_lost is None


def test_sweep_stops_after_an_interrupted_step_and_keeps_it() -> None:
    plan, sock = listening_plan("100,200,300")
    interrupted = {"steps": [raw_step(interrupted=True)], "interrupted": True, "address": ""}
    engine = fake_engine([interrupted])
    with sock:
        out = mh.run_sweep(plan, engine)
    assert out.interrupted and len(out.steps) == 1 and len(engine.calls) == 1


def test_ctrl_c_between_steps_keeps_the_steps_measured() -> None:
    plan, sock = listening_plan("100,200")
    engine = fake_engine([{"steps": [raw_step()], "interrupted": False}, KeyboardInterrupt()])
    with sock:
        out = mh.run_sweep(plan, engine)
    assert out.interrupted and len(out.steps) == 1


def test_engine_value_errors_become_usage_errors() -> None:
    plan, sock = listening_plan("100")
    with sock, pytest.raises(UsageError, match="ulimit -n"):
        mh.run_sweep(plan, fake_engine([ValueError("raise it with `ulimit -n 99`")]))


def test_a_target_gone_between_steps_ends_the_sweep_with_a_reason() -> None:
    plan, sock = listening_plan("100,200,300")
    sock.close()
    out = mh.run_sweep(plan, fake_engine([{"steps": [raw_step()], "interrupted": False}]))
    assert len(out.steps) == 1 and not out.interrupted
    assert "stopped accepting connections before step 2" in out.target_lost
    assert "connection refused" in out.target_lost
    assert "2 step(s) were skipped" in out.target_lost


# ---------------------------------------------------------------- the real engine vs perflab serve


def serve(**config: Any) -> Any:
    return _core.serve({"host": "127.0.0.1", "port": 0, **config})


def run_real(server: Any, **overrides: Any) -> mh.SweepOutcome:
    plan = plan_for(f"http://{server.address}/x", **{"rate": "200", **overrides})
    plan.config["read_timeout_s"] = overrides.pop("read_timeout_s", 3.0)
    return mh.run_sweep(plan)


def test_fixed_delay_shows_in_latency_from_the_intended_time() -> None:
    with serve(delay="2ms") as server:
        out = run_real(server)
    (step,) = out.steps
    # 0.4 s recorded at 200/s: the schedule puts 80 requests in the window (one more or
    # less at an edge), however busy the machine; each ends in exactly one way. How many
    # of them completed inside the window depends on the machine's speed (a late timer
    # leaves some to the drain or unsent), so only the accounting is asserted.
    assert step.elapsed_s == pytest.approx(0.4)
    due = step.requests_sent + step.unsent
    assert 79 <= due <= 81, (step.requests_sent, step.unsent)
    ok_in_window = step.ok_responses - step.ok_from_warmup
    assert ok_in_window + step.drained + step.failures + step.unfinished + step.unsent == due
    assert step.failures == 0 and ok_in_window + step.drained > 0
    answered = ok_in_window + step.drained
    assert step.status_counts == {"200": answered}
    # The server waits 2 ms, so no latency or service time is shorter (behaviour); the
    # upper bound only catches a hang (the read timeout is 3 s): a busy machine adds
    # tens of ms or more, which is its speed, not perflab's.
    assert 2000 <= step.latency.p50_us < 3_000_000
    assert step.service_time.p50_us >= 2000
    decoded = _core.hdr_decode(step.latency.encoded)
    assert decoded["count"] == answered
    assert base64.b64decode(step.latency.encoded)


def test_error_rate_is_counted_per_status() -> None:
    with serve(error_rate=0.25, seed=7) as server:
        out = run_real(server, rate="250")
    (step,) = out.steps
    completed = step.ok_responses + step.failures
    # 25% drawn over ~100 requests: 10-40% holds with overwhelming probability.
    assert 0.10 <= step.failures / completed <= 0.40
    assert step.status_counts["500"] == step.failures and step.failed_latency.count == step.failures
    # Only the error rule is asserted: on a busy machine perflab may also have sent
    # late and the server fallen behind, so the verdict may be "saturated".
    (summary,) = summarize_steps(out.steps)
    assert error_reasons(summary)[0].endswith("failed (status 500)")
    assert summary.verdict in ("errors", "saturated")


def test_a_stall_shows_in_p99_because_latency_counts_from_the_intended_time() -> None:
    # The server freezes for the last 300 ms of every 700 ms: requests due during the
    # stall wait for its end, so at least 300/700 of them... a p99 near 300 ms.
    with serve(stall="300ms/700ms") as server:
        out = run_real(server, rate="200", duration="0.8s", warmup="0.1s")
    (step,) = out.steps
    assert step.failures == 0
    assert 150_000 <= step.latency.p99_us <= 600_000
    # Service time of a request written during the stall also spans it, but the
    # send lag stays small: perflab kept sending on schedule (coordinated omission
    # would show a short latency here).
    assert step.latency.p99_us > 10 * step.latency.p50_us or step.latency.p50_us > 50_000


def test_a_server_dying_mid_step_gives_counted_errors_not_a_hang() -> None:
    server = serve(delay="1ms")

    def stop_once_serving() -> None:  # an event, not a time: the server has answered
        deadline = time.monotonic() + 60  # bounded if it never does
        while server.stats().get("requests", 0) < 60 and time.monotonic() < deadline:
            time.sleep(0.005)
        server.stop()

    threading.Thread(target=stop_once_serving, daemon=True).start()
    started = time.monotonic()
    out = run_real(server, rate="200,200", duration="0.8s")
    # One 0.8 s step, then the sweep sees the target gone: a hang would pass 60 s.
    assert time.monotonic() - started < 60
    assert len(out.steps) == 1 and out.target_lost and "refused" in out.target_lost
    (step,) = out.steps
    assert step.ok_responses > 0 and step.failures > 0
    assert set(step.errors) <= {"connect_refused", "reset", "closed_mid_response", "other"}


@pytest.mark.parametrize(
    ("fault", "kind"),
    [("close_mid_response", "closed_mid_response"), ("endless_body", "read_timeout")],
)
def test_faulty_responses_are_counted_errors(fault: str, kind: str) -> None:
    with serve(fault=fault, body_size=100) as server:
        plan = plan_for(
            f"http://{server.address}/", rate="20", duration="0.6s", warmup="0.1s", timeout="0.2s"
        )
        started = time.monotonic()
        out = mh.run_sweep(plan)
    # A body that never ends is cut at --timeout (0.2 s) after each write; one timed
    # per read would never fire (a chunk every 100 ms) and the step would hang past 60 s.
    assert time.monotonic() - started < 60
    (step,) = out.steps
    assert step.ok_responses == 0 and step.errors.get(kind, 0) == step.failures > 0


def test_closed_loop_keeps_n_connections_busy() -> None:
    with serve(delay="20ms") as server:
        out = run_real(server, rate=None, connections="3")
    (step,) = out.steps
    assert step.mode == "closed" and step.offered_rate is None
    assert step.connections == 3 and step.connections_peak == 3
    # Little's law from the step's own figures, whatever the machine's speed: 3 busy
    # connections complete 3 / mean latency per second (the 20 ms delay dwarfs the
    # client's turn-around); one busy connection would give a third of that.
    busy = step.ok_responses / step.elapsed_s * step.latency.mean_us * 1e-6
    assert 2.0 < busy < 3.6, busy  # above 3: requests begun in the warm-up
    assert step.send_lag.count == 0


def test_https_to_a_plain_http_server_is_counted_tls_errors() -> None:
    with serve() as server:
        plan = plan_for(f"https://{server.address}/", rate="20", insecure=True)
        started = time.monotonic()
        (step,) = mh.run_sweep(plan).steps
    assert time.monotonic() - started < 60  # a handshake that waited forever: a hang
    assert step.ok_responses == 0 and step.errors == {"tls": step.failures} and step.failures


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "::1", "localhost", "Example.COM.", "", "a..b", "x" * 64 + ".org"]
)
def test_an_ascii_host_reaches_the_resolver_as_the_idna_codec_gives_it(host: str) -> None:
    from perflab.engines.http.engine import _resolver_name

    try:
        want: object = host.encode("idna")
    except UnicodeError:
        want = host  # left as is: socket refuses it as before
    assert _resolver_name(host) == want


def test_a_unicode_host_is_left_for_socket_to_encode() -> None:
    from perflab.engines.http.engine import _resolver_name

    assert _resolver_name("bücher.de") == "bücher.de"
