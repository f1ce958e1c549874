"""A read-only view of a PyTorch checkout: where things live, and their contents as read once.

pathlib is imported only where a :class:`~pathlib.Path` is handed out (``PytorchTree.root``,
``resolve``): ``mpsgen check`` works on the string :attr:`PytorchTree.root_dir` and saves
pathlib's import (~4 ms of a ~100 ms process, with urllib.parse and ipaddress it pulls in).
"""

from __future__ import annotations

import errno
import os
import stat
from typing import TYPE_CHECKING

from mpsgen.core.errors import BadInput
from mpsgen.tree.source import SourceFile, read_bounded
from mpsgen.tree.walk import walk_files

NATIVE_FUNCTIONS = "aten/src/ATen/native/native_functions.yaml"
NATIVE_DIR = "aten/src/ATen/native"
KERNELS_DIR = "aten/src/ATen/native/mps/kernels"
OPERATIONS_DIR = "aten/src/ATen/native/mps/operations"
INDEXING_HEADER = "c10/metal/indexing.h"
COMMON_MPS = "torch/testing/_internal/common_mps.py"
COMMON_METHODS = "torch/testing/_internal/common_methods_invocations.py"
OPINFO_DEFINITIONS = "torch/testing/_internal/opinfo/definitions"

DEFAULT_METAL = {
    "unary": f"{KERNELS_DIR}/UnaryKernel.metal",
    "binary": f"{KERNELS_DIR}/BinaryKernel.metal",
    "ternary": f"{KERNELS_DIR}/BinaryKernel.metal",
}
DEFAULT_MM = {
    "unary": f"{OPERATIONS_DIR}/UnaryKernel.mm",
    "binary": f"{OPERATIONS_DIR}/BinaryKernel.mm",
    "ternary": f"{OPERATIONS_DIR}/BinaryKernel.mm",
}


if TYPE_CHECKING:
    from pathlib import Path

JOURNAL_NAME = "mpsgen-journal.json"  # mpsgen.patch.journal: a change being applied


def journal_path(root: str | os.PathLike) -> str:
    """Where a change to the checkout at ``root`` is journaled: in its git folder (a linked
    worktree's ``.git`` file names it), else at its top. (Strings only: ``check`` asks this
    of every tree and does without pathlib.)"""
    root = os.fspath(root)
    dot_git = os.path.join(root, ".git")
    if os.path.isdir(dot_git):
        return os.path.join(dot_git, JOURNAL_NAME)
    if os.path.isfile(dot_git):
        try:
            with open(dot_git, encoding="utf-8", errors="replace") as fh:
                first = fh.readline().strip()
        except OSError:
            first = ""
        if first.startswith("gitdir:"):
            gitdir = os.path.join(root, first[len("gitdir:") :].strip())  # (an absolute one stays itself)
            if os.path.isdir(gitdir):
                return os.path.join(gitdir, JOURNAL_NAME)
    return os.path.join(root, f".{JOURNAL_NAME}")

# what Path.is_dir()/is_file() take for "no": any other error (a name too long, no permission
# to search a folder) is raised, to be reported
_ABSENT = (errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP)


def _is(path: str, kind) -> bool:
    """``Path(path).is_dir()`` (``kind`` stat.S_ISDIR) or ``.is_file()`` (stat.S_ISREG)."""
    try:
        return kind(os.stat(path).st_mode)
    except OSError as exc:
        if exc.errno in _ABSENT:
            return False
        raise
    except ValueError:  # a NUL byte in the name
        return False


class PytorchTree:
    """A PyTorch source checkout rooted at ``root``. Reads are cached: a plan and the
    conflict check that precedes writing compare against the same bytes."""

    def __init__(self, root: str | os.PathLike):
        self.root_dir = os.path.realpath(root)  # what Path(root).resolve() gives, as a string
        self._root: Path | None = None
        self._cache: dict[str, SourceFile] = {}
        # what was derived from the tree as read: (SourceFile, result) per file, (None, resolver) for the stub resolver
        self.memo: dict[str, tuple] = {}

    @property
    def root(self) -> Path:
        if self._root is None:
            from pathlib import Path  # (local: check loads no pathlib)

            self._root = Path(self.root_dir)
        return self._root

    # -- locating -------------------------------------------------------------------------
    @classmethod
    def locate(cls, root: str | os.PathLike | None = None, cwd: str | os.PathLike | None = None) -> PytorchTree:
        try:
            return cls._locate(root, cwd)
        except OSError as exc:  # a name too long, a loop of symlinks, a folder we may not enter
            where = f"--root {root}" if root is not None else str(cwd or "the current folder")
            raise BadInput(
                f"{where}: cannot be used as a PyTorch tree ({exc.strerror or exc}).",
                hint="Pass the top of a PyTorch checkout with --root, or run mpsgen from inside one.",
            ) from None

    @classmethod
    def _locate(cls, root: str | os.PathLike | None, cwd: str | os.PathLike | None) -> PytorchTree:
        if root is not None:
            path = os.path.expanduser(os.fspath(root))
            if not _is(path, stat.S_ISDIR):
                raise BadInput(f"--root {root}: no such directory.", hint="Pass the top of a PyTorch checkout.")
            if not _is(os.path.join(path, NATIVE_FUNCTIONS), stat.S_ISREG):
                raise BadInput(
                    f"--root {root} is not a PyTorch source tree: it has no {NATIVE_FUNCTIONS}.",
                    hint="Pass the top of a PyTorch checkout (the folder holding aten/ and torch/).",
                )
            return cls(path)
        start = folder = os.path.realpath(os.fspath(cwd) if cwd is not None else os.getcwd())
        while True:
            if _is(os.path.join(folder, NATIVE_FUNCTIONS), stat.S_ISREG):
                return cls(folder)
            parent = os.path.dirname(folder)
            if parent == folder:
                break
            folder = parent
        raise BadInput(
            f"{start} is not inside a PyTorch source tree: no ancestor holds {NATIVE_FUNCTIONS}.",
            hint="Run mpsgen from within a PyTorch checkout or pass --root DIR (`mpsgen demo --keep DIR` makes a practice tree to try it on).",
        )

    def resolve(self, relpath: str, what: str = "path") -> Path:
        """Absolute path of ``relpath``, refusing anything that leaves the tree."""
        path = (self.root / relpath).resolve()
        if path != self.root and self.root not in path.parents:
            raise BadInput(f"{what} {relpath!r} points outside the PyTorch tree {self.root}.")
        return path

    def exists(self, relpath: str) -> bool:
        return _is(os.path.join(self.root_dir, relpath), stat.S_ISREG)

    # -- reading --------------------------------------------------------------------------
    def read(self, relpath: str, *, what: str = "target file", path: str | None = None) -> SourceFile:
        """The file ``relpath``, read once per run whoever asks. ``path``: its absolute path,
        when the caller knows it lies inside the tree (check's index resolves each folder once)."""
        cached = self._cache.get(relpath)
        if cached is not None:
            return cached
        if path is None:
            resolved = self.resolve(relpath, what)
            if not resolved.exists():
                raise BadInput(
                    f"{what} {relpath} does not exist in {self.root}.",
                    hint="Check the checkout (git status) or name another file in the spec's 'files'.",
                )
            path = str(resolved)
        # regular files only, of bounded size: a folder, FIFO or device is refused, not read
        source = SourceFile.from_bytes(relpath, read_bounded(path, what))
        self._cache[relpath] = source
        return source

    def read_optional(self, relpath: str) -> SourceFile | None:
        return self.read(relpath) if self.exists(relpath) else None

    def forget(self, relpath: str) -> None:
        self._cache.pop(relpath, None)

    def read_fresh_bytes(self, relpath: str) -> bytes | None:
        try:
            return self.resolve(relpath).read_bytes()
        except FileNotFoundError:
            return None

    # -- listing --------------------------------------------------------------------------
    def list_files(self, reldir: str, suffixes: tuple[str, ...], recursive: bool = False) -> list[str]:
        base = self.root / reldir
        found: list[str] = []
        if not base.is_dir():
            return found
        if recursive:
            found = [rel for rel, _ in walk_files(str(base), reldir, suffixes)]
        else:
            for entry in sorted(os.scandir(base), key=lambda e: e.name):
                if entry.is_file() and entry.name.endswith(suffixes):
                    found.append(f"{reldir}/{entry.name}")
        return found

    def opinfo_files(self) -> list[str]:
        files = [COMMON_METHODS] if self.exists(COMMON_METHODS) else []
        return files + self.list_files(OPINFO_DEFINITIONS, (".py",))
