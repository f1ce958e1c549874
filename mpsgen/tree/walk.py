"""One bounded walk of a folder of the tree: no recursion, no symlinked or dot folders.

Every listing of the tree (kernel and host sources, stub headers, the CPU ``.cpp`` files, the
files under a ``check`` path) goes through :func:`walk_files`, so a folder nested thousands
deep or a symlink loop costs a bounded amount of work instead of a ``RecursionError``.
"""

from __future__ import annotations

import os

# PyTorch's deepest source folder is a handful of levels below aten/src/ATen/native; anything
# nested deeper than this under a walked folder is not a source mpsgen reads.
MAX_DEPTH = 32


def walk_files(
    base: str,
    rel: str,
    suffixes: tuple[str, ...] | None = None,
    *,
    skip: frozenset[str] = frozenset(),
    max_depth: int = MAX_DEPTH,
) -> list[tuple[str, os.DirEntry]]:
    """``(relpath, entry)`` of the files under ``base`` (shown as ``rel``) whose names end in
    one of ``suffixes`` (all files when None), in a stable order: a folder's files by name,
    then its sub-folders by name, depth first. Folders named in ``skip``, dot-folders,
    symlinked folders and folders more than ``max_depth`` levels down are not entered;
    unreadable folders are passed over."""
    out: list[tuple[str, os.DirEntry]] = []
    stack: list[tuple[str, str, int]] = [(base, rel, 0)]
    while stack:
        folder, shown, depth = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError:
            continue
        files, dirs = [], []
        for e in entries:
            try:
                is_dir = e.is_dir()
            except OSError:
                is_dir = False
            (dirs if is_dir else files).append(e)
        for e in sorted(files, key=lambda e: e.name):
            if suffixes is None or e.name.endswith(suffixes):
                out.append((f"{shown}/{e.name}" if shown else e.name, e))
        if depth >= max_depth:
            continue
        subdirs = [
            e for e in dirs if not e.name.startswith(".") and e.name not in skip and not e.is_symlink()
        ]
        for e in sorted(subdirs, key=lambda e: e.name, reverse=True):
            stack.append((e.path, f"{shown}/{e.name}" if shown else e.name, depth + 1))
    return out
