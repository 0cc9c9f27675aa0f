"""perflab: a performance lab in one tool.

The authoring API for benchmark files is :func:`bench` and :func:`metric`; the Python
API (docs/api.md) is ``perflab.measure(func, *args, **kwargs)``, :class:`Runner` and
:func:`load` (from :mod:`perflab.api.calls`, imported on first use). ``perflab.trace``
(spans in a running program, :mod:`perflab.trace`) and ``perflab.span`` load the native
core on first use. Importing this package stays cheap (numpy, rich and the native core
load only when a command needs them) so that worker processes start fast.
"""

from __future__ import annotations

import sys
import types
from typing import Any

from perflab.measure.suite import bench, metric

__version__ = "0.1.0"
__all__ = ["__version__", "bench", "metric", "measure", "Runner", "load", "trace", "span"]


class _MeasurePackage(types.ModuleType):
    """The ``perflab.measure`` package, callable: ``perflab.measure(func, …)`` is
    :func:`perflab.api.calls.measure`. (``perflab.measure`` is also the package of the
    engines; Python binds a subpackage to its parent's attribute, so a plain function
    of that name would be replaced by the package on the first engine import.)"""

    def __call__(self, func: Any, *args: Any, **kwargs: Any) -> Any:
        from perflab.api.calls import measure as measure_func

        return measure_func(func, *args, **kwargs)


sys.modules["perflab.measure"].__class__ = _MeasurePackage


def __getattr__(name: str) -> Any:
    """``perflab.Runner``, ``perflab.load`` and ``perflab.Result`` (the Python API), and
    ``perflab.trace`` (the callable module) and ``perflab.span``, imported on first use."""
    if name in ("trace", "span"):
        import perflab.trace as trace_module

        return trace_module if name == "trace" else trace_module.span
    if name in ("Runner", "load", "Result"):
        from perflab.api import calls

        return getattr(calls, name)
    raise AttributeError(f"module 'perflab' has no attribute {name!r}")
