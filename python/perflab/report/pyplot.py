"""matplotlib set up once for every chart perflab draws."""

from __future__ import annotations

from typing import Any


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the non-interactive Agg backend, with math text off.

    Names in charts are untrusted text: with math text on, a "$" in a benchmark name
    would be parsed as a formula (and may fail to render). Imported lazily so that
    commands that draw nothing never load matplotlib.

    Returns:
        The ``matplotlib.pyplot`` module.
    """
    import matplotlib

    matplotlib.use("Agg", force=True)
    matplotlib.rcParams["text.parse_math"] = False
    import matplotlib.pyplot as plt

    return plt
