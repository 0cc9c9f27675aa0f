"""SIGTERM and SIGHUP handled like Ctrl-C: stop measuring, keep what was measured, save.

A service manager stops a job with SIGTERM, a closed terminal sends SIGHUP; by
default either kills Python on the spot and every finished sample is lost.
Inside :class:`StopSignals` they raise :class:`Stopped` (a KeyboardInterrupt, so
every engine's Ctrl-C path applies: workers are stopped, finished samples kept).
:meth:`StopSignals.shield` then turns later signals into notes, so that saving
and printing finish, and :meth:`StopSignals.exit_code` gives the shell's
convention, 128 + the signal's number (143 for SIGTERM, 129 for SIGHUP, 130 for
Ctrl-C): every command that measures exits with it (:func:`exit_code` for an
interrupt that reaches the top).
"""

from __future__ import annotations

import signal
from types import FrameType, TracebackType

#: the signals handled like Ctrl-C
SIGNALS = (signal.SIGTERM, signal.SIGHUP)
#: The exit code of a run stopped by Ctrl-C: 128 + SIGINT's number.
SIGINT_EXIT = 128 + int(signal.SIGINT)


class Stopped(KeyboardInterrupt):
    """A stop signal delivered as an interrupt.

    Attributes:
        signum: the signal's number.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class StopSignals:
    """Context manager: SIGTERM and SIGHUP raise :class:`Stopped` in the main thread.

    Must be entered from the main thread (Python delivers signals there). The
    previous handlers come back on exit.

    Attributes:
        signum: the first stop signal received, or None.
    """

    def __init__(self) -> None:
        self.signum: int | None = None
        self._previous: dict[int, object] = {}
        self._shielded = False

    def __enter__(self) -> StopSignals:
        self._previous = {s: signal.signal(s, self._handle) for s in SIGNALS}
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        first = self.signum is None
        if first:
            self.signum = signum
        if first and not self._shielded:
            raise Stopped(signum)

    def shield(self) -> None:
        """From now on a stop signal is only remembered (results are being saved)."""
        self._shielded = True

    def exit_code(self, interrupted: bool) -> int | None:
        """128 + the first stop signal's number; 130 when ``interrupted`` by Ctrl-C alone;
        None when nothing stopped the run."""
        if self.signum is not None:
            return 128 + self.signum
        return SIGINT_EXIT if interrupted else None


def exit_code(interrupt: KeyboardInterrupt) -> int:
    """The exit code of an interrupt that ended a command: 128 + the signal's number of a
    :class:`Stopped`, 130 for Ctrl-C."""
    return 128 + interrupt.signum if isinstance(interrupt, Stopped) else SIGINT_EXIT
