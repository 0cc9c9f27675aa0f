"""The empty callable of a benchmark's shape: what the harness loop costs around a call.

Its own module, importing only :mod:`inspect`, because the counted worker
(:mod:`perflab.engines.run.counted_worker`) builds it before its counted samples and
imports nothing it can do without there (docs/count.md, "What a counted worker loads").
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any


def _empty(*args: Any, **kwargs: Any) -> None:
    """The empty callable whose cost is the harness loop's own overhead."""


def empty_like(func: Callable[..., Any]) -> Callable[..., Any]:
    """An empty function with ``func``'s parameter list (defaults become None).

    Calling it costs what calling ``func`` costs before its body runs, so the
    loop overhead is measured with the same argument binding as the benchmark
    (BenchmarkDotNet's "overhead" method follows the same idea). A callable
    without a readable signature (some builtins) gets ``(*args, **kwargs)``.
    """
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):
        return _empty
    params = list(sig.parameters.values())
    parts, star_seen = [], False
    for i, p in enumerate(params):
        if p.kind is p.VAR_POSITIONAL:
            parts.append(f"*{p.name}")
            star_seen = True
        elif p.kind is p.VAR_KEYWORD:
            parts.append(f"**{p.name}")
        else:
            if p.kind is p.KEYWORD_ONLY and not star_seen:
                parts.append("*")
                star_seen = True
            parts.append(p.name + ("=None" if p.default is not p.empty else ""))
            if p.kind is p.POSITIONAL_ONLY and all(
                q.kind is not q.POSITIONAL_ONLY for q in params[i + 1 :]
            ):
                parts.append("/")
    namespace: dict[str, Any] = {}
    exec(f"def _empty_like({', '.join(parts)}):\n    pass", namespace)  # noqa: S102
    return namespace["_empty_like"]
