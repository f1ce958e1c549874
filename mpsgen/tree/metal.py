"""Scanners for Metal/C++ sources: ``#define``s, ``<op>_functor`` structs and top-level
macro statements (``REGISTER_*_OP(...)`` lines and bulk-macro instances).

Everything is computed from the text of the day, so a tree whose helper macros differ
from another version's is read as it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mpsgen.tree.source import line_of, line_starts, mask_c_comments_and_strings, match_close, split_args

_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)(\(([^)]*)\))?", re.M)
_STRUCT_FUNCTOR = re.compile(r"^[ \t]*struct[ \t]+([A-Za-z_]\w*)_functor\b", re.M)
_NAMESPACE_OPEN = re.compile(r"^\s*(?:inline\s+)?namespace\b[^;{]*\{")
_STATEMENT = re.compile(r"^([A-Za-z_]\w*)[ \t]*\(", re.M)


@dataclass(frozen=True)
class MacroDef:
    """A ``#define`` with its (backslash-joined) body; lines are 0-based, inclusive."""

    name: str
    params: tuple[str, ...] | None  # None for an object-like macro
    body: str
    start_line: int
    end_line: int

    def expand(self, args: list[str]) -> str:
        """Substitute arguments (with ``#`` and ``##``) into the body."""
        assert self.params is not None
        values = dict(zip(self.params, args))
        body = self.body
        # stringize #P (but not ##)
        body = re.sub(r"(?<!#)#\s*([A-Za-z_]\w*)", lambda m: f'"{values[m.group(1)]}"' if m.group(1) in values else m.group(0), body)
        body = re.sub(r"\b([A-Za-z_]\w*)\b", lambda m: values.get(m.group(1), m.group(1)), body)
        return re.sub(r"\s*##\s*", "", body)


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


def scan_metal(text: str) -> MetalSource:
    masked = mask_c_comments_and_strings(text)
    starts = line_starts(text)
    lines = text.split("\n")
    macros: dict[str, MacroDef] = {}
    in_macro: set[int] = set()
    for m in _DEFINE.finditer(masked):
        first = line_of(starts, m.start())
        last = first
        while last < len(lines) and lines[last].rstrip().endswith("\\"):
            last += 1
        last = min(last, len(lines) - 1)
        in_macro.update(range(first, last + 1))
        joined = " ".join(l.rstrip().rstrip("\\") for l in masked.split("\n")[first : last + 1])
        header_end = joined.find(m.group(0).strip()) + len(m.group(0).strip())
        body = joined[header_end:].strip()
        params = tuple(p.strip() for p in m.group(3).split(",")) if m.group(2) is not None else None
        if params == ("",):
            params = ()
        macros[m.group(1)] = MacroDef(m.group(1), params, body, first, last)

    # brace depth per line, not counting namespace braces (ignoring macro lines)
    depth_at: list[int] = []
    stack: list[bool] = []  # True for a namespace's brace
    masked_lines = masked.split("\n")
    for idx, ln in enumerate(masked_lines):
        depth_at.append(sum(1 for is_ns in stack if not is_ns))
        if idx in in_macro or ("{" not in ln and "}" not in ln):
            continue
        is_namespace = bool(_NAMESPACE_OPEN.match(ln))
        for ch in ln:
            if ch == "{":
                stack.append(is_namespace)
                is_namespace = False
            elif ch == "}" and stack:
                stack.pop()

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

