"""``perflab http --rate`` as a load shape: a linear ramp (``1k..20k/60s``), held steps
(``1k,5k,10k/20s``) or a sine (``5k~2k/30s``), besides a fixed rate or a sweep.

The engine follows a shape by time change of its arrival process (rust/engine
``load/shape.rs``); this module only reads the user's text and names shapes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from perflab.errors import UsageError

_FORMS = "1k..20k/60s (ramp), 1k,5k,10k/20s (held steps) or 5k~2k/30s (sine)"


@dataclass
class RateSpec:
    """What ``--rate`` asked for.

    Attributes:
        rates: offered rate of each step, requests/s (a shape: one step, at its peak,
            which sizes the connection pool).
        shape: the engine's shape dict (``{"kind": "ramp", "from", "to", "over_s"}`` or
            ``{"kind": "sine", "mean", "amplitude", "period_s"}``), or None.
        length_s: the length written after ``/`` (a ramp's length, a sine's period, each
            held step's length), s; the step duration unless ``--duration`` is given.
    """

    rates: list[float]
    shape: dict[str, Any] | None = None
    length_s: float | None = None


def parse_rate(text: str) -> RateSpec:
    """Read ``--rate``: ``R``, a sweep (``START:STOP:STEP`` or a list), either with
    ``/LENGTH`` (each step held that long), ``FROM..TO/LENGTH`` (linear ramp) or
    ``MEAN~AMPLITUDE/PERIOD`` (sine). Numbers may end in ``k``.

    Raises:
        UsageError: a malformed form, a rate ≤ 0, a sine amplitude not below its mean,
            or a ramp/sine without its length.
    """
    from perflab.engines.http.engine import _number, parse_sweep
    from perflab.units import parse_positive_duration

    head, slash, tail = text.partition("/")
    length = parse_positive_duration(tail.strip(), "--rate length") if slash else None
    if ".." in head or "~" in head:
        if length is None:
            raise UsageError(f"--rate {text!r}: a ramp or a sine needs its length; write {_FORMS}")
        sep = ".." if ".." in head else "~"
        a_text, _, b_text = head.partition(sep)
        a, b = _number(a_text, "--rate"), _number(b_text, "--rate")
        if sep == "..":
            if a <= 0 or b <= 0:
                raise UsageError(f"--rate {text!r}: both ends of a ramp must be above zero")
            shape = {"kind": "ramp", "from": a, "to": b, "over_s": length}
            return RateSpec([max(a, b)], shape, length)
        if a <= 0 or not 0 <= b < a:
            raise UsageError(
                f"--rate {text!r}: a sine MEAN~AMPLITUDE needs 0 ≤ AMPLITUDE < MEAN "
                "(the rate must stay above zero)"
            )
        shape = {"kind": "sine", "mean": a, "amplitude": b, "period_s": length}
        return RateSpec([a + b], shape, length)
    return RateSpec(parse_sweep(head), None, length)
