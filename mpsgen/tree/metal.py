"""Scanners for Metal/C++ sources: ``#define``s, ``<op>_functor`` structs and top-level
macro statements (``REGISTER_*_OP(...)`` lines and bulk-macro instances).

Everything is computed from the text of the day, so a tree whose helper macros differ
from another version's is read as it is.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from mpsgen.tree.clike import Lines, MacroDef, scan_defines
from mpsgen.tree.source import line_of, line_starts, mask_c_comments_and_strings, match_close, split_args

_STRUCT_FUNCTOR = re.compile(r"^[ \t]*struct[ \t]+([A-Za-z_]\w*)_functor\b", re.M)
_NAMESPACE_OPEN = re.compile(r"^\s*(?:inline\s+)?namespace\b[^;{]*\{")
_STATEMENT = re.compile(r"^([A-Za-z_]\w*)[ \t]*\(", re.M)
_BRACE = re.compile(r"[{}]")


@dataclass(frozen=True)
class FunctorDef:
    """``struct <name>_functor { ... };`` at top level; lines 0-based, inclusive."""

    name: str
    start_line: int
    end_line: int


@dataclass(frozen=True)
class MacroCall:
    """A top-level statement ``NAME(args);`` (possibly spanning lines); lines 0-based."""

    macro: str
    args: tuple[str, ...]
    start_line: int
    end_line: int
    has_semicolon: bool


@dataclass(frozen=True)
class MetalSource:
    macros: dict[str, MacroDef]
    functors: dict[str, FunctorDef]
    calls: tuple[MacroCall, ...]
    # 0-based line index -> depth of braces at line start (0 = top level)
    line_count: int


@functools.lru_cache(maxsize=16)
def scan_metal(text: str) -> MetalSource:
    """What ``text`` defines and states at top level. Scanned once per text: a plan asks it of
    the kernel file and indexing.h, and coverage plans dozens of ops (the answer is shared:
    read it only)."""
    return scan_masked(text, mask_c_comments_and_strings(text))


def scan_masked(text: str, masked: str) -> MetalSource:
    """:func:`scan_metal` of ``text`` whose comments and strings are already blanked (``masked``)."""
    starts = line_starts(text)
    lines = text.split("\n")
    # the #defines, read by the one define scanner (:mod:`mpsgen.tree.clike`); every
    # line of every #define (a name defined twice included) is macro text
    at = Lines(text)
    macros, spans = scan_defines(text, at)
    in_macro: set[int] = set()
    for s, e in zip(spans.starts, spans.ends):
        in_macro.update(range(at.line(s) - 1, at.line(e)))

    # brace depth per line, not counting namespace braces (ignoring macro lines)
    depth_at: list[int] = []
    stack: list[bool] = []  # True for a namespace's brace
    depth = 0  # the braces on the stack that are not a namespace's
    masked_lines = masked.split("\n")
    for idx, ln in enumerate(masked_lines):
        depth_at.append(depth)
        if idx in in_macro or ("{" not in ln and "}" not in ln):
            continue
        is_namespace = bool(_NAMESPACE_OPEN.match(ln))
        for ch in _BRACE.findall(ln):
            if ch == "{":
                stack.append(is_namespace)
                depth += not is_namespace
                is_namespace = False
            elif stack:
                depth -= not stack.pop()

    functors: dict[str, FunctorDef] = {}
    for m in _STRUCT_FUNCTOR.finditer(masked):
        first = line_of(starts, m.start())
        if first in in_macro or depth_at[first] != 0:
            continue
        brace = masked.find("{", m.end())
        semi = masked.find(";", m.end())
        if brace < 0 or (0 <= semi < brace):
            continue  # a forward declaration
        close = match_close(masked, brace)
        if close < 0:
            continue
        end = close
        while end < len(masked) and masked[end] != ";":
            end += 1
        functors[m.group(1)] = FunctorDef(m.group(1), first, line_of(starts, min(end, len(masked) - 1)))

    calls: list[MacroCall] = []
    for m in _STATEMENT.finditer(masked):
        first = line_of(starts, m.start())
        if first in in_macro or depth_at[first] != 0:
            continue
        open_pos = m.end() - 1
        close = match_close(masked, open_pos)
        if close < 0:
            continue
        rest = masked[close + 1 : close + 40]
        stripped = rest.lstrip(" \t")
        if stripped and not stripped.startswith((";", "\n")):
            continue  # a function definition or declaration, not a statement
        args = tuple(a for a in split_args(masked[open_pos + 1 : close]))
        calls.append(
            MacroCall(m.group(1), args, first, line_of(starts, close), stripped.startswith(";"))
        )
    return MetalSource(macros, functors, tuple(calls), len(lines))

