"""Writing a whole file or none: a temporary file beside the target, flushed to disk, then
renamed over it (or linked to a new name, refusing one that exists), so that a full disk, a
size limit or a kill leaves the old file (or no file), never a truncated one."""

from __future__ import annotations

import os
import tempfile


def write_whole(path: str | os.PathLike, data: bytes, *, replace: bool) -> None:
    """Write ``data`` to ``path`` whole: replacing a file there when ``replace``, otherwise
    creating it (``FileExistsError`` if one exists, even one that appears meanwhile). Raises
    the ``OSError`` of a failed step; no temporary file is left behind."""
    path = os.fspath(path)
    folder, name = os.path.split(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".mpsgen", dir=folder)
    except OSError as exc:  # (a missing or read-only folder: named by the file asked for)
        raise OSError(exc.errno, exc.strerror, path) from None
    try:
        os.chmod(tmp, _mode_for(path))  # (mkstemp makes it private: 0600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if replace:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)  # fails on an existing name: never overwrites
            os.unlink(tmp)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError) and not isinstance(exc, FileExistsError) and exc.filename in (None, tmp):
            # (the temporary file is mpsgen's business: the error names the file asked for)
            raise OSError(exc.errno, exc.strerror, path) from None
        raise
    sync_folder(folder)


def _mode_for(path: str) -> int:
    """The mode the file keeps (an existing one's), or a new file's under the umask."""
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def sync_folder(folder: str) -> None:
    """Make a rename in ``folder`` durable (best effort: not every system can)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
