"""The index ``mpsgen check`` and ``explain`` cross-reference (through
:class:`~mpsgen.tree.facts.Facts`): every file of a tree that check's rules need, read once,
scanned by the tree's scanners (:mod:`mpsgen.tree.host` for ``.mm``/``.cpp``,
:mod:`mpsgen.tree.kernels` for ``.metal`` and the headers they include,
:mod:`mpsgen.tree.native_rows` for the yaml, :mod:`mpsgen.tree.stubs` for
``DECLARE_DISPATCH``), plus the lookups the rules make across files (where an identifier is
used, which host file pairs with a kernel file). It parses nothing itself.
"""

from __future__ import annotations

import os
import re
from typing import NamedTuple

from mpsgen.tree import (
    COMMON_MPS,
    INDEXING_HEADER,
    KERNELS_DIR,
    NATIVE_DIR,
    NATIVE_FUNCTIONS,
    OPERATIONS_DIR,
    PytorchTree,
)
from mpsgen.tree.clike import Lines
from mpsgen.tree.host import Definition, Dispatch, HostFile, KernelUse, host_file
from mpsgen.tree.kernels import (
    HeaderInfo,
    MetalContext,
    MetalFile,
    Registration,
    RegStatement,
    include_names,
    metal_context,
    scan_header,
    scan_kernel_file,
)
from mpsgen.tree.functors import FunctorStruct
from mpsgen.tree.native_rows import Row, scan_rows
from mpsgen.tree.resolver import native_cpp_files
from mpsgen.tree.source import SourceFile, read_bounded
from mpsgen.tree.stubs import collect_stubs
from mpsgen.tree.walk import walk_files
from mpsgen.tree.xfails import XfailEntry, read_xfail_entries

__all__ = ["Definition", "Dispatch", "HostFile", "Index", "KernelUse", "MetalFile", "Registration", "RegStatement"]

MPS_DIR = "aten/src/ATen/native/mps"
HOST_SUFFIXES = (".mm", ".cpp")


class _OverlayEntry(NamedTuple):
    """What :class:`Index` uses of an ``os.DirEntry``, for a file of the overlay."""

    path: str

    def is_symlink(self) -> bool:
        return False


class Index:
    """Everything ``check`` knows about a tree; every file is read at most once."""

    def __init__(self, tree: PytorchTree, overlay: dict[str, str | None] | None = None):
        """``overlay``: files read from elsewhere (path -> a file holding the text to read in
        its place; None: the file is taken as absent), the tree as it was at a base commit for
        ``check --changed``; every other file is read from the tree."""
        self.tree = tree
        self.overlay = overlay or {}
        self.root = tree.root_dir
        self._dirs_inside: dict[str, bool] = {}
        self._headers: dict[str, HeaderInfo | None] = {}
        self._texts: dict[str, str] = {}
        self._sites: dict[str, list[tuple[str, int]]] = {}
        self._includes: dict[tuple[str, str], str | None] = {}
        self._contexts: dict[tuple[str, tuple[str, ...]], MetalContext] = {}  # by folder and #include names
        self._by_headers: dict[tuple[int, ...], MetalContext] = {}
        self._needs: dict[tuple[str, int], bool] = {}
        self._safe: dict[str, str] = {}  # listed files known to be inside the tree -> path
        self.yaml_path = NATIVE_FUNCTIONS
        self.common_mps_path = COMMON_MPS if tree.exists(COMMON_MPS) else None
        self.cpp_files = native_cpp_files(self.root)
        if self.overlay:
            cpp = [(rel, self.overlay.get(rel, path)) for rel, path in self.cpp_files]
            cpp += self._only_in_overlay(NATIVE_DIR, (".cpp",), {rel for rel, _ in self.cpp_files})
            self.cpp_files = [(rel, path) for rel, path in cpp if path is not None]
        metal_rel = self._list(KERNELS_DIR, (".metal",))
        host_rel = self._list(MPS_DIR, HOST_SUFFIXES + (".h",))
        hosts = [p for p in host_rel if p.endswith(HOST_SUFFIXES)]
        self.mps_headers = [p for p in host_rel if p.endswith(".h")]
        self.rows: list[Row] = scan_rows(self.read(NATIVE_FUNCTIONS))
        self._memo: dict = {}  # macro expansions, by macro text (within this run only)
        self.host_files = [host_file(p, self.read(p)) for p in hosts]
        self.metal_files = [self._scan_metal(p) for p in metal_rel]
        self.stubs = self._declared_stubs()

    # -- listing --------------------------------------------------------------------------
    def _walk(self, reldir: str, suffixes: tuple[str, ...]) -> list[tuple[str, os.DirEntry | _OverlayEntry]]:
        """``PytorchTree.list_files(reldir, suffixes, recursive=True)`` (same files, same
        order: a folder's files by name, then its sub-folders by name, dot-folders and
        symlinked folders not entered), with the directory entries, from ``os.scandir``; with
        the overlay's files in place of the tree's, and those only it has after them."""
        base = os.path.join(self.root, reldir)
        found = walk_files(base, reldir, suffixes) if os.path.isdir(base) else []
        if not self.overlay:
            return found
        out: list[tuple[str, os.DirEntry | _OverlayEntry]] = []
        for rel, e in found:
            if rel not in self.overlay:
                out.append((rel, e))
            elif (path := self.overlay[rel]) is not None:
                out.append((rel, _OverlayEntry(path)))
        out += [(rel, _OverlayEntry(path)) for rel, path in self._only_in_overlay(reldir, suffixes, {rel for rel, _ in found})]
        return out

    def _only_in_overlay(self, reldir: str, suffixes: tuple[str, ...], listed: set[str]) -> list[tuple[str, str]]:
        return sorted(
            (rel, path)
            for rel, path in self.overlay.items()
            if path is not None and rel not in listed and rel.startswith(reldir + "/") and rel.endswith(suffixes)
        )

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
        return collect_stubs((rel, e.path) for rel, e in self._walk(NATIVE_DIR, (".h",)))

    # -- reading --------------------------------------------------------------------------
    def _folder_inside(self, folder: str) -> bool:
        inside = self._dirs_inside.get(folder)
        if inside is None:
            real = os.path.realpath(os.path.join(self.root, folder))
            inside = self._dirs_inside[folder] = real == self.root or real.startswith(self.root.rstrip(os.sep) + os.sep)
        return inside

    def _path(self, rel: str) -> str:
        """Absolute path of ``rel``, refusing (as :meth:`PytorchTree.resolve`) one that leaves
        the tree: each folder is resolved once, and only a symlinked file on its own."""
        safe = self.overlay.get(rel) or self._safe.get(rel)
        if safe is not None:
            return safe
        folder = rel.rpartition("/")[0]
        path = os.path.join(self.root, rel)
        if ".." in rel.split("/") or not self._folder_inside(folder) or os.path.islink(path):
            return str(self.tree.resolve(rel))
        return path

    def read(self, rel: str) -> str:
        """The text of ``rel``: through the tree's one read of each file (a plan of the same
        run reads the same bytes), or, for a file of the overlay, read here."""
        if rel not in self.overlay:
            return self.tree.read(rel, what=f"{rel} in {self.root}:", path=self._path(rel)).text
        text = self._texts.get(rel)
        if text is None:
            text = self._texts[rel] = SourceFile.from_bytes(rel, read_bounded(self._path(rel), f"{rel} in {self.root}:")).text
        return text

    def functor_structs(self) -> list[tuple[MetalFile, list[FunctorStruct]]]:
        """Each .metal file with the functor structs written out in it (for the functor lints)."""
        return [(m, m.functor_structs) for m in self.metal_files]

    def xfail_entries(self) -> list[XfailEntry]:
        """The xfail/skip entries of common_mps.py (:func:`~mpsgen.tree.xfails.read_xfail_entries`)."""
        if self.common_mps_path is None:
            return []
        return read_xfail_entries(self.read(self.common_mps_path))

    def text(self, rel: str) -> str | None:
        return self._texts.get(rel)

    def mps_texts(self) -> list[tuple[str, str]]:
        """Host sources and headers under mps/ (for "is this name used anywhere")."""
        out = [(h.path, h.text) for h in self.host_files]
        for p in self.mps_headers:
            out.append((p, self.read(p)))
        return out

    def code_sites(self, name: str) -> list[tuple[str, int]]:
        """``(path, line)`` of every use of the identifier ``name`` in the code of the MPS
        sources (host files, mps/ headers, .metal files): the whole identifier (``std_mps``
        is not in ``std::string``), not in a comment or a string literal."""
        sites = self._sites.get(name)
        if sites is None:
            sites = self._sites[name] = []
            pattern = None
            for rel, text in self._code_texts():
                if name not in text:
                    continue
                pattern = pattern or re.compile(rf"(?<!\w){re.escape(name)}(?!\w)")
                lines = None
                for m in pattern.finditer(text):
                    lines = lines or Lines(text)
                    start = m.start()
                    before = text[lines.line_start(start) : start]
                    if lines.commented(start) or before.count('"') % 2:
                        continue
                    sites.append((rel, lines.line(start)))
        return sites

    def _code_texts(self) -> list[tuple[str, str]]:
        return [(h.path, h.text) for h in self.host_files] + [(p, self.read(p)) for p in self.mps_headers] + [
            (m.path, m.text) for m in self.metal_files
        ]

    def paired(self, rel: str) -> str | None:
        """The host file of a kernel file and back, by the tree's convention of one stem:
        ``kernels/UnaryKernel.metal`` <-> ``operations/UnaryKernel.mm`` (None if absent)."""
        stem, _, ext = rel.rpartition("/")[2].rpartition(".")
        if ext == "metal":
            other = f"{OPERATIONS_DIR}/{stem}.mm"
            return other if any(h.path == other for h in self.host_files) else None
        if ext == "mm":
            other = f"{KERNELS_DIR}/{stem}.metal"
            return other if any(m.path == other for m in self.metal_files) else None
        return None

    def _resolve_include(self, name: str, from_path: str) -> str | None:
        key = (name, os.path.dirname(from_path))
        if key not in self._includes:
            found = None
            for cand in (name, f"aten/src/{name}", os.path.normpath(os.path.join(key[1], name)).replace(os.sep, "/")):
                if not cand.startswith("..") and os.path.isfile(os.path.join(self.root, cand)):
                    found = cand
                    break
            self._includes[key] = found
        return self._includes[key]

    def _header(self, rel: str) -> HeaderInfo | None:
        if rel in self._headers:
            return self._headers[rel]
        self._headers[rel] = None  # include cycles
        text = self.read(rel)
        includes = [r for r in (self._resolve_include(n, rel) for n in include_names(text)) if r]
        info = self._headers[rel] = scan_header(text, includes)
        return info

    def _included(self, path: str, names: tuple[str, ...]) -> list[HeaderInfo]:
        seen: set[str] = set()
        todo = [r for r in (self._resolve_include(n, path) for n in names) if r]
        infos = []
        while todo:
            rel = todo.pop(0)
            if rel in seen or rel.endswith(".metal"):
                continue
            seen.add(rel)
            info = self._header(rel)
            if info is not None:
                infos.append(info)
                todo += info.includes
        return infos

    def _metal_context(self, path: str, text: str) -> MetalContext:
        """What a kernel file's includes provide (c10/metal/indexing.h's when it includes
        nothing the tree holds): built once per folder and list of #include names."""
        key = (path.rpartition("/")[0], tuple(include_names(text)))
        ctx = self._contexts.get(key)
        if ctx is None:
            headers = self._included(path, key[1])
            if not headers and self.tree.exists(INDEXING_HEADER):
                info = self._header(INDEXING_HEADER)
                headers = [info] if info else []
            ctx = self._by_headers.get(ids := tuple(id(h) for h in headers))
            if ctx is None:
                ctx = self._by_headers[ids] = metal_context(headers, self._memo)
            self._contexts[key] = ctx
        return ctx

    def _scan_metal(self, path: str) -> MetalFile:
        text = self.read(path)
        return scan_kernel_file(path, text, self._metal_context(path, text), self._memo, self._needs)
