"""Find OpInfo entries in the (1.4 MB) OpInfo files without parsing them whole.

A regex finds every ``XxxInfo('name'`` header in one pass; only the entries of interest
get their span measured, by a small Python-aware bracket scanner (strings and comments
skipped) that walks from the header's ``(`` to its match.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_HEADER = re.compile(r"""^[ \t]*(\w*Info)\(\s*(?:#[^\n]*\n\s*)*(['"])([\w.]+)\2""", re.M)
_ATEN = r"""aten_name\s*=\s*['"]{}['"]"""
_TORCH_OPINFO = r"""torch_opinfo_name\s*=\s*['"]{}['"]"""
_VARIANT = re.compile(r"""variant_test_name\s*=\s*['"]([\w.]*)['"]""")
_ALIASES = re.compile(r"""aliases\s*=\s*\(([^)]*)\)""")


@dataclass(frozen=True)
class OpInfoEntry:
    path: str
    ctor: str  # OpInfo, UnaryUfuncInfo, ElementwiseBinaryPythonRefInfo, ...
    name: str
    start: int  # offset of the header line
    open_paren: int
    close_paren: int
    variant: str
    aliases: tuple[str, ...]



def python_close(text: str, open_pos: int) -> int:
    """Offset of the bracket closing ``text[open_pos]``, skipping strings and comments."""
    depth = 0
    i, n = open_pos, len(text)
    while i < n:
        c = text[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return i
        elif c == "#":
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        elif c in "\"'":
            triple = text[i : i + 3] in ('"""', "'''")
            if triple:
                j = text.find(text[i : i + 3], i + 3)
                i = n if j < 0 else j + 3
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        i += 1
    return -1


_HEADERS: dict[str, list[tuple[int, str, str, int]]] = {}  # by file text: one scan per file and run


def headers(text: str) -> list[tuple[int, str, str, int]]:
    """(header offset, constructor, name, offset of '(') for every entry (each text scanned once:
    a run that plans several ops asks about the same OpInfo files each time)."""
    found = _HEADERS.get(text)
    if found is None:
        if len(_HEADERS) >= 64:  # a long-lived caller reading many trees: keep it bounded
            _HEADERS.clear()
        found = _HEADERS[text] = [(m.start(), m.group(1), m.group(3), text.index("(", m.start())) for m in _HEADER.finditer(text)]
    return found


def _entry(path: str, text: str, h: tuple[int, str, str, int]) -> OpInfoEntry | None:
    start, ctor, name, open_paren = h
    close = python_close(text, open_paren)
    if close < 0:
        return None
    body = text[open_paren:close]
    variant = _VARIANT.search(body)
    aliases = _ALIASES.search(body)
    alias_names = tuple(re.findall(r"""['"]([\w.]+)['"]""", aliases.group(1))) if aliases else ()
    return OpInfoEntry(path, ctor, name, start, open_paren, close, variant.group(1) if variant else "", alias_names)


def _enclosing(hs: list[tuple[int, str, str, int]], offset: int) -> tuple[int, str, str, int] | None:
    best = None
    for h in hs:
        if h[0] < offset:
            best = h
        else:
            break
    return best


def find_op_entries(path: str, text: str, aten_op: str, extra_names: set[str]) -> list[OpInfoEntry]:
    """Entries for ``aten_op``: OpInfos named after it (or ``aten_name=`` it, or one of
    ``extra_names``) and the python refs that point at them."""
    hs = headers(text)
    wanted: dict[int, tuple[int, str, str, int]] = {}
    names = {aten_op} | extra_names
    for h in hs:
        if h[2] in names and not h[2].startswith("_refs."):
            wanted[h[0]] = h
    if aten_op in text:
        for m in re.finditer(_ATEN.format(re.escape(aten_op)), text):
            h = _enclosing(hs, m.start())
            if h:
                wanted[h[0]] = h
    entries = [e for h in sorted(wanted.values()) if (e := _entry(path, text, h))]
    return entries


def find_ref_entries(path: str, text: str, opinfo_names: set[str]) -> list[OpInfoEntry]:
    hs = headers(text)
    wanted: dict[int, tuple[int, str, str, int]] = {}
    for h in hs:
        if h[2].startswith("_refs.") and h[2][len("_refs.") :] in opinfo_names:
            wanted[h[0]] = h
    for name in opinfo_names:
        if name not in text:
            continue
        for m in re.finditer(_TORCH_OPINFO.format(re.escape(name)), text):
            h = _enclosing(hs, m.start())
            if h:
                wanted[h[0]] = h
    return [e for h in sorted(wanted.values()) if (e := _entry(path, text, h))]


# torch.testing._internal.common_dtype helpers an OpInfo's `dtypes=` is written with
_FLOATS = {"torch.float32", "torch.float64"}
_INTS = {"torch.uint8", "torch.int8", "torch.int16", "torch.int32", "torch.int64"}
_COMPLEXES = {"torch.complex64", "torch.complex128"}
_DTYPE_HELPERS = {
    "all_types": _FLOATS | _INTS,
    "all_types_and_complex": _FLOATS | _INTS | _COMPLEXES,
    "floating_types": _FLOATS,
    "floating_and_complex_types": _FLOATS | _COMPLEXES,
    "integral_types": _INTS,
    "complex_types": _COMPLEXES,
}
_DTYPES_KWARG = re.compile(r"\b(dtypesIfMPS|dtypes)\s*=\s*(\w+)\(([^()]*)\)")


def declared_dtypes(text: str, entry: OpInfoEntry) -> set[str] | None:
    """The dtypes an OpInfo entry tests on MPS: its ``dtypesIfMPS=`` if given, else its
    ``dtypes=`` (the helper-call forms, such as ``all_types_and(torch.bool, torch.half)``;
    a DecorateInfo's ``dtypes=(...)`` tuple is not one). None when neither can be read."""
    from mpsgen.tree.xfails import canonical_dtype

    found: dict[str, set[str]] = {}
    for m in _DTYPES_KWARG.finditer(text, entry.open_paren, entry.close_paren):
        between = text[entry.open_paren + 1 : m.start()]
        if sum(between.count(c) for c in "([{") != sum(between.count(c) for c in ")]}"):
            continue  # inside a nested call (a DecorateInfo's dtypes), not the entry's own
        helper = m.group(2)
        base = helper[: -len("_and")] if helper.endswith("_and") else helper
        if base not in _DTYPE_HELPERS or m.group(1) in found:
            continue
        extra = {canonical_dtype(a) for a in m.group(3).split(",") if a.strip()}
        found[m.group(1)] = _DTYPE_HELPERS[base] | extra
    return found.get("dtypesIfMPS", found.get("dtypes"))


_DECORATE = re.compile(r"\bDecorateInfo\(")
_MPS = re.compile(r"""device_type\s*=\s*['"]mps['"]""")


def mps_decorators(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """(start, end) offsets of every MPS DecorateInfo call between ``start`` and ``end``."""
    found = []
    pos = start
    while True:
        m = _DECORATE.search(text, pos, end)
        if not m:
            return found
        # skip matches inside a comment line
        line_start = text.rfind("\n", 0, m.start()) + 1
        if "#" in text[line_start : m.start()]:
            pos = m.end()
            continue
        close = python_close(text, m.end() - 1)
        if close < 0:
            return found
        if _MPS.search(text, m.end(), close):
            found.append((m.start(), close + 1))
        pos = close + 1
