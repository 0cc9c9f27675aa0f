"""Live progress of a run on stderr with rich: one bar per benchmark (budget spent),
its process count and the CI half-width reached so far."""

from __future__ import annotations

from typing import Any


class RichProgress:
    """A :class:`perflab.engines.progress.Progress` drawn with ``rich.progress``.

    Use as a context manager; nothing is drawn when stderr is not a terminal
    unless ``force`` is set. ``unit`` names what the count counts: "proc" (worker
    processes of ``run``) or "runs" (timed runs of ``cmd``).
    """

    def __init__(self, precision: float, force: bool = False, unit: str = "proc") -> None:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        from perflab.report.console import make_console

        self.precision, self.unit = precision, unit
        self._tasks: dict[str, Any] = {}
        console = make_console(stderr=True)
        self._progress = Progress(
            TextColumn("{task.description}", justify="left", markup=False),
            BarColumn(bar_width=24),
            TextColumn("{task.fields[status]}", markup=False),
            TimeElapsedColumn(),
            console=console,
            transient=False,
            disable=not (force or console.is_terminal),
        )

    def __enter__(self) -> RichProgress:
        self._progress.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._progress.__exit__(*exc)

    def start_case(self, case_id: str, budget_s: float) -> None:
        """Add a bar for the case; its total is the time budget."""
        from perflab.report.escape import terminal

        self._tasks[case_id] = self._progress.add_task(
            terminal(case_id, one_line=True), total=budget_s, status="starting"
        )

    def update_case(
        self, case_id: str, count: int, spent_s: float, half_width: float | None
    ) -> None:
        """Show the processes (or runs) so far and the CI half-width reached against the
        target."""
        ci = f"±{half_width:.2%}" if half_width is not None else "±?"
        self._progress.update(
            self._tasks[case_id],
            completed=spent_s,
            status=f"{count:,} {self.unit}  {ci} (target ±{self.precision:.1%})",
        )

    def finish_case(self, case_id: str, reason: str) -> None:
        """Fill the bar and say why the case stopped."""
        task = self._tasks[case_id]
        status = self._progress.tasks[task].fields["status"]
        self._progress.update(
            task, completed=self._progress.tasks[task].total, status=f"{status}  [{reason}]"
        )
