"""The records of a ``trace`` results file (``perflab.trace.dump``): one span name's
counts, sums and HdrHistograms (:class:`TraceSpan`, :class:`SpanHistogram`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from perflab.model.json_form import from_known as _from_dict


@dataclass
class SpanHistogram:
    """An HdrHistogram of span times in the standard V2 compressed encoding, base64,
    **nanoseconds** (2 significant digits), with its summary.

    Attributes:
        encoded: base64 of the V2-deflate serialization.
        count: recorded spans.
        min_ns … max_ns: summary recomputed from ``encoded`` on load, ns.
    """

    encoded: str = ""
    count: int = 0
    min_ns: float = math.nan
    mean_ns: float = math.nan
    p50_ns: float = math.nan
    p90_ns: float = math.nan
    p99_ns: float = math.nan
    p999_ns: float = math.nan
    max_ns: float = math.nan


@dataclass
class TraceSpan:
    """One span name of a ``trace`` file (written by ``perflab.trace.dump``).

    Attributes:
        count: spans recorded.
        total_ns / self_total_ns: exact sums of their durations / self times, ns.
        duration: HdrHistogram of each span's wall duration, ns.
        self_time: HdrHistogram of each span's duration less its direct child spans', ns.
    """

    count: int = 0
    total_ns: int = 0
    self_total_ns: int = 0
    duration: SpanHistogram = field(default_factory=SpanHistogram)
    self_time: SpanHistogram = field(default_factory=SpanHistogram)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TraceSpan:
        """Build from the JSON form. Raises TypeError/KeyError on malformed data."""
        span = _from_dict(cls, data)
        for name in ("duration", "self_time"):
            setattr(span, name, _from_dict(SpanHistogram, data.get(name) or {}))
        return span
