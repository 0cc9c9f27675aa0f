"""perflab: a performance lab in one tool.

The authoring API for benchmark files is :func:`bench` and :func:`metric`;
importing this package stays cheap (numpy, rich and the native core load only
when a command needs them) so that worker processes start fast.
``perflab.trace`` (spans in a running program, :mod:`perflab.trace`) and
``perflab.span`` load the native core on first use.
"""

from __future__ import annotations

from perflab.measure.suite import bench, metric

__version__ = "0.1.0"
__all__ = ["__version__", "bench", "metric", "trace", "span"]


def __getattr__(name: str):  # noqa: ANN202 - module attribute hook (PEP 562)
    """Lazy ``perflab.trace`` (the callable module) and ``perflab.span``."""
    if name in ("trace", "span"):
        import perflab.trace as trace_module

        return trace_module if name == "trace" else trace_module.span
    raise AttributeError(f"module 'perflab' has no attribute {name!r}")
