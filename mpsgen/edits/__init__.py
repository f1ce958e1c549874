"""Edits: one module per target file kind, each a pure function from text to text."""

from __future__ import annotations

from mpsgen.tree.source import split_args


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


def add_include(text: str, header: str) -> str:
    """``#include <header>`` added to a C-family source unless it is there: among the file's
    top-level includes of the same first folder (``ATen/``, ``c10/``), in sorted position;
    else after its last top-level include; else at the top. Includes inside an ``#if`` block
    (the per-operator headers) are left alone."""
    lines = text.split("\n")
    new = f"#include <{header}>"
    if any(ln.strip() in (new, f'#include "{header}"') for ln in lines):
        return text
    depth = 0
    top: list[int] = []
    for i, ln in enumerate(lines):
        s = ln.strip()
        if s.startswith(("#if", "#ifdef", "#ifndef")):
            depth += 1
        elif s.startswith("#endif"):
            depth = max(0, depth - 1)
        elif depth == 0 and s.startswith("#include"):
            top.append(i)
    group = header.split("/", 1)[0] + "/"
    same = [i for i in top if lines[i].strip()[len("#include ") + 1 :].startswith(group)]
    if same:
        at = next((i for i in same if lines[i].strip() > new), same[-1] + 1)
    elif top:  # sorted among the includes of the file's first block, as clang-format keeps them
        block = [top[0]]
        while block[-1] + 1 in top:
            block.append(block[-1] + 1)
        at = next((i for i in block if lines[i].strip() > new), block[-1] + 1)
    else:
        at = 0
    return "\n".join(lines[:at] + [new] + lines[at:])


METAL_COLUMN_LIMIT = 80  # PyTorch's clang-format for C++ and Metal (.mm files: 120)


def one_per_line(head: str, args: list[str], tail: str, indent: int = 0, limit: int = METAL_COLUMN_LIMIT) -> str:
    """``head(args)tail`` laid out as clang-format does a declaration with PyTorch's C++
    settings (AlignAfterOpenBracket: AlwaysBreak, no bin-packing): on one line when it fits,
    else broken after the bracket with one argument a line, 4 columns in."""
    pad = " " * indent
    line = f"{pad}{head}{', '.join(args)}{tail}"
    if len(line) <= limit:
        return line
    inner = " " * (indent + 4)
    return f"{pad}{head}\n" + ",\n".join(inner + a for a in args) + tail


def metal_statement(statement: str) -> str:
    """A top-level ``MACRO(a, b, c);`` statement in clang-format's layout (see :func:`one_per_line`)."""
    head, _paren, rest = statement.partition("(")
    if not rest.endswith(");") or "\n" in statement:
        return statement
    return one_per_line(head + "(", split_args(rest[:-2]), ");")
