"""A benchmark's profile: where its measured calls spent their time (``run --profile``,
``cmd --profile``) or their instructions (``--count instructions --profile``).

One record per benchmark (:class:`Profile`), kept in the results file as the
benchmark's optional ``profile`` (absent or null: not profiled), and two documents
written beside the results file, each in its field's standard format:

* collapsed stacks (:func:`collapsed_text`), the format of Brendan Gregg's
  ``flamegraph.pl``, inferno and speedscope's importer: one line per distinct stack,
  frames root first joined by ``;``, a space, then the stack's weight;
* speedscope JSON (:func:`speedscope_document`), the "sampled" profile type of the
  file format at https://www.speedscope.app/file-format-schema.json.

A frame is ``function (file:line)``, the line being the function's first (py-spy's
``--function`` aggregation), so one name stands for one function wherever it ran.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perflab.model.json_form import from_known

#: at most this many distinct stacks are kept per profile (the lightest are folded into
#: their deepest kept prefix), and a frame's text is cut to this many characters
MAX_STACKS = 4000
MAX_FRAME_CHARS = 300
#: at most this many frames deep; deeper frames fold into the last kept one
MAX_DEPTH = 200
SPEEDSCOPE_SCHEMA = "https://www.speedscope.app/file-format-schema.json"


@dataclass
class Profile:
    """The merged profile of one benchmark.

    Attributes:
        kind: "time" (samples of a sampling profiler, each ``1 / rate_hz`` s of wall
            time) or "instructions" (Callgrind's exclusive Ir per function, deterministic).
        sampler: the tool and its version, e.g. "py-spy 0.4.3", "callgrind 3.19.0".
        rate_hz: samples per second asked of the sampler (None for instructions).
        stacks: weight per collapsed stack (frames root first, ``;``-joined): samples,
            or instructions.
        pids: the profiled processes, never the ones whose samples were timed.
        seconds: wall time profiled, summed over the processes, s.
        calls: measured calls made while profiled (None when unknown, e.g. a command).
        errors: samples the sampler failed to take.
        note: what the reader should know ("" for nothing), e.g. stacks folded.
    """

    kind: str = "time"
    sampler: str = ""
    rate_hz: float | None = None
    stacks: dict[str, int] = field(default_factory=dict)
    pids: list[int] = field(default_factory=list)
    seconds: float = 0.0
    calls: int | None = None
    errors: int = 0
    note: str = ""

    @property
    def total(self) -> int:
        """Total weight (samples or instructions)."""
        return sum(self.stacks.values())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Profile:
        """From the JSON form. Raises TypeError on malformed data."""
        profile = from_known(cls, data)
        profile.stacks = {str(k): int(v) for k, v in (data.get("stacks") or {}).items()}
        profile.pids = [int(p) for p in data.get("pids") or []]
        return profile


def clean_frame(text: str) -> str:
    """A frame's text made safe for the collapsed format (no ``;``, no line breaks) and
    bounded to :data:`MAX_FRAME_CHARS` characters."""
    text = "".join(" " if c in "\n\r\t" else c for c in text).replace(";", ":")
    return text[:MAX_FRAME_CHARS]


def bounded(stacks: dict[str, int], max_stacks: int = MAX_STACKS) -> tuple[dict[str, int], str]:
    """``stacks`` bounded to ``max_stacks`` distinct stacks and :data:`MAX_DEPTH` frames:
    the lightest stacks are merged into their caller's stack, their weight kept, so the
    total and the total of every function still shown are unchanged.

    Returns:
        (bounded stacks, a note saying what was folded, or "").
    """
    out: dict[str, int] = {}
    for stack, weight in stacks.items():
        frames = stack.split(";")[:MAX_DEPTH]
        key = ";".join(frames)
        out[key] = out.get(key, 0) + weight
    folded = 0
    while len(out) > max_stacks:
        lightest = sorted(out.items(), key=lambda kv: (kv[1], kv[0]))[: len(out) - max_stacks]
        for stack, weight in lightest:
            del out[stack]
            parent = stack.rsplit(";", 1)[0] if ";" in stack else "(other)"
            out[parent] = out.get(parent, 0) + weight
            folded += 1
    note = f"{folded} rare stacks folded into their callers" if folded else ""
    return out, note


def collapsed_text(profile: Profile) -> str:
    """The profile as collapsed stacks (``frame;frame;frame weight`` lines, heaviest
    first), the input format of flamegraph.pl, inferno and speedscope."""
    lines = sorted(profile.stacks.items(), key=lambda kv: (-kv[1], kv[0]))
    return "".join(f"{stack} {weight}\n" for stack, weight in lines)


def speedscope_document(profile: Profile, name: str) -> dict[str, Any]:
    """The profile as a speedscope file: one "sampled" profile whose samples are the
    distinct stacks (frame indices, root first) with their weights.

    Args:
        profile: the merged profile.
        name: the benchmark's label (speedscope shows it).

    Returns:
        The JSON document (a dict) following :data:`SPEEDSCOPE_SCHEMA`.
    """
    index: dict[str, int] = {}
    frames: list[dict[str, Any]] = []
    samples, weights = [], []
    for stack, weight in sorted(profile.stacks.items(), key=lambda kv: kv[0]):
        ids = []
        for frame in stack.split(";"):
            if frame not in index:
                index[frame] = len(frames)
                frames.append(_speedscope_frame(frame))
            ids.append(index[frame])
        samples.append(ids)
        weights.append(weight)
    unit = "none" if profile.kind == "instructions" else "seconds"
    scale = 1.0 if profile.rate_hz is None else 1.0 / profile.rate_hz
    weights_out = weights if unit == "none" else [w * scale for w in weights]
    return {
        "$schema": SPEEDSCOPE_SCHEMA,
        "name": name,
        "exporter": f"perflab ({profile.sampler})",
        "activeProfileIndex": 0,
        "shared": {"frames": frames},
        "profiles": [
            {
                "type": "sampled",
                "name": name,
                "unit": unit,
                "startValue": 0,
                "endValue": sum(weights_out),
                "samples": samples,
                "weights": weights_out,
            }
        ],
    }


def _speedscope_frame(frame: str) -> dict[str, Any]:
    """``func (file:line)`` → speedscope's ``{name, file, line}``."""
    name, _, where = frame.partition(" (")
    if not where.endswith(")"):
        return {"name": frame}
    file, _, line = where[:-1].rpartition(":")
    out: dict[str, Any] = {"name": name, "file": file or where[:-1]}
    if line.isdigit():
        out["line"] = int(line)
    return out


def speedscope_text(profile: Profile, name: str) -> str:
    """:func:`speedscope_document` as JSON text."""
    return json.dumps(speedscope_document(profile, name), separators=(",", ":"))


#: the file that marks a profile folder as perflab's (it replaces files only there)
FOLDER_MARK = ".perflab-profiles"


def profile_folder(results_path: Path) -> Path:
    """Where the profile files of ``results_path`` go: beside it, named after it
    (``results.json`` → ``results.profile/``)."""
    return results_path.with_name(results_path.stem + ".profile")


def write_files(results_path: Path, profiles: list[tuple[str, Profile]]) -> list[Path]:
    """Write each profile's collapsed stacks (``NAME.collapsed``) and speedscope JSON
    (``NAME.speedscope.json``) into :func:`profile_folder`, NAME being the benchmark's
    label made a safe file name (numbered when two labels make the same name).

    The folder must be absent (it is made, with :data:`FOLDER_MARK` inside) or hold
    that mark: perflab replaces only its own files.

    Args:
        results_path: the results file the profiles belong to.
        profiles: (label, profile) pairs.

    Returns:
        The files written.

    Raises:
        OSError: the folder is not perflab's (EEXIST), or a write failed.
    """
    from perflab.files import atomic_write

    folder = profile_folder(results_path)
    if folder.exists() and not (folder / FOLDER_MARK).is_file():
        raise FileExistsError(f"{folder} exists and was not made by perflab")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / FOLDER_MARK).write_text("perflab profile files: collapsed stacks, speedscope\n")
    written, used = [], set()
    for label, profile in profiles:
        name = _file_name(label, used)
        for suffix, text in (
            (".collapsed", collapsed_text(profile)),
            (".speedscope.json", speedscope_text(profile, label)),
        ):
            path = folder / (name + suffix)
            atomic_write(path, text.encode())
            written.append(path)
    return written


def _file_name(label: str, used: set[str]) -> str:
    """``label`` as a file name: letters, digits and ``._=-`` kept, the rest ``_``;
    at most 100 characters; numbered when taken."""
    base = "".join(c if c.isalnum() or c in "._=-" else "_" for c in label)[:100]
    base = base.strip(".") or "benchmark"
    name, n = base, 2
    while name in used:
        name, n = f"{base}-{n}", n + 1
    used.add(name)
    return name
