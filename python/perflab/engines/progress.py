"""The progress interface every engine reports to while it measures.

The console draws it (:class:`perflab.report.progress.RichProgress`); tests and
``--quiet`` use :class:`NullProgress`. The Python harness runner and the command
engine both report through it, so neither imports the other.
"""

from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    """Receives progress of a run, one case (benchmark or command) at a time."""

    def start_case(self, case_id: str, budget_s: float) -> None:
        """A case is about to be measured; ``budget_s`` is its time budget, s."""

    def update_case(
        self, case_id: str, processes: int, spent_s: float, half_width: float | None
    ) -> None:
        """A process (or run) of the case finished; ``spent_s`` of its budget is used and
        ``half_width`` is the relative CI half-width reached (0.01 = 1%), None if unknown."""

    def finish_case(self, case_id: str, reason: str) -> None:
        """The case stopped for ``reason`` (e.g. "precision", "budget")."""


class NullProgress:
    """A Progress that shows nothing (also usable as a context manager, like RichProgress)."""

    def __enter__(self) -> NullProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        """Nothing to close."""

    def start_case(self, case_id: str, budget_s: float) -> None:
        """Ignore."""

    def update_case(
        self, case_id: str, processes: int, spent_s: float, half_width: float | None
    ) -> None:
        """Ignore."""

    def finish_case(self, case_id: str, reason: str) -> None:
        """Ignore."""
