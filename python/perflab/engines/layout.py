"""Memory-layout randomization of worker processes: a fresh layout for every process.

Where a program's stack, heap objects and hash tables land in memory can bias its
speed by several percent one way for a whole process, and everything that shapes
the layout before the first call (the size of the environment, what was
allocated first, the hash seed) is fixed by where and how it was started
(Mytkowicz et al. 2009, "Producing wrong data without doing anything obviously
wrong!"; Curtsinger & Berger 2013, "Stabilizer"). If every worker of a run
shares one layout, the bias is shared too: the CI is tight around the wrong
value and a run started from another shell or folder disagrees with it.

``perflab run`` therefore gives each worker process its own layout, drawn from
a seeded generator (``--seed`` repeats the draws; ``--no-randomize`` turns this
off), and records what each process got:

* ``env_padding_bytes``: a padding environment variable of 0–4,095 bytes
  (:data:`ENV_PADDING_VAR`, the name ``perflab cmd`` uses; hyperfine does the
  same), which moves the initial stack and the interpreter's start-up heap;
* ``hash_seed``: a random ``PYTHONHASHSEED`` (unless the user set one, which is
  kept), which reorders every str-keyed dict and set the program builds;
* ``heap_objects``: 0–4,095 small objects of mixed sizes allocated (and kept)
  by the worker before it imports the benchmark file, which shifts where the
  benchmark's own objects land in the allocator's pools; and one medium block
  (513 bytes–16 KiB, the C heap's ``malloc``, not CPython's pools) per
  :data:`MEDIUM_EVERY` of them, every other one freed again: holes in the C heap,
  which decide whether a later ``realloc`` grows in place or copies.

The process is the unit of replication in the statistics (a hierarchical
bootstrap resamples processes), so with a layout per process the variation
that layout causes is inside the CI instead of a bias outside it.
benchmarks/layout.py measures how much each of these sources moves a median.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from typing import Any

#: the environment variable whose random length varies each process's layout
ENV_PADDING_VAR = "PERFLAB_RANDOMIZED_ENVIRONMENT_OFFSET"
#: padding lengths are drawn uniformly from 0 to this − 1, bytes (a page: every
#: alignment of the stack start within it is equally likely)
ENV_PADDING_RANGE = 4096
#: heap object counts are drawn uniformly from 0 to this − 1
HEAP_OBJECTS_RANGE = 4096
#: one medium block (C heap) per this many heap objects
MEDIUM_EVERY = 16
#: PYTHONHASHSEED values are drawn from 1 to this (0 would turn hashing randomization off)
MAX_HASH_SEED = 4_294_967_295


@dataclass(frozen=True)
class Layout:
    """The layout randomization of one worker process.

    Attributes:
        env_padding_bytes: length of the padding variable, bytes (0–4,095).
        hash_seed: PYTHONHASHSEED given to the process (the user's own when set).
        heap_objects: small objects the worker allocates before importing the file.
    """

    env_padding_bytes: int
    hash_seed: int
    heap_objects: int

    def to_dict(self) -> dict[str, int]:
        """JSON form (the ``layout`` of :class:`perflab.model.Process`)."""
        return {
            "env_padding_bytes": self.env_padding_bytes,
            "hash_seed": self.hash_seed,
            "heap_objects": self.heap_objects,
        }

    def environment(self) -> dict[str, str]:
        """The variables to add to the worker's environment."""
        return {
            ENV_PADDING_VAR: "X" * self.env_padding_bytes,
            "PYTHONHASHSEED": str(self.hash_seed),
        }


class LayoutDraws:
    """Draws one :class:`Layout` per process from a seeded generator.

    Args:
        seed: the run's ``--seed`` (None: a fresh random sequence each run), or a
            string made from it (a counted benchmark's own draws).
        user_hash_seed: the PYTHONHASHSEED the user set (kept for every process),
            or None to draw one per process. A non-numeric value ("random") counts
            as unset.
    """

    def __init__(self, seed: int | str | None, user_hash_seed: str | None = None) -> None:
        self._rng = random.Random(None if seed is None else f"layout-{seed}")
        self._hash_seed = int(user_hash_seed) if (user_hash_seed or "").isdigit() else None

    def next(self) -> Layout:
        """The next process's layout."""
        padding = self._rng.randrange(ENV_PADDING_RANGE)
        hash_seed = self._rng.randint(1, MAX_HASH_SEED)
        heap = self._rng.randrange(HEAP_OBJECTS_RANGE)
        return Layout(padding, self._hash_seed if self._hash_seed is not None else hash_seed, heap)


def from_environment(seed: int | str | None) -> LayoutDraws:
    """The draws of a run, keeping a PYTHONHASHSEED the user set in this environment."""
    return LayoutDraws(seed, os.environ.get("PYTHONHASHSEED"))


def heap_padding(count: int) -> list[Any]:
    """What a layout with ``count`` heap objects keeps alive while the benchmark runs.

    ``count`` small objects of mixed sizes (bytes of 0–511 bytes: every pymalloc size
    class), so that the benchmark's objects land elsewhere in CPython's pools; then
    ``count // MEDIUM_EVERY`` medium blocks of 513 bytes–16 KiB (above pymalloc's limit:
    the C heap's ``malloc``), of which every other one is freed again, leaving holes of
    drawn sizes between kept blocks. A holed C heap decides whether a ``realloc`` (a
    list or string growing) extends in place or copies: counted by hand, a JSON round
    trip moved 1.44% (28.72–29.13 M instructions per call) over six such paddings,
    where perflab's layouts without them moved it 0.41%. O(count); at most ~1 MB of
    small objects and ~1 MB of medium blocks kept for 4,095.
    """
    count = max(0, count)
    small = [bytes(i * 37 % 512) for i in range(count)]
    medium = [bytes(513 + i * 7919 % 16_384) for i in range(count // MEDIUM_EVERY)]
    del medium[::2]  # freed: holes in the C heap
    return small + medium
