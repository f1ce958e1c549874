"""``DECLARE_DISPATCH(<fn type>, <stub>)`` lines under ``aten/src/ATen/native/``."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from mpsgen.tree import NATIVE_DIR, PytorchTree
from mpsgen.tree.source import split_args

# DECLARE_DISPATCH(<fn type>, <stub>): the type may be written inline with commas of its own
# (``void (*)(TensorIteratorBase&, int64_t)``, on several lines): its parentheses (two levels
# deep) are taken whole, so the stub is the word after the last comma outside them
DECLARE_DISPATCH_RE = re.compile(
    rb"DECLARE_DISPATCH\s*\(((?:[^()]|\((?:[^()]|\([^()]*\))*\))*?),\s*(\w+)\s*\)", re.S
)


def declared_stubs(tree: PytorchTree) -> dict[str, tuple[str, int]]:
    """stub name -> (header path, 1-based line). Reads every header once, as bytes."""
    headers = tree.list_files(NATIVE_DIR, (".h",), recursive=True)
    return collect_stubs((rel, tree.root / rel) for rel in headers)


def collect_stubs(headers: Iterable[tuple[str, str | os.PathLike]]) -> dict[str, tuple[str, int]]:
    """The ``DECLARE_DISPATCH`` stubs of (tree-relative path, file path) pairs; first wins."""
    found: dict[str, tuple[str, int]] = {}
    for rel, path in headers:
        with open(path, "rb") as fh:
            raw = fh.read()
        if b"DECLARE_DISPATCH" not in raw:
            continue
        for m in DECLARE_DISPATCH_RE.finditer(raw):
            name = m.group(2).decode()
            if name not in found:
                found[name] = (rel, raw.count(b"\n", 0, m.start()) + 1)
    return found


# the headers whose stubs are reductions (``prod_stub``, ``std_var_stub``: ReduceOps.h; the
# all-reduce stubs: ReduceAllOps.h), by file name
REDUCTION_STUB_HEADERS = ("ReduceOps.h", "ReduceAllOps.h")


_FN_POINTER = re.compile(r"void\s*\(\s*\*\s*\)\s*\((.*)\)\s*$", re.S)


def stub_parameters(tree: PytorchTree, stub: str, declared: dict[str, tuple[str, int]] | None = None) -> tuple[list[str], str] | None:
    """The parameters of ``stub``'s function type as its header writes them (``TensorIteratorBase&``,
    ``const c10::Scalar&``, ...), and ``header:line``; None when the tree does not say (no
    DECLARE_DISPATCH, or a function type declared in another header)."""
    declared = declared if declared is not None else declared_stubs(tree)
    if stub not in declared:
        return None
    rel, line = declared[stub]
    text = tree.read(rel, what="stub header").text
    for m in DECLARE_DISPATCH_RE.finditer(text.encode()):
        if m.group(2).decode() != stub:
            continue
        fn = re.sub(r"\s+", " ", m.group(1).decode()).strip()
        found = _FN_POINTER.match(fn)
        if found is None:
            alias = re.search(
                rf"\busing\s+{re.escape(fn)}\s*=\s*void\s*\(\s*\*\s*\)\s*\(([^;]*)\)\s*;"
                rf"|\btypedef\s+void\s*\(\s*\*\s*{re.escape(fn)}\s*\)\s*\(([^;]*)\)\s*;",
                text,
            )
            if alias is None:
                return None
            args = alias.group(1) if alias.group(1) is not None else alias.group(2)
        else:
            args = found.group(1)
        return split_args(re.sub(r"\s+", " ", args)), f"{rel}:{line}"
    return None
