"""Pieces of the PR descriptions the change commands print (elementwise, custom kernel and
reduction companions alike): what each changed file gained and lost, read from the change's
diff, and the names a pattern finds in those lines."""

from __future__ import annotations

import re

from mpsgen.patch.changeset import Changeset
from mpsgen.tree import NATIVE_FUNCTIONS

# what an MPSGraph implementation defines: TORCH_IMPL_FUNC(<kernel>), a one-line
# CREATE_MPS_*(<kernel>, ...) / REGISTER_MPS_UNARY_STUB(<kernel>, ...), or `Tensor& <kernel>_mps(`
LEGACY_DEFINITION = (
    r"TORCH_IMPL_FUNC\(\s*(\w+)\s*\)|\b(?:CREATE_MPS_\w+|REGISTER_MPS_UNARY_STUB)\(\s*(\w+)"
    r"|(?m:^[ \t]*(?:static\s+)?Tensor\s*&?\s*(\w+_mps)\s*\()"
)


def file_changes(changeset: Changeset) -> list[tuple[str, list[str], list[str]]]:
    """(path, added lines, removed lines) of each changed file, in the order the change made them."""
    found: dict[str, tuple[list[str], list[str]]] = {}
    current: tuple[list[str], list[str]] | None = None
    header = 0
    for line in changeset.diff().split("\n"):
        if line.startswith("diff --git a/"):
            current = found.setdefault(line.split(" b/", 1)[1], ([], []))
            header = 2  # the ---/+++ lines that follow
        elif header:
            header -= 1
        elif current is not None and line[:1] in ("+", "-"):
            current[0 if line[0] == "+" else 1].append(line[1:])
    order = [e.relpath for e in changeset.changed if e.relpath in found]
    order.sort(key=lambda rel: rel != NATIVE_FUNCTIONS)  # the dispatch table first, as it reads best
    return [(rel, *found[rel]) for rel in order]


def names(pattern: str, lines: list[str]) -> str:
    """The names ``pattern`` finds in ``lines`` (its first group that matched), as `a`, `b`."""
    found = (next((g for g in m.groups() if g), "") for m in re.finditer(pattern, "\n".join(lines)))
    return ", ".join(f"`{n}`" for n in dict.fromkeys(found) if n)
