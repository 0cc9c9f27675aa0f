"""Scaling and cost models: USL, complexity classes, break-even.

Pure functions on numpy arrays; nothing here reads files or prints. The
package has one module per model (:mod:`.usl`, :mod:`.complexity`,
:mod:`.breakeven`) on a shared core (:mod:`.core`: the estimate type, input
checks, least-squares helpers; :mod:`.words`: numbers in readings).

* USL: X(N) = γN / (1 + α(N−1) + βN(N−1)) (Gunther 2007), fitted by bounded
  nonlinear least squares as R ``usl`` ≥ 2.0 does (Möding), with standard
  errors from the Jacobian, cov = s²·(JᵀJ)⁻¹. Gunther's older quadratic
  transform (R ``usl`` 1.x "default") is available as ``method="quadratic"``.
  Points that do not show USL behaviour are named (``UslFit.degenerate``).
* Complexity: cost(n) = a + b·g(n) for g in 1, log n, n, n log n, n², n³
  (Google Benchmark's BigO plus a constant term), weighted linear least
  squares per class (:mod:`.classes`), scored by AICc (Hurvich & Tsai 1989;
  Burnham & Anderson 2002) and chosen by tests of what the data contradict
  (:mod:`.choice`): one class, classes the data cannot tell apart, or none.
* Break-even: where two fitted cost curves (cold + a + b·g(n)) cross, with a
  parametric-bootstrap CI, never claimed where the measured order of the two
  sides says otherwise (:mod:`.measured`).

Units: N is a concurrency (threads, connections, users); X is a throughput in
whatever unit the caller measured (ops/s); n is an input size; costs are
seconds. Every interval is two-sided at ``level`` (default 95%).
"""

from __future__ import annotations

from perflab.analyze.fit.models.breakeven import BreakEven, breakeven, breakeven_from_points
from perflab.analyze.fit.models.classes import COMPLEXITY_MODELS, ComplexityCandidate
from perflab.analyze.fit.models.complexity import ComplexityFit, fit_complexity
from perflab.analyze.fit.models.usl import UslFit, fit_usl, littles_law_concurrency
from perflab.model.estimate import Estimate

__all__ = [
    "COMPLEXITY_MODELS",
    "BreakEven",
    "ComplexityCandidate",
    "ComplexityFit",
    "Estimate",
    "UslFit",
    "breakeven",
    "breakeven_from_points",
    "fit_complexity",
    "fit_usl",
    "littles_law_concurrency",
]
