"""``DECLARE_DISPATCH(<fn type>, <stub>)`` lines under ``aten/src/ATen/native/``."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from mpsgen.tree import NATIVE_DIR, PytorchTree

DECLARE_DISPATCH_RE = re.compile(rb"DECLARE_DISPATCH\s*\((.*?),\s*(\w+)\s*\)", re.S)


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
