"""The functor structs of a Metal kernel file: each ``struct <op>_functor { ... };`` and its
``operator()`` overloads, with the input categories each overload accepts as read from its
``enable_if_t<...>`` constraint.

Categories are what a registration's input dtype is: ``float`` (float, half, bfloat),
``int`` (long, int, short, char, uchar, bool) and ``complex`` (float2, half2). A constraint
this reader cannot decide (``||``, a trait it does not know, a non-template overload whose
parameter types convert) accepts every category: lints built on it only report what is
certain.
"""

from __future__ import annotations

import re
from typing import NamedTuple


from mpsgen.tree.source import close_bracket

FLOAT, INT, COMPLEX = "float", "int", "complex"
ALL = frozenset({FLOAT, INT, COMPLEX})

CATEGORY = {
    "float": FLOAT, "half": FLOAT, "bfloat": FLOAT,
    "long": INT, "int": INT, "short": INT, "char": INT, "uchar": INT, "bool": INT,
    "float2": COMPLEX, "half2": COMPLEX,
}

# c10::metal / metal type traits -> the categories they hold for
_TRAITS = {
    "is_complex": frozenset({COMPLEX}),
    "is_scalar_floating_point": frozenset({FLOAT}),
    "is_floating_point": frozenset({FLOAT, COMPLEX}),  # metal's holds for vectors (float2) too
    "is_scalar_integral": frozenset({INT}),
    "is_integral": frozenset({INT}),
}
# a trait, searched from its literal "is_" (C speed), and the "!" that may come before it
_TRAIT = re.compile(r"is_\w+?(?=_v\s*<|\s*<[^<>]*>\s*::\s*value)")
_NEGATED = re.compile(r"!\s*(?:::)?(?:c10::)?(?:metal::)?\Z")
# searched from its literal first word (C speed; a pattern opening with "^" under re.M is tried
# at every offset), the start of its line checked after
_STRUCT = re.compile(r"struct[ \t]+(\w+)_functor\b[^;{]*\{")
_CALL = re.compile(r"\boperator\s*\(\s*\)\s*\(")


class Overload(NamedTuple):
    accepts: frozenset[str]
    line: int  # 1-based line of ``operator()``
    body: str  # the code between its braces (comments and strings blanked)
    body_line: int  # 1-based line where the body starts


class FunctorStruct(NamedTuple):
    name: str  # the op: ``exp`` for ``exp_functor``
    line: int
    overloads: tuple[Overload, ...]

    def accepts(self, category: str) -> bool:
        return any(category in o.accepts for o in self.overloads) or not self.overloads


_NOT_CODE = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"', re.S)


def _blank(m: re.Match) -> str:
    g = m.group()
    return " " * len(g) if "\n" not in g else "\n".join(" " * len(part) for part in g.split("\n"))


def _blank_comments(text: str) -> str:
    """Comments and string literals blanked (same offsets and newlines)."""
    return _NOT_CODE.sub(_blank, text)


class _LineCounter:
    """1-based line of ascending offsets, counted from the last one asked."""

    def __init__(self, text: str):
        self.text, self.pos, self.line = text, 0, 1

    def __call__(self, offset: int) -> int:
        if offset < self.pos:
            self.pos, self.line = 0, 1
        self.line += self.text.count("\n", self.pos, offset)
        self.pos = offset
        return self.line


def accepted(declaration: str) -> frozenset[str]:
    """The categories an overload's template declaration lets in."""
    if "||" in declaration:
        return ALL
    found = [(_NEGATED.search(declaration[max(0, m.start() - 24) : m.start()]), m.group()) for m in _TRAIT.finditer(declaration)]
    if not found:
        return ALL
    out = ALL
    for neg, trait in found:
        held = _TRAITS.get(trait)
        if held is None:
            return ALL
        out = out & (ALL - held if neg else held)
    return out


_TOKEN = re.compile(r'[{}]|//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"', re.S)


def _struct_end(text: str, open_at: int) -> int:
    """Offset of the brace closing the one at ``open_at``, comments and strings skipped (-1: none)."""
    depth = 0
    for t in _TOKEN.finditer(text, open_at):
        c = t.group()
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return t.start()
    return -1


def scan_functors(text: str) -> list[FunctorStruct]:
    """Every functor struct written out in ``text`` (not those a macro stamps out). Only the
    structs are read closely: the rest of a kernel file is passed over at regex speed."""
    if "_functor" not in text:
        return []
    line_of = _LineCounter(text)
    out = []
    pos = 0
    while (m := _STRUCT.search(text, pos)) is not None:
        open_at = m.end() - 1
        end = _struct_end(text, open_at)
        if end < 0:
            break
        start_of_line = text.rfind("\n", 0, m.start()) + 1
        if text[start_of_line : m.start()].strip(" \t"):
            pos = m.end()  # not at the start of its line: look on from the match
            continue
        pos = end + 1
        if _in_block_comment(text, m.start()):
            continue
        body_start = open_at + 1
        struct_line = line_of(m.start())
        body = _blank_comments(text[body_start:end])
        overloads = []
        prev_end = 0
        for c in _CALL.finditer(body):
            # the declaration: from the end of the previous overload to this one's body
            params_close = body.find(")", c.end())
            brace = body.find("{", params_close)
            if params_close < 0 or brace < 0:
                break
            close = close_bracket(body, brace)  # comments and strings are blanked in body
            if close < 0:
                break
            decl = body[prev_end:brace]
            template = decl.rfind("template")
            accepts = ALL if template < 0 else accepted(decl[template:])  # a plain overload's parameters convert
            overloads.append(
                Overload(accepts, line_of(body_start + c.start()), body[brace + 1 : close], line_of(body_start + brace))
            )
            prev_end = close + 1
        out.append(FunctorStruct(m.group(1), struct_line, tuple(overloads)))
    return out


def _in_block_comment(text: str, offset: int) -> bool:
    opened = text.rfind("/*", 0, offset)
    return opened >= 0 and text.rfind("*/", opened, offset) < 0
