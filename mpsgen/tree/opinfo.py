"""Find OpInfo entries in the (1.4 MB) OpInfo files without parsing them whole.

A regex finds every ``XxxInfo('name'`` header in one pass; only the entries of interest
get their span measured, by a small Python-aware bracket scanner (strings and comments
skipped) that walks from the header's ``(`` to its match.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import NamedTuple

from mpsgen.tree.xfails import canonical_dtype

# an entry's header, ``XxxInfo('name'`` first on its line: found by its ``Info(`` (a literal the
# regex engine looks for at C speed), the constructor's name then read back to the line start
_HEADER = re.compile(r"""Info\(\s*(?:#[^\n]*\n\s*)*(['"])([\w.]+)\1""")
_CTOR_HEAD = re.compile(r"[ \t]*(\w*)")
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


Header = tuple[int, str, str, int]  # (header offset, constructor, name, offset of '(')


class _Scanned(NamedTuple):
    """An OpInfo file's headers, their offsets, and where names are given (once per text)."""

    headers: list[Header]
    starts: list[int]
    named: dict[str, list[Header]]  # entry name -> its headers
    aten_names: dict[str, list[int]]  # `aten_name='x'` -> where it is said
    torch_opinfo_names: dict[str, list[int]]  # `torch_opinfo_name='x'` -> where it is said


_HEADERS: dict[str, _Scanned] = {}  # by file text: one scan per file and run
_ATEN_NAME = re.compile(r"""aten_name\s*=\s*['"]([^'"\n]*)['"]""")
_TORCH_OPINFO_NAME = re.compile(r"""torch_opinfo_name\s*=\s*['"]([^'"\n]*)['"]""")


def _said(pattern: re.Pattern, text: str) -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for m in pattern.finditer(text):
        found.setdefault(m.group(1), []).append(m.start())
    return found


def _scanned(text: str) -> _Scanned:
    found = _HEADERS.get(text)
    if found is None:
        if len(_HEADERS) >= 64:  # a long-lived caller reading many trees: keep it bounded
            _HEADERS.clear()
        hs = []
        for m in _HEADER.finditer(text):
            line = text.rfind("\n", 0, m.start()) + 1
            head = _CTOR_HEAD.match(text, line, m.start())
            if head.end() == m.start():  # nothing but the constructor's name before it on its line
                hs.append((line, head.group(1) + "Info", m.group(2), m.start() + len("Info")))
        named: dict[str, list[Header]] = {}
        for h in hs:
            named.setdefault(h[2], []).append(h)
        found = _HEADERS[text] = _Scanned(hs, [h[0] for h in hs], named, _said(_ATEN_NAME, text), _said(_TORCH_OPINFO_NAME, text))
    return found


def headers(text: str) -> list[Header]:
    """(header offset, constructor, name, offset of '(') for every entry (each text scanned once:
    a run that plans several ops asks about the same OpInfo files each time)."""
    return _scanned(text).headers


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


def _enclosing(text: str, offset: int) -> Header | None:
    """The last entry whose header starts before ``offset``."""
    scanned = _scanned(text)
    i = bisect.bisect_left(scanned.starts, offset)
    return scanned.headers[i - 1] if i else None


def find_op_entries(path: str, text: str, aten_op: str, extra_names: set[str]) -> list[OpInfoEntry]:
    """Entries for ``aten_op``: OpInfos named after it (or ``aten_name=`` it, or one of
    ``extra_names``) and the python refs that point at them."""
    scanned = _scanned(text)
    wanted: dict[int, Header] = {}
    for name in {aten_op} | extra_names:
        if not name.startswith("_refs."):
            wanted.update((h[0], h) for h in scanned.named.get(name, ()))
    for at in scanned.aten_names.get(aten_op, ()):
        h = _enclosing(text, at)
        if h:
            wanted[h[0]] = h
    return [e for h in sorted(wanted.values()) if (e := _entry(path, text, h))]


def find_ref_entries(path: str, text: str, opinfo_names: set[str]) -> list[OpInfoEntry]:
    scanned = _scanned(text)
    wanted: dict[int, Header] = {}
    for name in opinfo_names:
        wanted.update((h[0], h) for h in scanned.named.get("_refs." + name, ()))
        for at in scanned.torch_opinfo_names.get(name, ()):
            h = _enclosing(text, at)
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
