"""The dispatch rows of native_functions.yaml alone, found with C-speed searches (what
``mpsgen check`` reads on every commit).

:func:`mpsgen.tree.native_yaml.scan_native_functions` walks the ~14k lines of the file in
Python and builds a full :class:`~mpsgen.tree.native_yaml.NativeFunction` per entry (its
end line, tags, structured flags...). ``check`` only needs each row's name and its dispatch
lines, so :func:`scan_rows` finds the ``- func:`` headers and ``  dispatch:`` lines with one
``re.finditer`` over the whole text, counts newlines between matches for line numbers, and
walks in Python only the few lines of each dispatch block. The semantics are those of
``scan_native_functions`` (same rows, keys, kernels, lines; tests/tree compares the two on
the real file): an entry runs from its ``- func:`` line to the next one, a dispatch block is
the run of 4-space-indented or blank lines under ``  dispatch:``, and only lines matching
``    KEYS: kernel`` count.
"""

from __future__ import annotations

import re
from typing import NamedTuple


# One search over the file (a newline prepended, so that every match starts with the newline
# before its line) finds: a "- func:" header; a "  dispatch:" header with the dispatch lines
# right under it (group 3: most blocks are only that, read at once with _LINES); or a dispatch
# line further down. A dispatch line is native_yaml's _DISPATCH_LINE, whose "\s" and "."
# never cross a line (nor do they here).
_LINE = r"\n(    ([A-Za-z0-9_, ]+):[^\S\n]*([A-Za-z0-9_:]+)[^\S\n]*(?:#[^\n]*)?)(?=\n|\Z)"
_LINE_NOGROUP = r"\n    [A-Za-z0-9_, ]+:[^\S\n]*[A-Za-z0-9_:]+[^\S\n]*(?:#[^\n]*)?(?=\n|\Z)"
# A header's name and overload are read by the same search (groups 2 and 3: native_yaml's
# FUNC_HEADER; a header it cannot read leaves them None).
_TOKEN = re.compile(
    r"\n(?:(- func:(?: ([A-Za-z0-9_]+)(?:\.([A-Za-z0-9_]+))?\()?)|(  dispatch:)[^\n]*((?:" + _LINE_NOGROUP + r")*)|" + _LINE[2:] + ")"
)
_LINES = re.compile(_LINE)
# a line that ends a dispatch block: neither 4-space indented nor blank
_BLOCK_BREAK = re.compile(r"\n(?!    |[^\S\n]*(?:\n|\Z))")



def op_name(base: str) -> str:
    """The op a row's base name belongs to: ``add_`` (in place) is ``add``'s; ``_foo`` stays."""
    return base[:-1] if base.endswith("_") and not base.startswith("_") else base

class Dispatch(NamedTuple):
    """One ``    CPU, CUDA: heaviside_out`` line (the fields of
    :class:`~mpsgen.tree.native_yaml.DispatchEntry` that ``check`` reads)."""

    keys: tuple[str, ...]
    kernel: str
    line: int
    text: str

    @property
    def has_mps(self) -> bool:
        return "MPS" in self.keys


class Row(NamedTuple):
    """One entry of native_functions.yaml: its name and dispatch lines."""

    base: str
    overload: str
    start_line: int
    dispatch: tuple[Dispatch, ...]

    @property
    def name(self) -> str:
        return f"{self.base}.{self.overload}" if self.overload else self.base


def scan_rows(text: str, *, plain: bool = False) -> list[Row]:
    """The rows of ``text``; ``plain``: as plain tuples (what a child process sends back)."""
    rows: list[Row] = []
    append = rows.append
    padded = "\n" + text  # offset i of padded is offset i - 1 of text
    count, strip = padded.count, str.strip
    block_break, lines_of = _BLOCK_BREAK.search, _LINES.findall
    # the rows and dispatch lines are built as plain tuples of their classes (the classes' own
    # __new__ is a Python function: a third of the loop), and each distinct "CPU, CUDA" once
    new, key_of = tuple.__new__, {}
    row_cls, dispatch_cls = (tuple, tuple) if plain else (Row, Dispatch)
    pos, line = 1, 1  # a line-number cursor (matches come in ascending order)
    base = overload = None
    start_line = 0
    dispatch: list[Dispatch] = []
    block_end = -1  # while in a dispatch block: where its last line read ends, else -1
    for m in _TOKEN.finditer(padded):
        at, end = m.span()
        line += count("\n", pos, at + 1)
        pos = at + 1
        kind = m.lastindex
        if kind == 1:  # "- func:": close the previous entry, open this one
            if base is not None:
                append(new(row_cls, (base, overload, start_line, tuple(dispatch))))
            block_end = -1
            base = m.group(2)  # None: scan_native_functions skips an entry whose header it cannot read
            if base is not None:
                overload = m.group(3) or ""
                start_line, dispatch = line, []
        elif kind == 5:  # "  dispatch:" and the dispatch lines right under it
            if base is not None:  # not before the first entry, nor in a skipped one
                block_end = end
                k = line
                for ln, keys, kernel in lines_of(m.group(5)):
                    k += 1
                    kt = key_of.get(keys)
                    if kt is None:
                        kt = key_of[keys] = tuple(map(strip, keys.split(",")))
                    dispatch.append(new(dispatch_cls, (kt, kernel, k, ln)))
                line = k
                pos = end
            else:
                block_end = -1
        elif block_end >= 0:  # a KEYS: kernel line further down: in the block unless a line between ends it
            if block_end != at and block_break(padded, block_end, at):
                block_end = -1
                continue
            keys, kernel = m.group(7, 8)
            dispatch.append(new(dispatch_cls, (tuple(map(strip, keys.split(","))), kernel, line, m.group(6))))
            block_end = end
    if base is not None:
        append(new(row_cls, (base, overload, start_line, tuple(dispatch))))
    return rows
