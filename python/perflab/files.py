"""Every file perflab reads or writes goes through here: capped reads, checked writes.

Reads: a file is stat'ed before it is opened, anything but a regular file (a
folder, a FIFO, ``/dev/zero``) is refused, and at most ``limit`` bytes are read,
so no input can hang perflab or grow its memory without bound.

Writes: a destination is checked *before* anything is measured
(:meth:`Destination.check`); the data is written to a temporary file beside
it, flushed with fsync and renamed over the destination, so a crash or a full
disk never leaves a partial or empty file under the user's name. perflab only
replaces a file it wrote itself (a perflab JSON document or a PNG chart) or an
empty one. ``/dev/stdout``-style targets (``-``, ``/dev/stdout``,
``/dev/stderr``, ``/dev/null``, ``/dev/fd/N``, a FIFO) are written in place,
never renamed over. When a write still fails after measuring, the data goes
to a rescue file in the system temp folder and :class:`SaveError` (exit code
:data:`EXIT_SAVE_FAILED`) names it.
"""

from __future__ import annotations

import datetime as dt
import errno
import os
import re
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from perflab.errors import PerflabError, UsageError
from perflab.owned import MAX_RESULTS_BYTES as MAX_RESULTS_BYTES  # re-exported
from perflab.owned import ours as _ours

#: Exit code when the measurement finished but its file could not be written where asked
#: (the data is in the rescue file named by the error).
EXIT_SAVE_FAILED = 3
#: Largest other input (CSV, --requests, --body-file, bench file), bytes.
MAX_INPUT_BYTES = 64 * 2**20
#: Targets written in place (never renamed over): stdout-style paths and pipes.
_IN_PLACE_PREFIXES = ("/dev/fd/", "/proc/self/fd/")
#: Paths that are this process's stdout.
_STDOUT = ("/dev/stdout", "/dev/fd/1", "/proc/self/fd/1")
_IN_PLACE = ("/dev/stdout", "/dev/stderr", "/dev/null")


class SaveError(PerflabError):
    """The results were measured but could not be written where asked (exit code 3).

    Attributes:
        rescue: where the data was written instead, or None if that failed too.
    """

    exit_code = EXIT_SAVE_FAILED

    def __init__(self, message: str, rescue: Path | None) -> None:
        super().__init__(message)
        self.rescue = rescue


# --------------------------------------------------------------------------- reading


def read_bytes(path: str | os.PathLike[str], what: str, limit: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes.

    Args:
        path: the file.
        what: how to name it in messages, e.g. "--requests FILE" or the path.
        limit: the largest accepted size, bytes.

    Returns:
        The file's contents.

    Raises:
        UsageError: missing, a folder, not a regular file (FIFO, device), larger than
            ``limit``, or unreadable; the message says what to do.
    """
    path = Path(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise UsageError(f"{what}: no such file; check the path") from None
    except OSError as exc:
        raise UsageError(f"{what}: can't read it ({exc.strerror})") from None
    if stat.S_ISDIR(info.st_mode):
        raise UsageError(f"{what}: is a folder, not a file; give the path of a file")
    if not stat.S_ISREG(info.st_mode):
        raise UsageError(
            f"{what}: is not a regular file (a device, pipe or socket); "
            "save the data to a file and pass that"
        )
    if info.st_size > limit:
        raise UsageError(
            f"{what}: is {info.st_size / 2**20:,.0f} MiB, more than the "
            f"{limit / 2**20:,.0f} MiB perflab reads; pass a smaller file"
        )
    try:
        with open(path, "rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise UsageError(f"{what}: can't read it ({exc.strerror})") from None
    if len(data) > limit:  # grew between stat and read
        raise UsageError(f"{what}: is larger than the {limit / 2**20:,.0f} MiB perflab reads")
    return data


def read_text(path: str | os.PathLike[str], what: str, limit: int = MAX_INPUT_BYTES) -> str:
    """Like :func:`read_bytes`, decoded as UTF-8 (a BOM is dropped).

    Raises:
        UsageError: as :func:`read_bytes`, or not UTF-8 text (binary file).
    """
    data = read_bytes(path, what, limit)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"{what}: is not UTF-8 text (byte {exc.start} is 0x{data[exc.start]:02x}:"
            " a binary file?); pass a text file"
        ) from None


# --------------------------------------------------------------------------- writing


def default_results_path(kind: str) -> Path:
    """Where a results file goes without ``--json``: ``.perflab/{kind}-{stamp}-{random}.json``.

    Two runs started in the same second get different names (6 random hex digits), and
    the file is created exclusively at the moment of saving (:func:`atomic_write`), so
    even a collision never overwrites another run's results.
    """
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path(".perflab") / f"{kind}-{stamp}-{os.urandom(3).hex()}.json"


def results_destination(text: str | None, kind: str) -> Destination:
    """The checked ``--json`` destination of a measuring command; without one,
    :func:`default_results_path`. Raises UsageError (see :meth:`Destination.check`)."""
    return Destination.check(default_results_path(kind) if text is None else text, "--json")


@dataclass(frozen=True)
class Destination:
    """A checked place to write one output file.

    Attributes:
        path: the file, or None for stdout (``-``).
        option: the option that named it, for messages (e.g. "--json").
        in_place: True for stdout-style targets and pipes: written directly, not renamed.
        kind: what an existing file must look like to be replaced ("json", "png", …).
        existed: a file was there when the destination was checked; at the moment of
            the rename it must still be perflab's, and when none was there, none may
            have appeared meanwhile (:func:`atomic_write`).
    """

    path: Path | None
    option: str
    in_place: bool = False
    kind: str = "json"
    existed: bool = False

    @property
    def stdout(self) -> bool:
        """True when the output goes to stdout (``-``)."""
        return self.path is None

    def __str__(self) -> str:
        return "stdout" if self.path is None else str(self.path)

    @classmethod
    def check(cls, text: str | os.PathLike[str], option: str, kind: str = "json") -> Destination:
        """Check a destination before anything is measured.

        ``-`` means stdout. An existing path must be a regular file that perflab
        wrote (or an empty one), or a stdout-style target; a new path needs a
        folder that exists (or can be made) and is writable.

        Args:
            text: the user's path.
            option: the option, for messages.
            kind: "json" or "png": what an existing file must look like to be replaced.

        Raises:
            UsageError: an empty path, a folder, a device or other non-regular file, a
                file that isn't perflab's, or a folder that can't be written.
        """
        if str(text) == "-":
            return cls(None, option)
        if not str(text).strip():  # an unset variable: "--json $OUT"
            raise UsageError(f"{option} '': an empty path; give a file path, or - for stdout")
        path = Path(text)
        shown = f"{option} {path}"
        if str(path) in _IN_PLACE or str(path).startswith(_IN_PLACE_PREFIXES):
            return cls(path, option, in_place=True)
        try:
            info = os.stat(path)
        except FileNotFoundError:
            if path.is_symlink():
                raise UsageError(f"{shown}: is a link to nothing; give a plain file path") from None
            _check_folder(path.parent, shown)
            return cls(path, option, kind=kind)
        except OSError as exc:
            raise UsageError(
                f"{shown}: can't use it ({exc.strerror}); choose another path"
            ) from None
        if stat.S_ISDIR(info.st_mode):
            raise UsageError(
                f"{shown}: is a folder; give a file path inside it, e.g. "
                f"{path / ('results.' + kind)}"
            )
        if stat.S_ISFIFO(info.st_mode):
            return cls(path, option, in_place=True)
        if not stat.S_ISREG(info.st_mode):
            raise UsageError(
                f"{shown}: exists and is not a regular file (a device or "
                "socket); perflab won't write into it: choose a file path"
            )
        if not _ours(path, kind):
            raise UsageError(
                f"{shown}: exists and was not written by perflab; perflab only "
                "replaces its own files: remove it or choose another path"
            )
        if path.is_symlink():  # write the link's target, keep the link
            path = Path(os.path.realpath(path))
        _check_folder(path.parent, shown)
        return cls(path, option, kind=kind, existed=True)

    def write(self, data: bytes) -> None:
        """Write ``data`` whole: atomically (temp file, fsync, rename) or in place.

        Raises:
            OSError: the write failed; nothing partial is left under the name.
        """
        if self.path is None:
            _write_fd(1, data)
        elif self.in_place:
            _write_in_place(self.path, data)
        else:
            atomic_write(self.path, data, self)


def distinct(destinations: Iterable[Destination | None]) -> None:
    """Check that no two outputs of one command write to the same place: stdout (``-``,
    /dev/stdout, /dev/fd/1) or one file (after links). ``--json - --csv -`` wrote two
    documents one after the other on stdout, which no reader can parse; two options on
    one file kept only the last. /dev/null takes any number.

    Args:
        destinations: the command's checked destinations (None: an output not asked for).

    Raises:
        UsageError: two of them share a place, naming both options.
    """
    seen: dict[str, str] = {}
    for dest in destinations:
        if dest is None or str(dest.path) == "/dev/null":  # discarded: any number may
            continue
        name = "stdout" if dest.path is None or str(dest.path) in _STDOUT else str(dest.path)
        key = name if name == "stdout" else os.path.realpath(dest.path)
        if key in seen:
            raise UsageError(
                f"{seen[key]} and {dest.option} both write to {name}: each "
                "output needs its own place; give one of them another path"
            )
        seen[key] = dest.option


def _write_fd(fd: int, data: bytes) -> None:
    """Write all of ``data`` to an open descriptor, after Python's own buffered output."""
    sys.stdout.flush()
    sys.stderr.flush()
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _write_in_place(path: Path, data: bytes) -> None:
    """A stdout-style target: the process's own descriptor for /dev/stdout, /dev/fd/N…
    (so its output stays in order with the table's), else opened without truncating;
    a FIFO without a reader fails at once (ENXIO) instead of blocking.

    Raises:
        OSError: the target can't be opened or written.
    """
    text = str(path)
    match = re.fullmatch(r"/(?:dev/fd|proc/self/fd)/(\d+)", text)
    fd = {"/dev/stdout": 1, "/dev/stderr": 2}.get(text, int(match.group(1)) if match else None)
    if fd is not None:
        _write_fd(fd, data)
        return
    fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    try:
        os.set_blocking(fd, True)
        _write_fd(fd, data)
    finally:
        os.close(fd)


def _check_folder(folder: Path, shown: str) -> None:
    """The nearest existing ancestor of ``folder`` is a writable folder, and it is not the
    filesystem's root: perflab makes missing folders (``--json new/deeper/r.json``) but
    never new top-level ones (``--json /nonexistent/dir/x.json`` is a typo, and root may
    write there). Raises UsageError."""
    probe = folder if str(folder) else Path(".")
    while not probe.exists():
        if probe.is_symlink() or probe.parent == probe:
            raise UsageError(f"{shown}: its folder {folder} can't be made; choose another path")
        probe = probe.parent
    if not probe.is_dir():
        raise UsageError(
            f"{shown}: {probe} is a file, so the folder {folder} can't be made; choose another path"
        )
    if probe != folder and Path(os.path.realpath(probe)).parent == Path(os.path.realpath(probe)):
        raise UsageError(
            f"{shown}: the folder {folder} does not exist; create it first (perflab "
            "makes missing folders, but no new top-level ones)"
        )
    try:  # a real probe: access() says yes to root on a read-only filesystem or in /proc
        fd, name = tempfile.mkstemp(prefix=".perflab-probe-", dir=probe)
        os.close(fd)
        os.unlink(name)
    except OSError as exc:
        raise UsageError(
            f"{shown}: the folder {probe} is not writable ({exc.strerror}); choose another path"
        ) from None


def atomic_write(path: Path, data: bytes, destination: Destination | None = None) -> None:
    """Write ``data`` to ``path`` via a temp file in the same folder, fsync and rename.

    Parent folders are created. The destination is checked again at the moment of the
    rename (:func:`_install`): a file that appeared there during the run, or one that
    is no longer perflab's, is not replaced. On any error the temp file is removed and
    the error re-raised: ``path`` keeps its old content (or stays absent).

    Args:
        path: the file.
        data: its bytes.
        destination: the checked destination (what was there when it was checked);
            None for a plain replace.

    Raises:
        OSError: from mkdir, write (ENOSPC, EFBIG, EROFS…), fsync or rename; EEXIST
            when the destination changed hands during the run.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        _install(Path(tmp), path, destination)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError:
        pass  # some filesystems can't fsync a folder; the rename is done


#: The files this process created (so a later save of the same output replaces them).
_WRITTEN: set[str] = set()


def _install(tmp: Path, path: Path, destination: Destination | None) -> None:
    """Move the finished ``tmp`` to ``path``, checking the destination again now.

    Where nothing was there when it was checked, the file is created exclusively (a
    hard link, which fails if anything appeared meanwhile, then the temp name is
    removed); where perflab's own file was, it must still be perflab's.

    Raises:
        OSError: EEXIST when a file appeared or the old one is no longer perflab's.
    """
    if destination is None:
        os.replace(tmp, path)
        return
    if destination.existed or str(path) in _WRITTEN:  # http saves again after every step
        if os.path.lexists(path) and not _ours(path, destination.kind):
            raise OSError(
                errno.EEXIST, "it was replaced during the run by a file that isn't perflab's"
            )
        os.replace(tmp, path)
        return
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise OSError(
            errno.EEXIST, "a file appeared there during the run; perflab does not replace it"
        ) from None
    except OSError:  # no hard links here (some network and FAT filesystems)
        if os.path.lexists(path):
            raise OSError(
                errno.EEXIST, "a file appeared there during the run; perflab does not replace it"
            ) from None
        os.replace(tmp, path)
    else:
        os.unlink(tmp)
    _WRITTEN.add(str(path))


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def rescue(destination: Destination, kind: str, write: Callable[[Path], object]) -> Path | None:
    """Write an output with ``write(path)`` to a new file in the system temp folder.

    Returns:
        The rescue file's path, or None when that failed too (its remains are removed).
    """
    suffix = (destination.path.suffix if destination.path is not None else "") or ".json"
    try:
        fd, name = tempfile.mkstemp(prefix=f"perflab-rescue-{kind}-", suffix=suffix)
        os.close(fd)
    except OSError:
        return None
    try:
        write(Path(name))
    except OSError:
        Path(name).unlink(missing_ok=True)
        return None
    return Path(name)


def save(
    destination: Destination,
    data: bytes | Callable[[], bytes],
    kind: str,
    rescue_on_failure: bool = True,
) -> None:
    """Write an output file; on failure, rescue the data and raise :class:`SaveError`.

    Args:
        destination: a checked destination.
        data: the bytes, or a function making them (called once).
        kind: what is written ("run results", "chart", …), for messages and the
            rescue file's name.
        rescue_on_failure: False for a save that a later one supersedes (http saves
            after every step): a failure then raises without a rescue file.

    Raises:
        SaveError: the write failed (exit code 3); the message names the rescue file.
    """
    payload = data() if callable(data) else data
    try:
        destination.write(payload)
    except OSError as exc:
        if not rescue_on_failure:
            raise SaveError(
                f"{destination.option} {destination}: can't write the {kind} "
                f"({exc.strerror or type(exc).__name__})",
                None,
            ) from None
        _failed(destination, kind, exc, lambda path: path.write_bytes(payload), payload)


def save_file(destination: Destination, write: Callable[[Path], object], kind: str) -> None:
    """Like :func:`save` for writers that take a path (e.g. matplotlib's ``savefig``).

    ``write(path)`` is called with a temporary path; the file it makes is then
    moved (or, for stdout-style targets, copied) to the destination.

    Raises:
        SaveError: the write failed; the rescue file (drawn again) is named.
    """
    folder = (
        destination.path.parent
        if destination.path is not None and not destination.in_place
        else Path(tempfile.gettempdir())
    )
    try:
        folder.mkdir(parents=True, exist_ok=True)
        suffix = (destination.path.suffix if destination.path is not None else "") or ".png"
        fd, name = tempfile.mkstemp(prefix=".perflab-", suffix=suffix, dir=folder)
        os.close(fd)
    except OSError as exc:
        _failed(destination, kind, exc, write)
        return
    tmp = Path(name)
    try:
        write(tmp)
        if destination.in_place or destination.path is None:
            destination.write(tmp.read_bytes())
        else:
            with open(tmp, "rb+") as fh:
                os.fsync(fh.fileno())
            os.chmod(tmp, 0o666 & ~_umask())
            _install(tmp, destination.path, destination)
    except OSError as exc:
        _failed(destination, kind, exc, write)
    finally:
        tmp.unlink(missing_ok=True)


def _failed(
    destination: Destination,
    kind: str,
    exc: OSError,
    write: Callable[[Path], object],
    payload: bytes | None = None,
) -> None:
    """Rescue the output into the temp folder with ``write`` and raise SaveError.

    When no file can be written at all (the temp folder's disk is full too), a text
    payload is printed on stderr between two marker lines: the last place it can go.
    """
    reason = exc.strerror or type(exc).__name__
    saved = rescue(destination, kind.split()[0], write)
    if saved is not None:
        where = f"it was saved to {saved} instead"
    elif payload is not None:
        sys.stderr.write(
            f"perflab: no file could be written; the {kind} follow on stderr "
            "between this line and 'perflab: end'\n"
        )
        sys.stderr.write(payload.decode("utf-8", "replace").rstrip("\n") + "\n")
        sys.stderr.write("perflab: end\n")
        where = "the rescue copy in the temp folder failed too, so it was printed on stderr"
    else:
        where = "and the rescue copy in the temp folder failed too"
    raise SaveError(
        f"{destination.option} {destination}: can't write the {kind} ({reason}); {where}", saved
    ) from None


class Deferred:
    """Collects a :class:`SaveError` so the table is printed before the error is raised.

    Use: ``with Deferred() as later: later.run(save, …)``; print; ``later.raise_()``.
    """

    def __init__(self) -> None:
        self.error: SaveError | None = None

    def run(self, func: Callable[..., object], *args: object, **kwargs: object) -> object:
        """Call ``func``; keep the first SaveError instead of raising it."""
        try:
            return func(*args, **kwargs)
        except SaveError as exc:
            self.error = self.error or exc
            return None

    def raise_(self) -> None:
        """Raise the kept SaveError, if any."""
        if self.error is not None:
            raise self.error
