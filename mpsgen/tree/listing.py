"""The files of a tree that ``mpsgen check`` reads, listed once and located without leaving
the tree: the check index (:class:`mpsgen.check.index.Index`) and its child process
(:mod:`mpsgen.tree.prefetch`) list them the same way."""

from __future__ import annotations

import os

from mpsgen.tree import COMMON_MPS, KERNELS_DIR, NATIVE_DIR, PytorchTree
from mpsgen.tree.walk import walk_files

MPS_DIR = "aten/src/ATen/native/mps"
HOST_SUFFIXES = (".mm", ".cpp")


class TreeFiles:
    """What :meth:`list_tree` finds: the native ``.cpp`` sources (for the row -> stub
    resolver), the ``.metal`` kernel files, the MPS host sources and headers, and
    common_mps.py if the tree has it."""

    def __init__(self, tree: PytorchTree):
        self.tree = tree
        self._root_str = tree.root_dir
        self._dirs_inside: dict[str, bool] = {}
        self._safe: dict[str, str] = {}  # listed files known to be inside the tree -> path

    def list_tree(self) -> None:
        from mpsgen.tree.resolver import native_cpp_files

        self.common_mps_path = COMMON_MPS if self.tree.exists(COMMON_MPS) else None
        self.cpp_files = native_cpp_files(self._root_str)
        self.metal_rel = self._list(KERNELS_DIR, (".metal",))
        host_rel = self._list(MPS_DIR, HOST_SUFFIXES + (".h",))
        self.hosts = [p for p in host_rel if p.endswith(HOST_SUFFIXES)]
        self.mps_headers = [p for p in host_rel if p.endswith(".h")]

    def _walk(self, reldir: str, suffixes: tuple[str, ...]) -> list[tuple[str, os.DirEntry]]:
        """``PytorchTree.list_files(reldir, suffixes, recursive=True)`` (same files, same
        order: a folder's files by name, then its sub-folders by name, dot-folders and
        symlinked folders not entered), with the directory entries, from ``os.scandir``."""
        base = os.path.join(self._root_str, reldir)
        return walk_files(base, reldir, suffixes) if os.path.isdir(base) else []

    def _list(self, reldir: str, suffixes: tuple[str, ...]) -> list[str]:
        """The files to scan under ``reldir``; those plainly inside the tree are remembered
        with their paths, so that reading them needs no resolving (see :meth:`_path`)."""
        found = self._walk(reldir, suffixes)
        if found and self._folder_inside(reldir):
            for rel, e in found:
                if not e.is_symlink():
                    self._safe[rel] = e.path
        return [rel for rel, _ in found]

    def _declared_stubs(self) -> dict[str, tuple[str, int]]:
        """:func:`mpsgen.tree.stubs.declared_stubs` (same result), over one ``os.scandir`` walk."""
        from mpsgen.tree.stubs import collect_stubs

        return collect_stubs((rel, e.path) for rel, e in self._walk(NATIVE_DIR, (".h",)))

    def _folder_inside(self, folder: str) -> bool:
        inside = self._dirs_inside.get(folder)
        if inside is None:
            real = os.path.realpath(os.path.join(self._root_str, folder))
            inside = self._dirs_inside[folder] = real == self._root_str or real.startswith(self._root_str.rstrip(os.sep) + os.sep)
        return inside

    def _path(self, rel: str) -> str:
        """Absolute path of ``rel``, refusing (as :meth:`PytorchTree.resolve`) one that leaves
        the tree: each folder is resolved once, and only a symlinked file on its own."""
        safe = self._safe.get(rel)
        if safe is not None:
            return safe
        folder = rel.rpartition("/")[0]
        path = os.path.join(self._root_str, rel)
        if ".." in rel.split("/") or not self._folder_inside(folder) or os.path.islink(path):
            return str(self.tree.resolve(rel))
        return path
