"""Safe file output: atomic writes that never follow a symlink at the target
and never create missing folders, and private (0700) cache directories.

Every file SEER writes for a user (``seer trace -o``, ``--json``, ``--plot``,
``--md``, :meth:`seer.trace.Trace.to_chrome`, STPA model files) goes through
:func:`atomic_writer`, so a reader never sees half a file and an interrupted
write leaves the old file in place.

Symlink policy: an output path that is itself a symbolic link is refused
(:class:`OutputPathError`), because writing through it would modify a file
the user did not name (the classic planted-link attack on predictable output
names). Links in the *parent* folders are followed: the user typed them.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path
from typing import IO, Iterator

from seer.errors import OutputPathError, UntrustedPathError

__all__ = ["OutputPathError", "UntrustedPathError", "atomic_write_bytes", "atomic_write_text", "atomic_writer",
           "check_output_path", "check_trusted_dir", "check_trusted_file", "ensure_private_dir"]

#: Mode of the cache directories SEER creates: only their owner may plant files there.
PRIVATE_DIR_MODE = 0o700


def check_output_path(path: str | os.PathLike, *, what: str = "output file") -> Path:
    """Validate ``path`` as the target of a new file; return it as a Path.

    Args:
        path: Where the file is to be written.
        what: How error messages name the file (e.g. ``"--json file"``).

    Raises:
        OutputPathError: ``path`` is empty, a symbolic link, a directory or
            another non-regular file, or its folder is missing or not writable.
    """
    text = os.fspath(path)
    if not str(text).strip():
        raise OutputPathError(f"{what} path {text!r} is empty: expected a file name")
    if "\x00" in str(text):  # pathlib's checks answer False for it; open() would raise ValueError
        raise OutputPathError(f"{what} path {text!r} holds a NUL character: expected a file name")
    try:
        return _check_output_path(Path(text), what)
    except (OSError, ValueError) as exc:  # ENAMETOOLONG, ELOOP, EACCES on a parent, a NUL byte: unusable
        if isinstance(exc, OutputPathError):
            raise
        shown = str(text) if len(str(text)) <= 80 else f"{str(text)[:60]}... ({len(str(text))} characters)"
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise OutputPathError(f"{what} {shown!r} cannot be used: {reason}") from None


def _check_output_path(p: Path, what: str) -> Path:
    if p.is_symlink():
        raise OutputPathError(f"{what} {p} is a symbolic link: refusing to write through it "
                              f"(remove the link or choose another path)")
    if p.is_dir():
        raise OutputPathError(f"{what} {p} is a directory: expected a file path")
    if p.exists() and not p.is_file():
        raise OutputPathError(f"{what} {p} exists and is not a regular file")
    parent = p.parent
    if not parent.exists():
        raise OutputPathError(f"{what} {p}: directory {parent} does not exist (create it first)")
    if not parent.is_dir():
        raise OutputPathError(f"{what} {p}: {parent} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputPathError(f"{what} {p}: directory {parent} is not writable")
    return p


def _open_temp(folder: Path, name: str, file_mode: int) -> tuple[int, Path]:
    # O_EXCL fails on any existing entry, links included, so the temp file is
    # always a new file of ours; the mode passes through the umask as open() would.
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
    stem = name[:180]  # leave room for the suffix within NAME_MAX
    for _ in range(100):
        tmp = folder / f".{stem}.{secrets.token_hex(6)}.tmp"
        try:
            return os.open(tmp, flags, file_mode), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"could not create a temporary file next to {folder / name}")


def _existing_mode(p: Path) -> int | None:
    """Permission bits of the regular file at ``p`` (not followed if a link), or None."""
    import stat

    try:
        st = os.lstat(p)
    except OSError:
        return None
    return stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else None


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike, mode: str = "w", *, what: str = "output file",
                  file_mode: int = 0o666, encoding: str = "utf-8") -> Iterator[IO]:
    """Open a temporary file beside ``path``; on a clean exit, move it onto ``path``.

    The file is flushed and fsynced before :func:`os.replace`, which renames
    over a directory entry (a link planted after the check is replaced, never
    followed). On an exception the temporary file is removed and ``path`` is
    left as it was.

    Args:
        path: The target file (see :func:`check_output_path` for what is refused).
        mode: ``"w"`` (text) or ``"wb"`` (bytes).
        what: How error messages name the file.
        file_mode: Permission bits of a new file, before the umask; a file
            that exists at ``path`` keeps its own mode instead.
        encoding: Text encoding for ``mode="w"``.

    Raises:
        OutputPathError: ``path`` is refused (see :func:`check_output_path`).
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"mode={mode!r} is invalid: expected 'w' or 'wb'")
    p = check_output_path(path, what=what)
    existing = _existing_mode(p)
    fd, tmp = _open_temp(p.parent, p.name, file_mode if existing is None else 0o600)
    try:
        with os.fdopen(fd, mode, **({} if mode == "wb" else {"encoding": encoding})) as f:
            if existing is not None and hasattr(os, "fchmod"):
                # The replacement keeps the mode the user gave the file (a 0600 trace stays private);
                # the temp file is created 0600 so it is never more open than that in between.
                os.fchmod(f.fileno(), existing)
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):  # make the rename itself durable; not all filesystems allow it
        dfd = os.open(p.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def atomic_write_text(path: str | os.PathLike, text: str, **kwargs) -> Path:
    """Write ``text`` to ``path`` with :func:`atomic_writer`; return the path."""
    with atomic_writer(path, "w", **kwargs) as f:
        f.write(text)
    return Path(path)


def atomic_write_bytes(path: str | os.PathLike, data: bytes, **kwargs) -> Path:
    """Write ``data`` to ``path`` with :func:`atomic_writer`; return the path."""
    with atomic_writer(path, "wb", **kwargs) as f:
        f.write(data)
    return Path(path)


def ensure_private_dir(path: str | os.PathLike, *, what: str = "cache directory") -> Path:
    """Create ``path`` and any missing parents with mode 0700; return it.

    Folders that already exist are left as they are (their owner chose their
    mode); those created here get exactly 0700 whatever the umask, so no other
    user can plant a model file in them.

    Raises:
        NotADirectoryError: ``path`` or one of its parents exists and is not a directory.
    """
    p = Path(path)
    missing = []
    q = p
    while not q.is_dir():
        if os.path.lexists(q):
            raise NotADirectoryError(f"{what} {p}: {q} exists and is not a directory")
        missing.append(q)
        if q.parent == q:
            break
        q = q.parent
    for d in reversed(missing):
        try:
            os.mkdir(d, PRIVATE_DIR_MODE)
        except FileExistsError:
            if not d.is_dir():
                raise NotADirectoryError(f"{what} {p}: {d} exists and is not a directory") from None
            continue  # created meanwhile by another process
        os.chmod(d, PRIVATE_DIR_MODE)
    return p


def check_trusted_dir(path: str | os.PathLike, *, what: str = "cache directory") -> Path:
    """Refuse to load anything from ``path`` unless only its owner, the current
    user (or root), can write there; return it as a Path.

    A cache holds pickles (Numba's index files) and model files: whoever can
    write to the folder can plant code that runs as the user who loads it. The
    folder itself must be owned by the current user (or root) and carry no
    group or other write bit; its parents must not be writable by others
    unless sticky (``/tmp``), since a writable parent lets another user swap
    the folder.

    Raises:
        UntrustedPathError: the folder or a parent fails that check; the
            message names the path, its owner and mode, and the fix.
        NotADirectoryError: ``path`` exists and is not a directory.
    """
    import stat

    p = Path(path)
    st = os.stat(p)  # follows a link: the folder we will actually read counts
    if not stat.S_ISDIR(st.st_mode):
        raise NotADirectoryError(f"{what} {p} is not a directory")
    uid = os.getuid() if hasattr(os, "getuid") else None
    if uid is None:  # no POSIX ownership to check (Windows)
        return p
    mode = stat.S_IMODE(st.st_mode)
    if st.st_uid not in (uid, 0):
        raise UntrustedPathError(
            f"{what} {p} is owned by uid {st.st_uid}, not by you (uid {uid}): SEER does not load "
            f"files another user could have planted; point SEER_CACHE_DIR at a folder of your own")
    if mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise UntrustedPathError(
            f"{what} {p} has mode {mode:#o}, writable by group or others: SEER does not load files "
            f"another user could have planted; run `chmod go-w {p}` or point SEER_CACHE_DIR elsewhere")
    for parent in p.resolve().parents:
        pst = os.stat(parent)
        pmode = stat.S_IMODE(pst.st_mode)
        if pmode & stat.S_IWOTH and not pmode & stat.S_ISVTX:
            raise UntrustedPathError(
                f"{what} {p}: its parent {parent} has mode {pmode:#o}, writable by others without the "
                f"sticky bit, so another user could replace the folder; use a cache folder elsewhere")
    return p


def check_trusted_file(path: str | os.PathLike, *, what: str = "model file") -> Path:
    """Refuse to load the file ``path`` unless only the current user (or root)
    could have written it; return it as a Path.

    The file must be owned by the current user (or root) and carry no group
    or other write bit.  Its folder must pass :func:`check_trusted_dir`, or be
    sticky (``/tmp``: others may add files there but not replace this one),
    with no parent writable by others unless sticky.

    Raises:
        UntrustedPathError: the file or its folder fails that check.
        FileNotFoundError: there is no file at ``path``.
    """
    import stat

    p = Path(path)
    st = os.stat(p)
    uid = os.getuid() if hasattr(os, "getuid") else None
    if uid is None:
        return p
    mode = stat.S_IMODE(st.st_mode)
    if st.st_uid not in (uid, 0):
        raise UntrustedPathError(f"{what} {p} is owned by uid {st.st_uid}, not by you (uid {uid}): SEER does not "
                                 f"load files another user could have planted")
    if mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise UntrustedPathError(f"{what} {p} has mode {mode:#o}, writable by group or others: SEER does not load "
                                 f"files another user could have changed; run `chmod go-w {p}`")
    folder = p.resolve().parent
    if stat.S_IMODE(os.stat(folder).st_mode) & stat.S_ISVTX:
        for parent in folder.parents:
            pmode = stat.S_IMODE(os.stat(parent).st_mode)
            if pmode & stat.S_IWOTH and not pmode & stat.S_ISVTX:
                raise UntrustedPathError(
                    f"{what} {p}: its folder's parent {parent} has mode {pmode:#o}, writable by others without "
                    f"the sticky bit, so another user could replace the folder")
    else:
        check_trusted_dir(folder, what=f"folder of {what} {p}:")
    return p


def user_cache_dir() -> Path:
    """SEER's per-user cache: ``$SEER_CACHE_DIR``, else
    ``platformdirs.user_cache_dir("seer")`` (``$XDG_CACHE_HOME/seer`` on
    Linux).  Not created here: :func:`ensure_private_dir` does, mode 0700."""
    env = os.environ.get("SEER_CACHE_DIR")
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_cache_dir("seer"))
