"""Edits: one module per target file kind, each a pure function from text to text."""

from __future__ import annotations


def insert_lines(lines: list[str], insertions: list[tuple[int, int, list[str]]]) -> list[str]:
    """Insert blocks after 0-based line indices (-1 = at the top); ``seq`` orders blocks that
    share an index. Indices refer to the original ``lines``."""
    out = list(lines)
    for after, _seq, block in sorted(insertions, key=lambda t: (t[0], t[1]), reverse=True):
        out[after + 1 : after + 1] = block
    return out


def realign_backslashes(block: list[str]) -> list[str]:
    """Re-align the continuation backslashes of a macro like clang-format's
    ``AlignEscapedNewlines: Left``: one column, one space past the longest line that carries
    a backslash (the macro's last line has none and does not count)."""
    contents = [ln.rstrip()[:-1].rstrip() if ln.rstrip().endswith("\\") else ln.rstrip() for ln in block]
    width = max(len(c) for c in contents[:-1]) if len(contents) > 1 else 0
    out = []
    for i, c in enumerate(contents):
        if i < len(block) - 1:
            out.append(c.ljust(width) + " \\")
        else:
            out.append(c)
    return out


def backslashes_aligned(block: list[str]) -> bool:
    cols = {len(ln.rstrip()) for ln in block[:-1] if ln.rstrip().endswith("\\")}
    return len(cols) <= 1
