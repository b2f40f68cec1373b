"""One place for output files: check the path before any computation, write atomically.

Every file the package writes (the CLI's ``--out`` / ``--plan`` / ``--plot`` files, witness
files, shards, report figures) goes through this module:

1. :func:`check_output_file` checks the path first, so a long run never ends on an unwritable
   path;
2. :func:`atomic_write` (or :func:`atomic_file` for writers that need a file *name*, such as
   ``safetensors.numpy.save_file``) writes to a temporary name in the same directory
   (:func:`atomic_path`) and renames it over the target with :func:`os.replace` only when the
   write is complete.  A path that is a symbolic link is written through: the file it points to
   is replaced (:func:`resolve_link`), and the link stays a link.

A failed or interrupted write therefore never leaves a half-written file, and never leaves the
temporary file behind: the old file, if any, is intact.  An :class:`OSError` (disk full,
permission) becomes a :class:`ValueError` naming the option and the file; every other error
propagates unchanged (after the temporary file is removed).

Examples
--------
>>> import tempfile
>>> d = Path(tempfile.mkdtemp())
>>> f = atomic_write(d / "a.txt", "--out", lambda fh: fh.write("hello\\n"), binary=False)
>>> f.read_text(), sorted(p.name for p in d.iterdir())
('hello\\n', ['a.txt'])
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = [
    "check_output_file",
    "probe_directory",
    "resolve_link",
    "atomic_path",
    "atomic_file",
    "atomic_write",
    "exact_text",
]


def exact_text(x: Any) -> str:
    """``str(x)`` for an exact number of any size: Python refuses to print integers of more than
    4,300 digits (a guard against hostile input), and an exact α* (a Fraction) of a law with
    n = 10,000 drafts has more; the guard is lifted for this one conversion.

    Examples
    --------
    >>> from fractions import Fraction
    >>> len(exact_text(Fraction(1, 3**10000))) > 4300
    True
    """
    import sys

    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        return str(x)
    finally:
        sys.set_int_max_str_digits(old)


def resolve_link(path: str | os.PathLike) -> Path:
    """The file that writing ``path`` replaces: ``path`` itself, or where it points when it is a
    symbolic link (followed to the end of the chain, even when the last target does not exist
    yet), so that a link such as ``latest.json -> runs/3.json`` stays a link and the file it
    names is rewritten, as a shell redirection would.

    Examples
    --------
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> (d / "latest.json").symlink_to(d / "run3.json")
    >>> resolve_link(d / "latest.json") == (d / "run3.json").resolve()
    True
    >>> resolve_link(d / "plain.json") == d / "plain.json"
    True
    """
    path = Path(path)
    if not path.is_symlink():
        return path
    try:
        os.stat(path)
    except OSError as exc:  # a dangling link is fine (its target is created); a loop is not
        if exc.errno == errno.ELOOP:
            raise OSError(errno.ELOOP, "a loop of symbolic links", str(path)) from None
    return Path(os.path.realpath(path))


def check_output_file(
    path: str | os.PathLike,
    option: str = "path",
    suffixes: Sequence[str] | None = None,
    *,
    example: str | None = None,
) -> Path:
    """Check that ``path`` can be written as a file, before any computation; return it.

    Parameters
    ----------
    path : str or os.PathLike
        The file to be written (created or overwritten).
    option : str
        The argument or option that gave ``path`` (``"--out"``): every message starts with it.
    suffixes : sequence of str, optional
        The accepted suffixes in lower case (``(".json", ".csv")``); ``None`` accepts any.
    example : str, optional
        A file name suggested inside ``path`` when ``path`` is a directory.

    Returns
    -------
    pathlib.Path
        ``path`` as a :class:`~pathlib.Path`.

    Raises
    ------
    ValueError
        Naming ``option``, the file and the fix: ``path`` is a directory, its suffix is not one
        of ``suffixes``, its parent directory is missing, is not a directory or is not writable
        (permissions, or no file can be created there: :func:`probe_directory`), or it exists
        and is not writable.  For a symbolic link these are checked on the file it points to
        (:func:`resolve_link`), which is what gets written.

    Examples
    --------
    >>> check_output_file("/", "--out", example="witness.json")
    Traceback (most recent call last):
    ...
    ValueError: --out: / is a directory; give a file name inside it (e.g. /witness.json)
    >>> check_output_file("/no/such/dir/a.json", "--out")
    Traceback (most recent call last):
    ...
    ValueError: --out: directory /no/such/dir does not exist; create it first
    >>> check_output_file("a.txt", "--plan", (".npy", ".json"))
    Traceback (most recent call last):
    ...
    ValueError: --plan: give a file name ending in .npy or .json, got 'a.txt'
    """
    path = Path(path)
    if path.is_dir():
        hint = f" (e.g. {path / example})" if example else ""
        raise ValueError(f"{option}: {path} is a directory; give a file name inside it{hint}")
    if suffixes is not None and path.suffix.lower() not in suffixes:
        raise ValueError(
            f"{option}: give a file name ending in {' or '.join(suffixes)}, got {str(path)!r}"
        )
    try:
        real = resolve_link(path)
    except OSError as exc:
        raise ValueError(f"{option}: {path} is {exc.strerror}; give a file name") from None
    parent = real.parent
    if not parent.exists():
        raise ValueError(f"{option}: directory {parent} does not exist; create it first")
    if not parent.is_dir():
        raise ValueError(f"{option}: {parent} is not a directory, so {path} cannot be created")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"{option}: cannot write to directory {parent} (permission denied)")
    if real.exists() and not os.access(real, os.W_OK):
        raise ValueError(f"{option}: cannot overwrite {path} (permission denied)")
    probe_directory(parent, option, path)
    return path


def probe_directory(directory: str | os.PathLike, option: str, target: Any = None) -> None:
    """Create and remove a temporary file in ``directory``: the write of :func:`atomic_write`
    (a temporary name there, then a rename) is tried before any computation.

    Permission bits do not tell everything: ``/proc``, a read-only mount or a full quota pass
    :func:`os.access` and still refuse a new file.

    Parameters
    ----------
    directory : str or os.PathLike
        An existing directory.
    option : str
        The option that gave the path: the message starts with it.
    target : str or os.PathLike, optional
        The path the user gave, named in the message (default ``directory``).

    Raises
    ------
    ValueError
        ``"{option}: cannot create {target} ({reason})"`` when no file can be created there.

    Examples
    --------
    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> probe_directory(d, "--out"); os.listdir(d)
    []
    """
    import tempfile

    try:
        fd, name = tempfile.mkstemp(prefix=".mdsd-ot.", suffix=".probe", dir=directory)
    except OSError as exc:
        what = target if target is not None else directory
        raise ValueError(
            f"{option}: cannot create {what} ({exc.strerror or exc}); give a path in a writable "
            "directory"
        ) from None
    os.close(fd)
    os.unlink(name)


def atomic_path(path: str | os.PathLike) -> Path:
    """A temporary name next to ``path`` (same directory, so the final rename is atomic).

    The name is hidden (leading dot) and carries the process id, so two processes writing the
    same file do not share a temporary file.

    Examples
    --------
    >>> atomic_path("out/report.json").name.startswith(".report.json.")
    True
    >>> atomic_path("out/report.json").parent == Path("out")
    True
    """
    path = Path(path)
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def _umask() -> int:
    """The process umask, read without changing it where /proc tells it (Linux)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextmanager
def atomic_file(path: str | os.PathLike, option: str = "path") -> Iterator[Path]:
    """Yield a temporary name for ``path``; rename it to ``path`` when the block completes
    (to the file ``path`` points to when it is a symbolic link: :func:`resolve_link`).

    For writers that take a file name rather than a file object; :func:`atomic_write` is this
    with the file opened.  The temporary file is removed whatever happens; an :class:`OSError`
    (in the block or in the rename) becomes a ValueError naming ``option`` and the file, other
    exceptions propagate.

    Parameters
    ----------
    path : str or os.PathLike
        The file to write (created or replaced).
    option : str
        The argument or option that gave ``path``: the error message starts with it.

    Yields
    ------
    pathlib.Path
        The temporary name (:func:`atomic_path`) to write to.

    Raises
    ------
    ValueError
        ``"{option}: cannot write {path} ({reason})"`` when writing or renaming fails with an
        :class:`OSError`; ``path`` is then unchanged.

    Examples
    --------
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> with atomic_file(d / "a.bin", "--out") as tmp:
    ...     _ = tmp.write_bytes(b"\\x00\\x01")
    >>> (d / "a.bin").read_bytes(), sorted(p.name for p in d.iterdir())
    (b'\\x00\\x01', ['a.bin'])
    >>> with atomic_file(d / "missing" / "b.bin", "--out") as tmp:
    ...     _ = tmp.write_bytes(b"x")
    Traceback (most recent call last):
    ...
    ValueError: --out: cannot write .../missing/b.bin (No such file or directory)
    """
    path = Path(path)
    try:
        real = resolve_link(path)  # a link stays a link: the file it names is replaced
    except OSError as exc:
        raise ValueError(f"{option}: cannot write {path} ({exc.strerror})") from None
    tmp = atomic_path(real)
    try:
        yield tmp
        if tmp.exists():  # the mode a plain open() gives (safetensors writes 0600)
            os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, real)
    except OSError as exc:
        raise ValueError(f"{option}: cannot write {path} ({exc.strerror or exc})") from None
    finally:
        if tmp.exists():
            tmp.unlink()


def atomic_write(
    path: str | os.PathLike, option: str, write: Callable[[Any], Any], *, binary: bool
) -> Path:
    """Write ``path`` through ``write(file object)`` under a temporary name, then rename.

    An :class:`OSError` (disk full, permission) becomes a ValueError naming ``option`` and the
    file; nothing is left behind (see :func:`atomic_file`).

    Parameters
    ----------
    path : str or os.PathLike
        The file to create or replace, as for :func:`atomic_file`.
    option : str
        The option named by the error message, as for :func:`atomic_file`.
    write : callable
        Called once with the open temporary file; its return value is ignored.
    binary : bool
        Open the file in binary mode (``"wb"``); otherwise text mode in UTF-8.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    ValueError
        ``"{option}: cannot write {path} ({reason})"`` on an :class:`OSError`.

    Examples
    --------
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> atomic_write(d / "a.json", "--out", lambda fh: fh.write("[1]"), binary=False).read_text()
    '[1]'
    >>> def fail(fh):
    ...     fh.write("[2")
    ...     raise OSError(28, "No space left on device")
    >>> atomic_write(d / "a.json", "--out", fail, binary=False)
    Traceback (most recent call last):
    ...
    ValueError: --out: cannot write .../a.json (No space left on device)
    >>> (d / "a.json").read_text(), sorted(p.name for p in d.iterdir())
    ('[1]', ['a.json'])
    """
    path = Path(path)
    with atomic_file(path, option) as tmp:
        with open(tmp, "wb" if binary else "w", **({} if binary else {"encoding": "utf-8"})) as fh:
            write(fh)
    return path
