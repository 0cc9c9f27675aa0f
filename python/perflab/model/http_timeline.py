"""The timeline of one HTTP step, as results files hold it (``HttpStep.timeline``).

Per interval (1 s by default, ``perflab http --interval``): the offered rate, the
requests sent, the OK responses and failures completed, and the latency (from the
intended send time) and send lag of the requests intended in it, as percentiles and as
HdrHistograms (V2 deflate, base64, µs) that merge across engine threads and load agents.
Stored as columns, one list per quantity, all of one length (one entry per interval).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: Columns of a :class:`Timeline`, in order, besides ``interval_s``.
COLUMNS = (
    "t_s",
    "offered_rate",
    "sent",
    "ok",
    "errors",
    "p50_us",
    "p99_us",
    "p999_us",
    "send_lag_p99_us",
    "latency_encoded",
    "send_lag_encoded",
)


def shape_label(shape: dict[str, Any]) -> str:
    """``{"kind": "ramp", "from": 1000, "to": 10000, "over_s": 20}`` → ``"1,000→10,000/s
    over 20 s"``; a sine → ``"5,000±2,000/s, period 30 s"``."""
    if shape.get("kind") == "ramp":
        return f"{shape['from']:,.0f}→{shape['to']:,.0f}/s over {shape['over_s']:g} s"
    return f"{shape['mean']:,.0f}±{shape['amplitude']:,.0f}/s, period {shape['period_s']:g} s"


@dataclass
class Timeline:
    """One step's timeline, one list entry per interval.

    Attributes:
        interval_s: the interval's length, s.
        t_s: start of each interval, s after the step's start (warmup included).
        offered_rate: the load shape's mean rate over the interval (or the step's fixed
            rate), requests/s; None in closed loop.
        sent: requests intended in the interval and handed to a connection.
        ok / errors: OK responses / failed requests *completed* in the interval (÷
            ``interval_s``: the achieved rate and the error rate of that interval).
        p50_us / p99_us / p999_us: latency of the OK requests *intended* in the
            interval, from the intended send time (coordinated omission corrected), µs;
            None when none.
        send_lag_p99_us: p99 of their send lag (actual − intended send time), µs.
        latency_encoded / send_lag_encoded: those two HdrHistograms, V2 deflate base64.
    """

    interval_s: float = 1.0
    t_s: list[float] = field(default_factory=list)
    offered_rate: list[float | None] = field(default_factory=list)
    sent: list[int] = field(default_factory=list)
    ok: list[int] = field(default_factory=list)
    errors: list[int] = field(default_factory=list)
    p50_us: list[float | None] = field(default_factory=list)
    p99_us: list[float | None] = field(default_factory=list)
    p999_us: list[float | None] = field(default_factory=list)
    send_lag_p99_us: list[float | None] = field(default_factory=list)
    latency_encoded: list[str] = field(default_factory=list)
    send_lag_encoded: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.t_s)

    def achieved_rate(self) -> list[float]:
        """OK responses per second of each interval."""
        return [n / self.interval_s for n in self.ok]

    @classmethod
    def from_raw(cls, raw: dict[str, Any]) -> Timeline:
        """The engine's ``timeline`` dict ({interval_s, intervals: [{t_s, offered_rate,
        sent, ok, errors, latency: {count, p50_us, …, encoded_b64}, send_lag: …}]}) →
        a Timeline. Raises KeyError/TypeError on a malformed dict."""
        out = cls(interval_s=float(raw["interval_s"]))
        for row in raw["intervals"]:
            lat, lag = row["latency"], row["send_lag"]
            out.t_s.append(float(row["t_s"]))
            out.offered_rate.append(row.get("offered_rate"))
            out.sent.append(int(row["sent"]))
            out.ok.append(int(row["ok"]))
            out.errors.append(int(row["errors"]))
            for name, key in (("p50_us", "p50_us"), ("p99_us", "p99_us"), ("p999_us", "p999_us")):
                getattr(out, name).append(float(lat[key]) if lat["count"] else None)
            out.send_lag_p99_us.append(float(lag["p99_us"]) if lag["count"] else None)
            out.latency_encoded.append(lat["encoded_b64"])
            out.send_lag_encoded.append(lag["encoded_b64"])
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Timeline:
        """Build from the JSON form (unknown keys ignored). Raises ValueError when the
        columns differ in length."""
        out = cls(interval_s=float(data.get("interval_s", 1.0)))
        for name in COLUMNS:
            setattr(out, name, list(data.get(name) or []))
        lengths = {len(getattr(out, name)) for name in COLUMNS}
        if len(lengths) > 1:
            raise ValueError(f"timeline columns of unequal length: {sorted(lengths)}")
        return out
