"""HTTP comparisons: HdrHistogram V2 decoding, percentile CIs from histograms, rate tests.

Histograms are built by a tiny reference encoder below (the documented V2
format) and checked against encodings written by the Java, C and JS
HdrHistogram libraries, and against perflab._core.hdr_decode when built.
"""

from __future__ import annotations

import base64
import math
import struct
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perflab.analyze import hdr
from perflab.analyze.compare import suite as cmp
from perflab.model import Benchmark, Histogram, HttpStep

#: Encodings written by other HdrHistogram implementations, with what they hold.
FOREIGN = [
    # JS/Vala test suite: Histogram(1, 300, 3) with 100, 200, 250 recorded
    ("HISTFAAAACV4nJNpmSzMwMDAwQABzFCaEUrp2H+AsI4zMh1lZEpkAgBdIQSk", [100, 200, 250], [1, 1, 1]),
    # Java and C: (1, 2048, 3) with 2048 recorded; highest equivalent value 2049
    ("HISTFAAAACB4nJNpmSzMwMDAzAABMJoRQnEw2H+AsP7LMwEARZgDpQ==", [2049], [1]),
    # Java PackedHistogram(1, 1000, 0) with 100 recorded: bucket 64–127
    ("HISTFAAAAB14nJNpmSzMwMDAxIAKGCEU8wv7DxAWLxMASToDcw==", [127], [1]),
]


def _index(value: int, half_magnitude: int = 10) -> int:
    """Counts-array index of ``value`` for lowest=1 (HdrHistogram's countsArrayIndex)."""
    mask = (1 << (half_magnitude + 1)) - 1
    bucket = max((value | mask).bit_length() - 1 - half_magnitude, 0)
    sub = value >> bucket
    return ((bucket + 1) << half_magnitude) + (sub - (1 << half_magnitude)) if bucket else sub


def _varint(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z >= 0x80 and len(out) < 8:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z & 0xFF)
    return bytes(out)


def encode(values_us: list[int], digits: int = 3) -> str:
    """Reference V2-deflate encoder (lowest 1, highest 3.6e9 µs, as perflab's engine)."""
    counts: dict[int, int] = {}
    for v in values_us:
        counts[_index(int(v))] = counts.get(_index(int(v)), 0) + 1
    payload, last = bytearray(), 0
    for index in sorted(counts):
        if index > last:
            payload += _varint(-(index - last))
        payload += _varint(counts[index])
        last = index + 1
    inner = struct.pack(">iiiiqqd", 0x1C849313, len(payload), 0, digits, 1, 3_600_000_000, 1.0)
    body = zlib.compress(inner + bytes(payload))
    return base64.b64encode(struct.pack(">iI", 0x1C849314, len(body)) + body).decode()


def step(
    latencies_us: np.ndarray, rate: float = 1000.0, elapsed: float = 10.0, ok: int | None = None
) -> HttpStep:
    hist = Histogram(encoded=encode([int(v) for v in latencies_us]), count=len(latencies_us))
    return HttpStep(
        offered_rate=rate,
        connections=8,
        mode="open",
        duration_s=elapsed,
        warmup_s=1.0,
        elapsed_s=elapsed,
        requests_sent=len(latencies_us),
        ok_responses=len(latencies_us) if ok is None else ok,
        latency=hist,
    )


def http_bench(*steps: HttpStep) -> Benchmark:
    return Benchmark(name="GET http://127.0.0.1:8080/", kind="http", steps=list(steps))


@pytest.mark.parametrize("encoded, values, counts", FOREIGN)
def test_decodes_what_other_implementations_wrote(
    encoded: str, values: list[int], counts: list[int]
) -> None:
    hist = hdr.decode_histogram(encoded)
    assert hist.values.tolist() == values and hist.counts.tolist() == counts


def test_empty_and_corrupt_encodings() -> None:
    assert hdr.decode_histogram("").total == 0
    for bad in ("!!!", base64.b64encode(b"\x00" * 48).decode(), FOREIGN[0][0][:30]):
        with pytest.raises(ValueError, match="not an HdrHistogram|not valid base64"):
            hdr.decode_histogram(bad)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 50_000_000), min_size=1, max_size=300))
def test_round_trip_keeps_every_value_within_its_bucket(values: list[int]) -> None:
    hist = hdr.decode_histogram(encode(values))
    assert hist.total == len(values)
    ranks = np.arange(1, len(values) + 1)
    exact = np.sort(values)
    decoded = hist.at_rank(ranks)
    # highest equivalent value: ≥ the value, within 3 significant digits
    assert np.all(decoded >= exact) and np.all(decoded <= exact * 1.001 + 1)


def test_quantiles_match_the_native_decoder_when_built() -> None:
    from perflab import _core as core

    values = np.random.default_rng(1).lognormal(7, 1, 5000).astype(int) + 1
    encoded = encode(values.tolist())
    native = core.hdr_decode(encoded, [0.5, 0.9, 0.99, 0.999])
    hist = hdr.decode_histogram(encoded)
    for q, v in native["quantiles"].items():
        assert hist.quantile(q) == v


@settings(max_examples=20, deadline=None)
@given(
    a=st.lists(st.integers(1, 2000), min_size=1, max_size=80),
    b=st.lists(st.integers(1, 2000), min_size=1, max_size=80),
)
def test_mann_whitney_from_counts_equals_scipy_on_the_values(a: list[int], b: list[int]) -> None:
    from scipy import stats as sps

    hist_a, hist_b = hdr.decode_histogram(encode(a)), hdr.decode_histogram(encode(b))
    ours = hdr.mann_whitney_counts(hist_a, hist_b)
    va, vb = hist_a.at_rank(np.arange(1, len(a) + 1)), hist_b.at_rank(np.arange(1, len(b) + 1))
    if np.ptp(np.concatenate([va, vb])) == 0:
        assert math.isnan(ours)
        return
    theirs = sps.mannwhitneyu(vb, va, alternative="two-sided", method="asymptotic").pvalue
    assert ours == pytest.approx(theirs, rel=1e-6, abs=1e-9)


def test_quantile_replicates_centre_on_the_quantile_and_cover_it() -> None:
    rng = np.random.default_rng(0)
    hist = hdr.decode_histogram(encode((rng.exponential(1000, 20_000) + 1).astype(int).tolist()))
    reps = hdr.quantile_replicates(hist, 0.99, 4000, rng)
    assert np.median(reps) == pytest.approx(hist.quantile(0.99), rel=0.01)
    # p99 of 20,000 exponential values: relative standard error about 2%
    assert 0.005 < np.std(reps) / np.median(reps) < 0.05


def test_slower_latency_and_same_rate() -> None:
    rng = np.random.default_rng(2)
    a = step(rng.lognormal(6, 0.3, 20_000) + 1)
    b = step(rng.lognormal(6, 0.3, 20_000) * 1.2 + 1)
    rows = cmp.compare_benchmark(http_bench(a), http_bench(b), resamples=500)
    by_metric = {r.metric: r for r in rows}
    assert set(by_metric) == {"rate", "p50", "p90", "p99", "p99.9"}
    assert by_metric["p50"].verdict == "slower"
    assert by_metric["p50"].ratio.value == pytest.approx(1.2, rel=0.02)
    assert by_metric["rate"].verdict == "same"
    assert by_metric["p50"].p_value < 1e-6 and by_metric["p50"].p_value == by_metric["p99"].p_value
    assert "open 1,000/s" in by_metric["p50"].id


def test_a_lower_achieved_rate_is_slower() -> None:
    rng = np.random.default_rng(3)
    lat = rng.lognormal(6, 0.3, 2000) + 1
    a, b = step(lat, elapsed=10.0, ok=10_000), step(lat, elapsed=10.0, ok=8_000)
    rate = cmp.compare_benchmark(http_bench(a), http_bench(b), resamples=200)[0]
    assert rate.metric == "rate" and rate.higher_is_better
    assert rate.verdict == "slower"
    assert rate.ratio.ci_low < 0.8 < rate.ratio.ci_high
    assert rate.p_value < 1e-6


def test_equal_histograms_are_not_an_alarm() -> None:
    rng = np.random.default_rng(4)
    a, b = (step(rng.lognormal(6, 0.3, 50_000) + 1) for _ in range(2))
    rows = cmp.compare_benchmark(http_bench(a), http_bench(b), resamples=500)
    assert all(r.verdict in ("same", "inconclusive") for r in rows), [
        (r.id, r.verdict) for r in rows
    ]
    assert all("run-to-run" in " ".join(r.notes) for r in rows if r.metric != "rate")


def test_steps_present_on_one_side_are_listed_and_empty_histograms_fail() -> None:
    rng = np.random.default_rng(5)
    lat = rng.lognormal(6, 0.3, 1000) + 1
    extra = step(lat, rate=2000.0)
    rows = cmp.compare_benchmark(http_bench(step(lat)), http_bench(step(lat), extra), resamples=200)
    missing = [r for r in rows if "2,000/s" in r.id]
    assert len(missing) == 1 and missing[0].verdict == "failed"
    assert "missing in A" in missing[0].notes[0]
    empty = step(np.array([]), ok=0)
    rows = cmp.compare_benchmark(http_bench(step(lat)), http_bench(empty), resamples=200)
    assert {r.verdict for r in rows} == {"failed"}


def test_an_unreadable_histogram_fails_its_rows_not_the_command() -> None:
    rng = np.random.default_rng(7)
    good = step(rng.lognormal(6, 0.3, 1000) + 1)
    bad = step(rng.lognormal(6, 0.3, 1000) + 1)
    bad.latency.encoded = "not base64!"
    rows = cmp.compare_benchmark(http_bench(good), http_bench(bad), resamples=200)
    latency = [r for r in rows if r.metric == "latency"]
    assert len(latency) == 1 and latency[0].verdict == "failed"
    assert "unreadable" in latency[0].notes[0]
    assert any(r.metric == "rate" and r.verdict != "failed" for r in rows)  # still compared


def test_geomean_uses_p50_of_http_steps_only() -> None:
    from perflab.model import Results

    rng = np.random.default_rng(6)
    a = Results(
        "http",
        ["perflab"],
        "t",
        "0.1.0",
        benchmarks=[http_bench(step(rng.lognormal(6, 0.3, 5000) + 1))],
    )
    b = Results(
        "http",
        ["perflab"],
        "t",
        "0.1.0",
        benchmarks=[http_bench(step(rng.lognormal(6, 0.3, 5000) * 1.5 + 1))],
    )
    suite = cmp.compare_results(a, b, resamples=300)
    assert suite.geomean.value == pytest.approx(
        next(r for r in suite.rows if r.metric == "p50").ratio.value
    )


def test_a_step_with_errors_on_a_side_is_said_once() -> None:
    """Issue 29: a server that answered 5% errors in B is named "errors" under the
    comparison (its fast failures are not in B/A's latency), with each side's verdict."""
    from perflab.model import Results

    rng = np.random.default_rng(8)
    lat = rng.lognormal(6, 0.3, 10_000) + 1
    failing = step(lat)
    failing.failures, failing.status_counts = 500, {"200": 10_000, "500": 500}

    def results(s: HttpStep) -> Results:
        return Results("http", ["perflab"], "t", "0.1.0", benchmarks=[http_bench(s)])

    suite = cmp.compare_results(results(step(lat)), results(failing), resamples=200)
    assert (
        "step open 1,000/s: A ok; B errors (4.8% failed (status 500)): B/A compares "
        "successful requests only"
    ) in suite.warnings
    same = cmp.compare_results(results(step(lat)), results(step(lat)), resamples=200)
    assert not any(w.startswith("step ") for w in same.warnings)
