"""perflab: a performance lab in one tool.

The authoring API for benchmark files is :func:`bench` and :func:`metric`;
importing this package stays cheap (numpy, rich and the native core load only
when a command needs them) so that worker processes start fast.
"""

from __future__ import annotations

from perflab.measure.suite import bench, metric

__version__ = "0.1.0"
__all__ = ["__version__", "bench", "metric"]
