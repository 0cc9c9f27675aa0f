"""perflab: a performance lab in one tool.

The authoring API for benchmark files is :func:`bench` and :func:`metric`; the Python
API (docs/api.md) is ``perflab.measure(func, *args, **kwargs)``, :class:`Runner` and
:func:`load` (from :mod:`perflab.api.calls`, imported on first use). ``perflab.trace``
(spans in a running program, :mod:`perflab.trace`) and ``perflab.span`` load the native
core on first use. Importing this package stays cheap (numpy, rich, the native core and
even the authoring API load only when something needs them) so that worker processes and
`perflab http` start fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # loaded on first use (see __getattr__): `perflab http` never needs them
    from perflab.engines.run.suite import bench, metric

__version__ = "0.1.0"
__all__ = ["__version__", "bench", "metric", "measure", "Runner", "load", "trace", "span"]


def measure(func: Any, *args: Any, **kwargs: Any) -> Any:
    """Measure ``func(*args, **kwargs)`` now: :func:`perflab.api.calls.measure` (its
    docstring gives the keywords ``precision``, ``budget``, ``processes``, ``name``, the
    :class:`perflab.api.calls.Result` returned and the errors raised). A plain function:
    the API module, which loads numpy, is imported on the first call."""
    from perflab.api.calls import measure as measure_func

    return measure_func(func, *args, **kwargs)


def __getattr__(name: str) -> Any:
    """``perflab.bench`` and ``perflab.metric`` (the authoring API), ``perflab.Runner``,
    ``perflab.load`` and ``perflab.Result`` (the Python API), and ``perflab.trace`` (the
    callable module) and ``perflab.span``, imported on first use.

    Raises:
        AttributeError: any other name."""
    if name in ("bench", "metric"):
        from perflab.engines.run import suite

        return getattr(suite, name)
    if name in ("trace", "span"):
        import perflab.trace as trace_module

        return trace_module if name == "trace" else trace_module.span
    if name in ("Runner", "load", "Result"):
        from perflab.api import calls

        return getattr(calls, name)
    raise AttributeError(f"module 'perflab' has no attribute {name!r}")
