"""``DECLARE_DISPATCH(<fn type>, <stub>)`` lines under ``aten/src/ATen/native/``."""

from __future__ import annotations

import re

from mpsgen.tree import NATIVE_DIR, PytorchTree

DECLARE_DISPATCH_RE = re.compile(rb"DECLARE_DISPATCH\s*\((.*?),\s*(\w+)\s*\)", re.S)


def declared_stubs(tree: PytorchTree) -> dict[str, tuple[str, int]]:
    """stub name -> (header path, 1-based line). Reads every header once, as bytes."""
    found: dict[str, tuple[str, int]] = {}
    for rel in tree.list_files(NATIVE_DIR, (".h",), recursive=True):
        raw = (tree.root / rel).read_bytes()
        if b"DECLARE_DISPATCH" not in raw:
            continue
        for m in DECLARE_DISPATCH_RE.finditer(raw):
            name = m.group(2).decode()
            if name not in found:
                found[name] = (rel, raw.count(b"\n", 0, m.start()) + 1)
    return found
