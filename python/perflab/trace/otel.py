"""OpenTelemetry bridge: spans of an app instrumented with OpenTelemetry, in perflab's
histograms, with no rewrite of its instrumentation.

    from opentelemetry.sdk.trace import TracerProvider
    from perflab.trace import PerflabSpanProcessor

    provider = TracerProvider()
    provider.add_span_processor(PerflabSpanProcessor())

Each ended OpenTelemetry span is recorded under its name: duration
``end_time − start_time`` (ns, the SDK's own clock) and self time (that duration
less the durations of its direct children that ended before it, matched by
parent span id within this process). Spans also land in the Server-Timing sums
of the request being served in the current context, if any. Needs the
``opentelemetry-sdk`` package (``pip install perflab[otel]``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from perflab import _core

try:
    from opentelemetry.sdk.trace import SpanProcessor
except ImportError as exc:  # pragma: no cover - the extra is installed by `make test`
    raise ImportError(
        "perflab.trace.PerflabSpanProcessor needs the OpenTelemetry SDK: "
        "pip install opentelemetry-sdk (or perflab[otel])"
    ) from exc

#: Parents whose children's durations are held while they run; beyond this the oldest
#: entry is dropped (a parent that never ends, or one in another process).
MAX_PENDING_PARENTS = 10_000
#: Span names whose ids are cached (the registry's own cap bounds names anyway).
_MAX_CACHED_NAMES = 10_000


class PerflabSpanProcessor(SpanProcessor):
    """A SpanProcessor recording every ended span into perflab.trace's histograms.

    Thread-safe; ``on_end`` costs a dict lookup and one native call. Spans without
    both start and end times, or with a name that is not a str, are skipped.

    Method: durations come from the SDK's ``start_time``/``end_time`` (ns since the
    epoch, ``time.time_ns``); self time follows perflab.trace's definition (duration
    less direct children's), children found by ``span.parent.span_id``.
    """

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}
        self._child_ns: OrderedDict[int, int] = OrderedDict()
        self._lock = threading.Lock()

    def _id(self, name: str) -> int:
        span_id = self._ids.get(name)
        if span_id is None:
            span_id = _core.trace_register(name)[0]
            if span_id != 0 and len(self._ids) < _MAX_CACHED_NAMES:
                self._ids[name] = span_id
        return span_id

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        """Nothing to do when a span starts."""

    def on_end(self, span: Any) -> None:
        """Record ``span`` (an SDK ``ReadableSpan``); never raises."""
        try:
            start, end, name = span.start_time, span.end_time, span.name
            if start is None or end is None or not isinstance(name, str):
                return
            duration = max(0, end - start)
            context, parent = span.context, span.parent
            with self._lock:
                children = self._child_ns.pop(context.span_id, 0) if context else 0
                if parent is not None and parent.span_id:
                    self._child_ns[parent.span_id] = (
                        self._child_ns.get(parent.span_id, 0) + duration
                    )
                    if len(self._child_ns) > MAX_PENDING_PARENTS:
                        self._child_ns.popitem(last=False)
            _core.trace_record(self._id(name), duration, max(0, duration - children))
        except Exception:  # noqa: BLE001 - never break the instrumented app
            pass

    def shutdown(self) -> None:
        """Forget pending parents."""
        with self._lock:
            self._child_ns.clear()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Nothing is buffered: always True."""
        return True
