"""The one way pinnbo writes into a results folder, and reads JSON from one.

A results folder is not trusted: it may have been copied from elsewhere, or someone may have planted
a symbolic link in it (``case.json -> ~/.bashrc``) so that the next ``--resume`` or ``--overwrite``
writes through it. Every file pinnbo creates or replaces (logs, state, summaries, figures, tables)
therefore goes through :func:`write_bytes` or :func:`append_line`:

- a link (or anything but a regular file) where pinnbo writes is refused with one line
  (:class:`LinkRefused`, exit code 2) before anything is written;
- a replaced file is written to a fresh temporary name in the same folder, created with
  ``O_CREAT | O_EXCL | O_NOFOLLOW`` (so no planted name can redirect it), fsynced, then renamed
  over the target: a crash leaves the old file or the new one, never half of either;
- an appended line goes through ``O_NOFOLLOW``, and a failed write cuts the file back to where it
  was, so the log never holds half a record.

Figures are rendered to bytes first (``savefig`` would otherwise open the path itself and follow
a link there).

JSON read from a file the user did not write by hand (a log, a summary, an imported table) goes
through :func:`loads`: the standard library raises ValueError for an integer of more than 4300
digits and RecursionError for deeply nested input, neither a :class:`json.JSONDecodeError`.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

from pinnbo.errors import HistoryError, WriteFailure, shown, write_failure

#: What the temporary files of atomic writes end in; a folder holding only such leftovers holds
#: no run (a process killed while writing its first case.json).
TMP_SUFFIX = ".tmp"

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class LinkRefused(HistoryError):
    """A symbolic link, or something else than a regular file, stands where pinnbo would write."""


def refuse_link(path: Path) -> None:
    """Raise :class:`LinkRefused` if ``path`` exists and is not a regular file (a link, even one to
    a regular file, a folder, a FIFO)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise write_failure(Path(path), exc) from None
    if stat.S_ISLNK(mode):
        raise LinkRefused(f"output: {path} is a symbolic link; pinnbo follows no links in a results folder "
                          "(remove it, or choose another --output)")
    if not stat.S_ISREG(mode):
        raise LinkRefused(f"output: {path} is not a regular file; pinnbo writes only its own files in a results "
                          "folder (remove it, or choose another --output)")


def make_folder(folder: Path) -> None:
    """Create ``folder`` (and its parents) unless it exists; a link or a file in its place inside a
    results folder is refused rather than written through."""
    folder = Path(folder)
    if folder.is_symlink():
        raise LinkRefused(f"output: {folder} is a symbolic link; pinnbo follows no links in a results folder "
                          "(remove it, or choose another --output)")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise HistoryError(f"output: {folder} is a file, not a folder") from None
    except OSError as exc:
        raise WriteFailure(f"cannot create {folder} ({exc.strerror or exc})") from None


def refuse_links_below(root: Path, folder: Path) -> None:
    """Refuse a symbolic link at ``folder`` or at any folder between it and ``root`` (which the user
    named, and may itself be a link): a bench's ``runs/`` planted as a link would send every run's
    files elsewhere."""
    root, folder = Path(root), Path(folder)
    for path in [folder, *folder.parents]:
        if path == root or root not in path.parents:
            return
        if path.is_symlink():
            raise LinkRefused(f"output: {path} is a symbolic link; pinnbo follows no links in a results folder "
                              "(remove it, or choose another --output)")


def write_bytes(path: Path, data: bytes) -> None:
    """Replace ``path`` by ``data`` atomically (a fresh ``O_EXCL | O_NOFOLLOW`` temporary, fsync,
    rename); a link at ``path`` is a :class:`LinkRefused`, a failed write a one-line
    :class:`~pinnbo.errors.WriteFailure` that leaves the old file and no temporary."""
    path = Path(path)
    refuse_link(path)
    try:
        # mkstemp opens with O_CREAT | O_EXCL (| O_NOFOLLOW where the system has it) under a name
        # nobody could have planted in advance.
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TMP_SUFFIX)
    except OSError as exc:
        raise write_failure(path, exc) from None
    try:
        try:
            os.fchmod(fd, 0o644)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as exc:
        _remove(tmp)
        raise write_failure(path, exc) from None
    except BaseException:
        _remove(tmp)
        raise


def write_text(path: Path, text: str) -> None:
    """Replace ``path`` by ``text`` (:func:`write_bytes`)."""
    write_bytes(path, text.encode())


def write_json(path: Path, data: Any) -> None:
    """Replace ``path`` by ``data`` as indented JSON (:func:`write_bytes`)."""
    write_text(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


def append_line(path: Path, line: str, sync: bool = True) -> None:
    """Append one line to ``path`` (created if absent) without following a link; on a failed write
    the file is cut back to where it was (no partial record) and a ``WriteFailure`` raised."""
    path = Path(path)
    refuse_link(path)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW, 0o644)
    except OSError as exc:
        refuse_link(path)   # a link planted between the check and the open
        raise write_failure(path, exc) from None
    try:
        size = os.fstat(fd).st_size
        data = (line + "\n").encode()
        try:
            written = 0
            while written < len(data):
                written += os.write(fd, data[written:])
            if sync:
                os.fsync(fd)
        except OSError as exc:
            try:
                os.ftruncate(fd, size)
            except OSError:
                pass  # a line without its newline is dropped on resume (History.load)
            raise write_failure(path, exc) from None
    finally:
        os.close(fd)


def png_bytes(fig: Any, dpi: int = 110) -> bytes:
    """A matplotlib figure rendered to PNG bytes (in memory: nothing touches a path)."""
    import io

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


def write_figure(fig: Any, path: Path, dpi: int = 110) -> None:
    """Render a matplotlib figure to PNG bytes and write them with :func:`write_bytes`."""
    write_bytes(path, png_bytes(fig, dpi))


def holds_anything(folder: Path) -> bool:
    """Whether ``folder`` exists and holds anything but the temporary leftovers of atomic writes."""
    folder = Path(folder)
    return folder.is_dir() and any(not p.name.endswith(TMP_SUFFIX) for p in folder.iterdir())


def remove_leftovers(folder: Path) -> None:
    """Remove the temporary files that a process killed mid-write left in ``folder`` (unlinking a
    name never touches what a link there points to)."""
    for path in Path(folder).glob(f".*{TMP_SUFFIX}"):
        _remove(str(path))


class _KeyTwice(ValueError):
    pass


def unique_keys(pairs: list[tuple[str, Any]]) -> dict:
    """``json``'s object_pairs_hook that refuses a key given twice in one object."""
    data = dict(pairs)
    if len(data) != len(pairs):
        seen: set[str] = set()
        twice = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise _KeyTwice(f"the key {shown(twice)} is given twice in one object")
    return data


def loads(text: str, where: str) -> Any:
    """``json.loads(text)``, with every way a text is refused (bad syntax, a key given twice in one
    object, which ``json`` would settle silently by keeping the last, an integer of more than 4300
    digits, nesting deeper than the interpreter's stack) raised as one :class:`ValueError` whose
    message starts with ``where``."""
    try:
        return json.loads(text, object_pairs_hook=unique_keys)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{where}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from None
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"{where}: not JSON pinnbo reads ({refusal(exc)})") from None


def refusal(exc: BaseException) -> str:
    """Why ``json`` refused a text that is valid JSON syntax (see :func:`loads`)."""
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    if isinstance(exc, _KeyTwice):
        return str(exc)
    return str(exc).split(";")[0].split(": value has")[0]   # "Exceeds the limit (4300 digits) for integer ..."


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
