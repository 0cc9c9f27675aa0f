"""The raw records of the instruction-count mode (``--count instructions``).

What Callgrind counted, as integers, beside the event names they belong to; every
figure perflab prints from them (instructions per op, the layout band, estimated
cycles) is recomputed by :mod:`perflab.analyze.counts` when a file is read.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

#: the value of ``--count`` (and of the results' ``settings.count``) that counts instructions
INSTRUCTIONS = "instructions"


def _events_of(values: list[int], events: list[str]) -> dict[str, int]:
    """event name → value (a missing trailing value is zero)."""
    return {name: int(values[i]) if i < len(values) else 0 for i, name in enumerate(events)}


class _Record:
    """JSON conversion shared by the count records."""

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return asdict(self)  # type: ignore[call-overload]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Any:
        """Build from the JSON form (unknown keys ignored). Raises TypeError/KeyError."""
        names = set(cls.__dataclass_fields__)  # type: ignore[attr-defined]
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass
class Counts(_Record):
    """What Callgrind counted in one worker process of ``perflab run --count``.

    Attributes:
        events: the event names every value list follows: ``["Ir"]``, or with
            ``--cache-sim`` Ir, Dr, Dw, I1mr, D1mr, D1mw, ILmr, DLmr, DLmw.
        iterations: calls per counted sample (the same for the empty samples).
        cold: the very first call of the process, counted alone.
        samples: one value list per counted sample of ``iterations`` calls.
        empty: one value list per counted sample of ``iterations`` calls of an empty
            callable of the same shape through the same loop: the fixed cost.
        gc_enabled: whether automatic garbage collection was on while counting.
        gc_threshold: ``gc.get_threshold()`` in the worker.
        gc_collections: collections that ran during the counted and empty samples.
        type_cache_cleared: True when each counted sample started with CPython's type
            attribute cache emptied (``sys._clear_type_cache()``, uncounted); None in
            files older than schema 4 (unknown).
        aslr_off: True when the process started with address-space randomization off.
        valgrind: Valgrind's version ("3.19.0").
    """

    events: list[str]
    iterations: int
    cold: list[int]
    samples: list[list[int]] = field(default_factory=list)
    empty: list[list[int]] = field(default_factory=list)
    gc_enabled: bool | None = None
    gc_threshold: list[int] | None = None
    gc_collections: int | None = None
    type_cache_cleared: bool | None = None
    aslr_off: bool = True
    valgrind: str = ""

    def event(self, values: list[int], name: str) -> int | None:
        """The value of event ``name`` in ``values`` (None when it was not counted)."""
        return _events_of(values, self.events).get(name)


@dataclass
class CommandCounts(_Record):
    """What Callgrind counted over one run of a whole command (``perflab cmd --count``),
    child processes followed (``--trace-children=yes``) and summed.

    Attributes:
        events: the event names of ``totals`` (as in :class:`Counts`).
        totals: the sum over every counted process of the run.
        processes: how many processes were counted (the command and its children).
        layout: the run's layout (``env_padding_bytes``, ``hash_seed``).
        aslr_off / valgrind: as in :class:`Counts`.
    """

    events: list[str]
    totals: list[int]
    processes: int
    layout: dict[str, int] = field(default_factory=dict)
    aslr_off: bool = True
    valgrind: str = ""
