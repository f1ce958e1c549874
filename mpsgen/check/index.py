"""Read the parts of a tree that ``mpsgen check`` cross-references, once and fast.

The tree scanners of :mod:`mpsgen.tree` lex every character in Python (exact, and fine
for the few files ``new-op`` edits); ``check`` reads ~200 C-like files per run, so this
module finds the same facts with regular expressions over the raw text (PyTorch's
sources are clang-formatted: top-level statements start in column 0), searching for a
literal (``TORCH_IMPL_FUNC``, ``REGISTER_DISPATCH``, ``mps``) at C speed and doing the
Python checks (line start, comments, ``#define`` bodies) only at the few matches, and
only walks characters inside the short argument lists it needs. Macro instances are
expanded with the tree's own ``#define``s (:meth:`mpsgen.tree.metal.MacroDef.expand`,
:func:`mpsgen.registrations.parse_calls`), so helper, bulk and functor-defining macros
count like literal text. Lines are 1-based.

Metal registrations are kept as the statements that make them (``REGISTER_*(op, ...)``
lines and bulk-macro instances) with the op names each registers: that is all MPS003 and
MPS004 need. The (op, dtypes) registrations a statement expands to are built only where a
rule needs them (:meth:`MetalFile.expand`): for MPS006, only among statements that share an
op (or whose macro could register one key twice), and only after a cheap pass over their
keys found a repeat; for MPS004 and MPS009, only for the ops they report on.
"""

from __future__ import annotations

import bisect
import os
import re
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Callable, Iterable, NamedTuple

from mpsgen.tree.native_rows import Row, scan_rows
from mpsgen.errors import BadInput
from mpsgen.registrations import TORCH_DTYPES, close_paren, parse_calls
from mpsgen.tree import (
    COMMON_MPS,
    INDEXING_HEADER,
    KERNELS_DIR,
    OPERATIONS_DIR,
    NATIVE_DIR,
    NATIVE_FUNCTIONS,
    PytorchTree,
)
from mpsgen.tree.metal import MacroDef
from mpsgen.tree.source import SourceFile, read_bounded, split_args
from mpsgen.tree.stubs import collect_stubs
from mpsgen.tree.walk import walk_files

MPS_DIR = "aten/src/ATen/native/mps"
HOST_SUFFIXES = (".mm", ".cpp")

_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_LINE_COMMENT = re.compile(r"//[^\n]*")
_DEFINE = re.compile(r"#[ \t]*define[ \t]+([A-Za-z_]\w*)(\(([^)]*)\))?((?:[^\n]*\\\n)*[^\n]*)")
_INCLUDE = re.compile(r'#[ \t]*include[ \t]*[<"]([^>"]+)[>"]')
# searched in "\n" + text (a literal first: C speed); group 3 is the argument list when it
# holds no parenthesis (the common case, else _statement_at walks it)
_UPPER_CALL0 = re.compile(r"\n([A-Z_][A-Z0-9_]*)[ \t]*(\()(?:([^()]*)\))?")
# the same, for a file whose own uppercase macros cannot register: only REGISTER_* can
_REGISTER_CALL0 = re.compile(r"\n(REGISTER_[A-Z0-9_]*)[ \t]*(\()(?:([^()]*)\))?")
_UPPER_NAME = re.compile(r"[A-Z_][A-Z0-9_]*\Z")
# in a reversed text: "(", blanks, and the (reversed) word before them
_REVERSED_CALL = re.compile(r"\(\s*(\w+)")
_REVERSED_RAW_CALL = re.compile(r"\([\s\\]*(\w+)")
_IDENT_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_NOT_IDENT_START = re.compile(r"^[^A-Za-z_]+")
_REGISTER_DISPATCH = re.compile(r"REGISTER_DISPATCH[ \t]*\(")
_IMPL = re.compile(r"TORCH_IMPL_FUNC[ \t]*\([ \t]*(\w+)[ \t]*\)")
_MPS_NAME = re.compile(r"mps\w*[ \t]*\(")
_WORD_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"
_STATIC_FN = re.compile(r"static[ \t]+(?:inline[ \t]+)?void[ \t]+(\w+)[ \t]*\(")
_EXEC = re.compile(r"exec_(unary|binary|ternary)_kernel[ \t]*\(\s*[\w.\->*&()]*?\s*,\s*\"([^\"\n]*)\"")
_FUNCTOR = re.compile(r"_functor\b")
_FUNCTOR_LINE = re.compile(r"(?:struct|class)[ \t]+(\w+)_functor\b(?![ \t]*;)|using[ \t]+(\w+)_functor[ \t]*=")
_FUNCTOR_ANY = re.compile(r"\b(?:struct|class)\s+([\w\x00]+)_functor\b(?!\s*;)")
# the same, searched from its literal alternatives (fast), the word boundary checked after
_FUNCTOR_ANY_FAST = re.compile(r"(?:struct|class)\s+([\w\x00]+)_functor\b(?!\s*;)")
_EXPANDED_DISPATCH = re.compile(r"REGISTER_DISPATCH\s*\(\s*([\w\x00]+)\s*,\s*&?\s*([\w\x00]+)")
_EXPANDED_IMPL = re.compile(r"TORCH_IMPL_FUNC\s*\(\s*([\w\x00]+)\s*\)")
_EXPANDED_DEF = re.compile(r"([\w\x00]+)\s*\([^()]*\)\s*(?:const\s*)?\{")
_EXPANDED_EXEC = re.compile(r"exec_(unary|binary|ternary)_kernel\s*\(\s*[\w.\->*&()]*?\s*,\s*\"([^\"]*)\"")
_PLACEHOLDER = re.compile(r"\x00(\d+)\x00")
_PURE_PLACEHOLDER = re.compile(r"\x00(\d+)\x00\Z")
_BODY_FOLLOWS = re.compile(r"\s*(?:(?:const|override|noexcept|final)\b\s*)*(?:->[^{;]*)?\{")
_NOT_A_DEFINITION = re.compile(r"[(=;,{}.]|->|\breturn\b|^\s|^#|^//")
_KEYWORDS = frozenset({"if", "for", "while", "switch", "return", "sizeof", "catch", "TORCH_IMPL_FUNC", "defined"})
_NOT_DEFINITION_START = (" ", "\t", "#", "/", "}", "\n")
MAX_EXPANSION_DEPTH = 8


class Lines:
    """1-based line numbers of offsets (counted incrementally: queries mostly ascend), and
    the comments to ignore."""

    def __init__(self, text: str):
        self.text = text
        self._pos = 0
        self._line = 1
        self.comments: list[tuple[int, int]] = []
        if "/*" in text:
            self.comments = [(m.start(), m.end()) for m in _BLOCK_COMMENT.finditer(text)]
        self._comment_starts = [s for s, _ in self.comments]

    def line(self, offset: int) -> int:
        if offset >= self._pos:
            self._line += self.text.count("\n", self._pos, offset)
        else:
            self._line = self.text.count("\n", 0, offset) + 1
        self._pos = offset
        return self._line

    def line_start(self, offset: int) -> int:
        return self.text.rfind("\n", 0, offset) + 1

    def in_block_comment(self, offset: int) -> bool:
        if self.comments:
            i = bisect.bisect_right(self._comment_starts, offset) - 1
            if i >= 0 and offset < self.comments[i][1]:
                return True
        return False

    def commented(self, offset: int) -> bool:
        """In a block comment, or after ``//`` on its line."""
        return self.in_block_comment(offset) or "//" in self.text[self.line_start(offset) : offset]

    def at_line_start(self, offset: int) -> bool:
        """Only blanks before ``offset`` on its line."""
        return not self.text[self.line_start(offset) : offset].strip()


def _clean_body(raw: str) -> str:
    """A ``#define``'s body on one line: comments and line continuations out."""
    if "/*" in raw:
        raw = _BLOCK_COMMENT.sub(" ", raw)
    if "//" in raw:
        parts = [_LINE_COMMENT.sub("", ln).rstrip().rstrip("\\") for ln in raw.split("\n")]
        return " ".join(p.strip() for p in parts).strip()
    return " ".join([ln.rstrip().rstrip("\\").strip() for ln in raw.split("\n")]).strip()


class RawDefine(NamedTuple):
    """A ``#define`` as found: what :func:`define` turns into a :class:`MacroDef` when needed."""

    name: str
    params: str | None  # the parameter list's text, None for an object-like macro
    raw: str  # the body, with its comments and line continuations
    start: int
    end: int

    def body(self) -> str:
        return _clean_body(self.raw)


def raw_defines(text: str, lines: Lines) -> tuple[dict[str, RawDefine], Spans]:
    """The ``#define``s of a file (the last one of a name wins) and the offset spans they cover."""
    found: dict[str, RawDefine] = {}
    spans = Spans()
    if "define" not in text:
        return found, spans
    for m in _DEFINE.finditer(text):
        start = m.start()
        line_start = text.rfind("\n", 0, start) + 1
        if line_start != start and text[line_start:start].strip():
            continue  # not at the start of its line
        if lines.in_block_comment(start):
            continue
        end = m.end()
        spans.add(start, end)
        found[m.group(1)] = RawDefine(m.group(1), m.group(3) if m.group(2) is not None else None, m.group(4), start, end)
    return found, spans


def define(d: RawDefine, lines: Lines) -> MacroDef:
    """A :class:`MacroDef` (0-based lines, as the tree scanners keep them)."""
    params = None
    if d.params is not None:
        params = tuple(p.strip() for p in d.params.split(",")) if d.params.strip() else ()
    return MacroDef(d.name, params, d.body(), lines.line(d.start) - 1, lines.line(d.end) - 1)


def scan_defines(text: str, lines: Lines) -> tuple[dict[str, MacroDef], Spans]:
    """``#define``s as :class:`MacroDef` and the offset spans they cover."""
    found, spans = raw_defines(text, lines)
    return {name: define(d, lines) for name, d in found.items()}, spans


def calls_a_macro(body: str, *known: dict) -> bool:
    """Whether ``body`` may call a macro of ``known`` (a superset of what
    :func:`parse_calls` finds: every word before a ``(``, found in the reversed text, where
    "(" is a literal to search for)."""
    for w in _REVERSED_CALL.findall(body[::-1]):
        name = w[::-1]
        if name[0] not in _IDENT_START:
            name = _NOT_IDENT_START.sub("", name)
        for k in known:
            if name in k:
                return True
    return False


class Spans:
    """Sorted, disjoint offset spans (of ``#define``s)."""

    __slots__ = ("ends", "starts")

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []

    def add(self, start: int, end: int) -> None:
        self.starts.append(start)
        self.ends.append(end)

    def __bool__(self) -> bool:
        return bool(self.starts)


def _inside(spans: Spans, offset: int) -> bool:
    """Whether ``offset`` is in one of ``spans``."""
    if not spans.starts:
        return False
    i = bisect.bisect_right(spans.starts, offset) - 1
    return i >= 0 and offset < spans.ends[i]


def fast_split_args(arglist: str) -> list[str]:
    if "(" in arglist or "<" in arglist or "[" in arglist or "{" in arglist:
        return split_args(arglist)
    return [a.strip() for a in arglist.split(",")] if arglist.strip() else []


class Statement(NamedTuple):
    """A ``NAME(args)`` statement at the start of a line (macro instance or registration)."""

    macro: str
    args: tuple[str, ...]
    line: int


def _statement_at(text: str, lines: Lines, name: str, open_pos: int, start: int) -> Statement | None:
    close = text.find(")", open_pos)
    if close < 0:
        return None
    if "(" in text[open_pos + 1 : close]:
        close = close_paren(text, open_pos)
        if close < 0:
            return None
    rest = text[close + 1 : close + 41].lstrip(" \t")
    if rest and not rest.startswith((";", "\n", "//", "\r")):
        return None  # a definition or declaration, not a statement
    return Statement(name, tuple(fast_split_args(text[open_pos + 1 : close])), lines.line(start))


def find_statements(text: str, lines: Lines, names: Iterable[str], macro_spans: Spans) -> list[Statement]:
    """Instances of the given macros at the start of a line, outside ``#define``s (a search
    for the literal name each: a match inside a word is not at the start of its line)."""
    out = []
    for name in names:
        if name not in text:
            continue
        for m in re.finditer(re.escape(name) + r"[ \t]*\(", text):
            start = m.start()
            line_start = text.rfind("\n", 0, start) + 1
            if line_start != start and text[line_start:start].strip():
                continue
            if _inside(macro_spans, start) or lines.in_block_comment(start):
                continue
            st = _statement_at(text, lines, name, m.end() - 1, start)
            if st:
                out.append(st)
    out.sort(key=lambda s: s.line)
    return out


# -- macro expansion ----------------------------------------------------------------------
def _norm(macro: str) -> str:
    """The part of a registration macro's name its host names are made of."""
    return macro.replace("OPMATH_", "").rstrip("_")


def _getter(template: str) -> Callable[[tuple[str, ...]], str] | str:
    """A literal, or a function of the arguments (raises IndexError when they are too few;
    the caller then falls back to :func:`substitute`)."""
    if "\x00" not in template:
        return template
    m = _PURE_PLACEHOLDER.match(template)
    if m and template[0] == "\x00":
        return itemgetter(int(m.group(1)))
    return lambda args: substitute(template, args)


def _tuple_getter(templates: list[str]) -> Callable[[tuple[str, ...]], tuple[str, ...]] | tuple[str, ...]:
    if not any("\x00" in t for t in templates):
        return tuple(templates)
    pure = [_PURE_PLACEHOLDER.match(t) if t[:1] == "\x00" else None for t in templates]
    if len(templates) > 1 and all(pure):
        return itemgetter(*(int(m.group(1)) for m in pure))  # returns a tuple: C speed
    getters = [_getter(t) for t in templates]
    return lambda args: tuple(g if type(g) is str else g(args) for g in getters)


class KeyTemplate(NamedTuple):
    """A base registration a macro makes, in placeholders, ready to key: (normalised macro,
    op, dtypes), each a literal or a function of the instance's arguments."""

    norm: str
    op: Callable | str
    dtypes: Callable | tuple[str, ...]


class MacroTable:
    """A file's macros, each expanded once with placeholders for its parameters, so that an
    instance costs one substitution instead of a re-expansion."""

    def __init__(self, macros: dict[str, MacroDef], stop: set[str] = frozenset(), memo: dict | None = None):
        self.macros = macros
        self.stop = stop
        # expansions and call lists depend only on a macro's text: shared by the tables of a run
        self._memo: dict = {} if memo is None else memo
        self._text: dict[str, str | None] = {}
        self._calls: dict[str, list[tuple[str, list[str]]]] = {}
        self._found: dict[tuple[str, str], list] = {}
        self._ops: dict[str, tuple[list[Callable | str], bool]] = {}
        self._inert: dict[str, bool] = {}
        self._keys: dict[str, tuple[list[KeyTemplate], bool]] = {}

    def _expanded(self, d: MacroDef) -> str:
        """``d``'s body with placeholders for its parameters."""
        key = (d.params, d.body)
        got = self._memo.get(key)
        if got is None:
            got = self._memo[key] = d.expand([f"\x00{i}\x00" for i in range(len(d.params or ()))])
        return got

    def calls(self, body: str) -> list[tuple[str, list[str]]]:
        got = self._memo.get(body)
        if got is None:
            got = self._memo[body] = parse_calls(body)
        return got

    def text(self, name: str, depth: int = 0) -> str | None:
        """The full expansion of ``name`` (nested known macros expanded too), in placeholders."""
        if name in self._text:
            return self._text[name]
        d = self.macros.get(name)
        if d is None or d.params is None or depth > MAX_EXPANSION_DEPTH:
            return None
        self._text[name] = None  # recursion guard
        body = self._expanded(d)
        pieces = [body]
        for inner, inner_args in self.calls(body):
            if inner in self.macros and inner not in self.stop and inner != name:
                inner_text = self.text(inner, depth + 1)
                inner_d = self.macros[inner]
                if inner_text is not None and len(inner_d.params or ()) == len(inner_args):
                    pieces.append(substitute(inner_text, inner_args))
        self._text[name] = "\n".join(pieces)
        return self._text[name]

    def base_calls(self, name: str, base: set[str], depth: int = 0) -> list[tuple[str, list[str]]]:
        """Base registration calls of ``name`` in placeholders (lenient: anything else in the
        body, e.g. a static_assert, is skipped)."""
        if name in self._calls:
            return self._calls[name]
        d = self.macros.get(name)
        self._calls[name] = []
        if d is None or d.params is None or depth > MAX_EXPANSION_DEPTH:
            return []
        out: list[tuple[str, list[str]]] = []
        for inner, inner_args in self.calls(self._expanded(d)):
            if inner in base:
                out.append((inner, inner_args))
            elif inner in self.macros and inner != name:
                inner_d = self.macros[inner]
                if len(inner_d.params or ()) == len(inner_args):
                    for bm, bargs in self.base_calls(inner, base, depth + 1):
                        out.append((bm, [substitute(a, inner_args) for a in bargs]))
        self._calls[name] = out
        return out

    def inert(self, name: str) -> bool:
        """Whether instances of ``name`` can neither register a kernel nor define a functor:
        its body calls no macro, pastes no tokens and names no ``_functor`` (most macros of
        kernel files, which instantiate templates: their instances need not be parsed)."""
        got = self._inert.get(name)
        if got is None:
            d = self.macros.get(name)
            body = d.body if d is not None else ""
            got = self._inert[name] = d is not None and "##" not in body and "_functor" not in body and not calls_a_macro(body, self.macros)
        return got

    def op_getters(self, name: str, base: set[str]) -> tuple[list[Callable | str], bool]:
        """How to get the ops an instance of ``name`` registers (distinct templates, in order
        of first use), and whether any of them depends on the instance's arguments."""
        got = self._ops.get(name)
        if got is None:
            templates = list(dict.fromkeys(bargs[0] for _, bargs in self.base_calls(name, base) if bargs))
            got = self._ops[name] = ([_getter(t) for t in templates], any("\x00" in t for t in templates))
        return got

    def key_templates(self, name: str, base: set[str]) -> tuple[list[KeyTemplate], bool]:
        """The keys an instance of ``name`` registers, and whether two of them could be equal
        for some arguments (then every instance is a candidate duplicate)."""
        got = self._keys.get(name)
        if got is None:
            calls = [(_norm(bm), bargs[0], list(bargs[1:])) for bm, bargs in self.base_calls(name, base) if bargs]
            templates = [KeyTemplate(n, _getter(op), _tuple_getter(dts)) for n, op, dts in calls]
            got = self._keys[name] = (templates, _may_collide(calls))
        return got

    def findall(self, name: str, pattern: re.Pattern) -> list:
        """``pattern.finditer`` over the expansion of ``name``: lists of group tuples."""
        key = (name, pattern.pattern)
        found = self._found.get(key)
        if found is None:
            text = self.text(name)
            found = []
            if text:  # the same expansion in another file of the run: searched once
                mkey = (text, pattern.pattern)
                found = self._memo.get(mkey)
                if found is None:
                    found = self._memo[mkey] = [m.groups() for m in pattern.finditer(text)]
            self._found[key] = found
        return found


def _may_collide(calls: list[tuple[str, str, list[str]]]) -> bool:
    """Whether two of a macro's registrations could get the same key: same normalised macro,
    and op and dtypes equal wherever both are literal (a placeholder may equal anything)."""
    for i, (n1, op1, dt1) in enumerate(calls):
        a = (op1, *dt1)
        for n2, op2, dt2 in calls[i + 1 :]:
            b = (op2, *dt2)
            if n1 == n2 and len(a) == len(b) and all(x == y or "\x00" in x or "\x00" in y for x, y in zip(a, b, strict=True)):
                return True
    return False


def substitute(template: str, args: list[str] | tuple[str, ...]) -> str:
    if "\x00" not in template:
        return template
    if template[0] == "\x00" and template.count("\x00") == 2 and template[-1] == "\x00":
        i = int(template[1:-1])
        return args[i] if i < len(args) else ""
    return _PLACEHOLDER.sub(lambda m: args[int(m.group(1))] if int(m.group(1)) < len(args) else "", template)


# -- host side ----------------------------------------------------------------------------
class Dispatch(NamedTuple):
    stub: str
    function: str
    path: str
    line: int
    via: str | None = None


class Definition(NamedTuple):
    """A host definition: ``TORCH_IMPL_FUNC`` block, function, or macro instance producing one."""

    name: str
    form: str  # impl_func | function | impl_macro (instance producing TORCH_IMPL_FUNC) | function_macro
    path: str
    line: int
    static: bool = False
    macro: str | None = None


class KernelUse(NamedTuple):
    kind: str
    name: str
    path: str
    line: int
    function: str | None  # the enclosing static kernel function, when known


@dataclass
class HostFile:
    path: str
    text: str
    definitions: list[Definition] = field(default_factory=list)
    dispatches: list[Dispatch] = field(default_factory=list)
    uses: list[KernelUse] = field(default_factory=list)


def _enclosing_kernel_function(text: str, pos: int) -> str | None:
    """The ``static void NAME(...)`` function a position is in (the last one above it)."""
    start = text.rfind("\nstatic ", 0, pos)
    while start >= 0:
        m = _STATIC_FN.match(text, start + 1)
        if m:
            return m.group(1)
        start = text.rfind("\nstatic ", 0, start)
    return None


def _function_definitions(text: str, path: str, lines: Lines, macro_spans: Spans) -> Iterable[Definition]:
    """Function definitions of MPS kernels: every yaml MPS-only kernel name contains "mps".

    A definition starts its line (no indent, not a preprocessor line, comment or closing
    brace), and nothing before its name on that line is an expression: so its name is the
    identifier before the first ``(`` of the line. A line is looked at only where the
    literal ``mps`` is followed by ``(`` (one C-speed search) and only once.
    """
    if "mps" not in text:
        return
    done_line = -1
    for m in _MPS_NAME.finditer(text):
        pos = m.start()
        if pos < done_line:
            continue
        start = text.rfind("\n", 0, pos) + 1
        done_line = text.find("\n", pos)  # later "mps(" on this line follow a "(": not a definition
        if done_line < 0:
            done_line = len(text)
        if text[start : start + 1] in _NOT_DEFINITION_START:
            continue
        name_end = m.start() + len(m.group().rstrip("( \t"))
        window = text[max(0, pos - 120) : name_end]
        name = window[len(window.rstrip(_WORD_CHARS)) :]
        if not name or name[0].isdigit() or name in _KEYWORDS:
            continue
        ident_start = name_end - len(name)
        head = text[start:ident_start]
        if _NOT_A_DEFINITION.search(head) or _inside(macro_spans, pos):
            continue
        close = close_paren(text, m.end() - 1)
        if close < 0 or not _BODY_FOLLOWS.match(text, close + 1) or lines.commented(pos):
            continue
        yield Definition(name, "function", path, lines.line(start), "static" in head.split())


def scan_host(path: str, text: str, memo: dict | None = None) -> HostFile:
    lines = Lines(text)
    raw, macro_spans = raw_defines(text, lines)
    # object-like macros make nothing here (no instance of them is a statement)
    macros = {name: define(d, lines) for name, d in raw.items() if d.params is not None}
    hf = HostFile(path, text)
    defs = hf.definitions
    if "TORCH_IMPL_FUNC" in text:
        rfind, line = text.rfind, lines.line
        for m in _IMPL.finditer(text):
            start = m.start()
            line_start = rfind("\n", 0, start) + 1
            if line_start != start and text[line_start:start].strip():
                continue  # not at the start of its line
            if (macro_spans and _inside(macro_spans, start)) or lines.in_block_comment(start):
                continue
            defs.append(Definition(m.group(1), "impl_func", path, line(start)))
    defs += _function_definitions(text, path, lines, macro_spans)
    if "REGISTER_DISPATCH" in text:
        for m in _REGISTER_DISPATCH.finditer(text):
            if not lines.at_line_start(m.start()) or _inside(macro_spans, m.start()) or lines.in_block_comment(m.start()):
                continue
            close = close_paren(text, m.end() - 1)
            args = split_args(text[m.end() : close]) if close > 0 else []
            if len(args) >= 2:
                hf.dispatches.append(Dispatch(args[0], args[1].lstrip("&").strip(), path, lines.line(m.start())))
    if "_kernel" in text:
        for m in _EXEC.finditer(text):
            if lines.commented(m.start()) or _inside(macro_spans, m.start()):
                continue
            hf.uses.append(KernelUse(m.group(1), m.group(2), path, lines.line(m.start()), _enclosing_kernel_function(text, m.start())))
    function_macros = list(macros)
    if function_macros:
        table = MacroTable(macros, memo=memo)
        for st in find_statements(text, lines, function_macros, macro_spans):
            args = st.args
            for stub, fn in table.findall(st.macro, _EXPANDED_DISPATCH):
                hf.dispatches.append(Dispatch(substitute(stub, args), substitute(fn, args), path, st.line, via=st.macro))
            for (impl,) in table.findall(st.macro, _EXPANDED_IMPL):
                defs.append(Definition(substitute(impl, args), "impl_macro", path, st.line, macro=st.macro))
            first_fn = None
            for (fn,) in table.findall(st.macro, _EXPANDED_DEF):
                if fn in _KEYWORDS or fn.isupper():
                    continue
                fn = substitute(fn, args)
                first_fn = first_fn or fn
                defs.append(Definition(fn, "function_macro", path, st.line, macro=st.macro))
            for kind, name in table.findall(st.macro, _EXPANDED_EXEC):
                hf.uses.append(KernelUse(kind, substitute(name, args), path, st.line, first_fn))
    hf.dispatches.sort(key=lambda d: d.line)
    return hf


# -- Metal side ---------------------------------------------------------------------------
class Registration(NamedTuple):
    """One base registration (``REGISTER_UNARY_OP(exp, float, float)``) after expansion."""

    macro: str
    op: str
    dtypes: tuple[str, ...]
    path: str
    line: int  # the statement's line, or the bulk macro's body line naming the op
    statement_line: int
    via: str | None = None

    @property
    def key(self) -> tuple[str, str, tuple[str, ...]]:
        """What the host name is made of: the same key twice is a duplicate symbol."""
        return (_norm(self.macro), self.op, self.dtypes)

    @property
    def torch_input_dtype(self) -> str | None:
        return TORCH_DTYPES.get(self.dtypes[0]) if self.dtypes else None


class RegStatement(NamedTuple):
    """A statement of a .metal file that registers kernels: a base registration macro
    (``REGISTER_UNARY_OP(exp, float, float)``, ``bulk`` False) or an instance of a macro of
    the file that expands to some (``REGISTER_FLOAT_BINARY_OP(hypot)``,
    ``INSTANTIATE_UNARY_KERNELS2(float, int)``, ``bulk`` True)."""

    macro: str
    args: tuple[str, ...]
    line: int
    bulk: bool
    ops: tuple[str, ...]  # the op names it registers, distinct


@dataclass
class HeaderInfo:
    macros: dict[str, MacroDef]
    functors: set[str]
    includes: list[str]


@dataclass
class MetalContext:
    """What a set of includes provides: macros, base registration macros, functors; and the
    macro table of the files that define no macro of their own."""

    macros: dict[str, MacroDef]
    base: set[str]
    functors: set[str]
    table: MacroTable
    # function-like macros of the includes whose expansion defines a functor
    # (``DEFINE_UNARY_FLOATING_FUNCTOR(erf);`` makes ``erf_functor``), and a pattern of their calls
    functor_macros: frozenset[str] = frozenset()
    functor_calls: re.Pattern | None = None


class MetalFile:
    """A .metal file's functors and registration statements; registrations on demand.

    The file's own ``#define``s are kept as found (:class:`RawDefine`); they become
    :class:`MacroDef`\\ s, and the file a macro table of its own, only when a statement or a
    rule needs them (most kernel files' macros instantiate templates: never)."""

    def __init__(self, path: str, text: str, lines: Lines, own_raw: dict[str, RawDefine], ctx: MetalContext,
                 memo: dict, needs_memo: dict[tuple[str, int], bool]):
        self.path = path
        self.text = text
        self.functors: dict[str, int] = {}  # functors defined in the file (and its macro instances) -> line
        self.header_functors = ctx.functors  # functors its includes define
        self.statements: list[RegStatement] = []
        self.base = ctx.base - own_raw.keys() if own_raw else ctx.base
        self.own_raw = own_raw
        self._lines = lines
        self._ctx = ctx
        self._memo = memo  # shared by the files of a run (nothing here refers to the Index: no cycle)
        self._own: dict[str, MacroDef] | None = None if own_raw else {}
        self._table: MacroTable | None = None if own_raw else ctx.table
        self._inert: dict[str, bool] = {}
        self._split: list[str] | None = None
        self._body_lines: dict[tuple[str, str], int | None] = {}
        self._needs: dict[str, bool] = {}
        self._needs_memo = needs_memo
        self.ops: dict[str, list[int]] = {}  # op -> indices of the statements registering it

    def add(self, st: RegStatement) -> None:
        i = len(self.statements)
        self.statements.append(st)
        for op in st.ops:
            self.ops.setdefault(op, []).append(i)

    @property
    def own(self) -> dict[str, MacroDef]:
        if self._own is None:
            self._own = {name: define(d, self._lines) for name, d in self.own_raw.items()}
        return self._own

    @property
    def table(self) -> MacroTable:
        if self._table is None:
            self._table = MacroTable({**self._ctx.macros, **self.own}, stop=self.base, memo=self._memo)
        return self._table

    def all_inert(self) -> bool:
        """Whether no own macro can register or define a functor, decided on their raw texts
        at once (the common case: a kernel file's macros instantiate templates). Without
        comments, a call in a cleaned body is a word before ``(`` in the raw one, line
        continuations aside, which the reversed search steps over."""
        raw = "\n".join(d.raw for d in self.own_raw.values())
        if "/*" in raw or "//" in raw or "##" in raw or "_functor" in raw:
            return False
        for w in _REVERSED_RAW_CALL.findall(raw[::-1]):
            name = w[::-1]
            if name[0] not in _IDENT_START:
                name = _NOT_IDENT_START.sub("", name)
            if name in self.own_raw or name in self._ctx.macros:
                return False
        for name in self.own_raw:
            self._inert[name] = True
        return True

    def inert(self, name: str) -> bool:
        """:meth:`MacroTable.inert` for an own macro, from its text alone."""
        got = self._inert.get(name)
        if got is None:
            body = self.own_raw[name].body()
            got = self._inert[name] = (
                "##" not in body and "_functor" not in body and not calls_a_macro(body, self.own_raw, self._ctx.macros)
            )
        return got

    def expand(self, i: int) -> list[Registration]:
        """The registrations statement ``i`` makes, with the lines the rules report."""
        st = self.statements[i]
        if not st.bulk:
            return [Registration(st.macro, st.args[0], st.args[1:], self.path, st.line, st.line)]
        out = []
        for bm, bargs in self.table.base_calls(st.macro, self.base):
            if not bargs:
                continue
            op = substitute(bargs[0], st.args)
            line = st.line
            if "\x00" not in bargs[0]:  # a bulk macro listing the op in its body
                if (st.macro, op) not in self._body_lines:
                    self._split = self._split or self.text.split("\n")
                    self._body_lines[(st.macro, op)] = _body_line(self._split, self.own, st.macro, op)
                line = self._body_lines[(st.macro, op)] or st.line
            out.append(Registration(bm, op, tuple(substitute(a, st.args) for a in bargs[1:]), self.path, line, st.line, via=st.macro))
        return out

    def expand_all(self, indices: Iterable[int]) -> list[Registration]:
        return [r for i in indices for r in self.expand(i)]

    @property
    def registrations(self) -> list[Registration]:
        """Every registration of the file, in file order (what the rules avoid building)."""
        return self.expand_all(range(len(self.statements)))

    def registrations_of(self, op: str) -> list[Registration]:
        return [r for r in self.expand_all(self.ops.get(op, ())) if r.op == op]

    def needs_functor(self, macro: str) -> bool:
        """Whether registration macro ``macro`` instantiates NAME##_functor."""
        got = self._needs.get(macro)
        if got is None:
            got = self._needs[macro] = needs_functor(macro, self.table.macros, self._needs_memo)
        return got

    def _keys(self, i: int) -> list[tuple]:
        st = self.statements[i]
        if not st.bulk:
            return [(_norm(st.macro), st.args[0], st.args[1:])]
        templates, _ = self.table.key_templates(st.macro, self.base)
        args = st.args
        try:
            return [
                (t.norm, t.op if type(t.op) is str else t.op(args), t.dtypes if type(t.dtypes) is tuple else t.dtypes(args))
                for t in templates
            ]
        except IndexError:  # fewer arguments than parameters: the slow, lenient way
            return [r.key for r in self.expand(i)]

    def may_have_duplicates(self) -> bool:
        """Whether two registrations of the file could share a key. Only statements that
        share an op with another statement (or whose macro could repeat a key itself) are
        looked at, by their keys alone."""
        cands = {i for idx in self.ops.values() if len(idx) > 1 for i in idx}
        for i, st in enumerate(self.statements):
            if st.bulk and i not in cands and self.table.key_templates(st.macro, self.base)[1]:
                cands.add(i)
        if not cands:
            return False
        seen: set[tuple] = set()
        n = 0
        for i in cands:
            keys = self._keys(i)
            seen.update(keys)
            n += len(keys)
            if len(seen) < n:
                return True
        return False


class Index:
    """Everything ``check`` knows about a tree; every file is read at most once."""

    def __init__(self, tree: PytorchTree):
        self.tree = tree
        self.root = tree.root
        self._root_str = str(tree.root)
        self._dirs_inside: dict[str, bool] = {}
        self._headers: dict[str, HeaderInfo | None] = {}
        self._texts: dict[str, str] = {}
        self._sites: dict[str, list[tuple[str, int]]] = {}
        self._includes: dict[tuple[str, str], str | None] = {}
        self._contexts: dict[tuple[int, ...], MetalContext] = {}
        self._needs: dict[tuple[str, int], bool] = {}
        self._safe: dict[str, str] = {}  # listed files known to be inside the tree -> path
        self.yaml_path = NATIVE_FUNCTIONS
        self.rows: list[Row] = scan_rows(self.read(NATIVE_FUNCTIONS))
        host_rel = self._list(MPS_DIR, HOST_SUFFIXES + (".h",))
        self._memo: dict = {}  # macro expansions, by macro text (within this run only)
        self.host_files = [scan_host(p, self.read(p), self._memo) for p in host_rel if p.endswith(HOST_SUFFIXES)]
        self.mps_headers = [p for p in host_rel if p.endswith(".h")]
        self.metal_files = [self._scan_metal(p) for p in self._list(KERNELS_DIR, (".metal",))]
        self.stubs = self._declared_stubs()
        self.common_mps_path = COMMON_MPS if tree.exists(COMMON_MPS) else None

    # -- listing --------------------------------------------------------------------------
    def _walk(self, reldir: str, suffixes: tuple[str, ...]) -> list[tuple[str, os.DirEntry]]:
        """``PytorchTree.list_files(reldir, suffixes, recursive=True)`` (same files, same
        order: a folder's files by name, then its sub-folders by name, dot-folders and
        symlinked folders not entered), with the directory entries, from ``os.scandir``."""
        base = os.path.join(self._root_str, reldir)
        return walk_files(base, reldir, suffixes) if os.path.isdir(base) else []

    def _list(self, reldir: str, suffixes: tuple[str, ...]) -> list[str]:
        """The files to scan under ``reldir``; those plainly inside the tree are remembered
        with their paths, so that reading them needs no resolving (see :meth:`_path`)."""
        found = self._walk(reldir, suffixes)
        if found and self._folder_inside(reldir):
            for rel, e in found:
                if not e.is_symlink():
                    self._safe[rel] = e.path
        return [rel for rel, _ in found]

    def _declared_stubs(self) -> dict[str, tuple[str, int]]:
        """:func:`mpsgen.tree.stubs.declared_stubs` (same result), over one ``os.scandir`` walk."""
        return collect_stubs((rel, e.path) for rel, e in self._walk(NATIVE_DIR, (".h",)))

    # -- reading --------------------------------------------------------------------------
    def _folder_inside(self, folder: str) -> bool:
        inside = self._dirs_inside.get(folder)
        if inside is None:
            real = os.path.realpath(os.path.join(self._root_str, folder))
            inside = self._dirs_inside[folder] = real == self._root_str or real.startswith(self._root_str.rstrip(os.sep) + os.sep)
        return inside

    def _path(self, rel: str) -> str:
        """Absolute path of ``rel``, refusing (as :meth:`PytorchTree.resolve`) one that leaves
        the tree: each folder is resolved once, and only a symlinked file on its own."""
        safe = self._safe.get(rel)
        if safe is not None:
            return safe
        folder = rel.rpartition("/")[0]
        path = os.path.join(self._root_str, rel)
        if ".." in rel.split("/") or not self._folder_inside(folder) or os.path.islink(path):
            return str(self.tree.resolve(rel))
        return path

    def read(self, rel: str) -> str:
        text = self._texts.get(rel)
        if text is None:
            raw = read_bounded(self._path(rel), f"{rel} in {self.root}:")
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                text = None
            if text is None or "\r\n" in text or "<<<<<<<" in text or ">>>>>>>" in text:
                # the error, CRLF handling or conflict-marker refusal of the tree scanners
                text = SourceFile.from_bytes(rel, raw).text
            self._texts[rel] = text
        return text

    def text(self, rel: str) -> str | None:
        return self._texts.get(rel)

    def mps_texts(self) -> list[tuple[str, str]]:
        """Host sources and headers under mps/ (for "is this name used anywhere")."""
        out = [(h.path, h.text) for h in self.host_files]
        for p in self.mps_headers:
            out.append((p, self.read(p)))
        return out

    def code_sites(self, name: str) -> list[tuple[str, int]]:
        """``(path, line)`` of every use of the identifier ``name`` in the code of the MPS
        sources (host files, mps/ headers, .metal files): the whole identifier (``std_mps``
        is not in ``std::string``), not in a comment or a string literal."""
        sites = self._sites.get(name)
        if sites is None:
            sites = self._sites[name] = []
            pattern = None
            for rel, text in self._code_texts():
                if name not in text:
                    continue
                pattern = pattern or re.compile(rf"(?<!\w){re.escape(name)}(?!\w)")
                lines = None
                for m in pattern.finditer(text):
                    lines = lines or Lines(text)
                    start = m.start()
                    before = text[lines.line_start(start) : start]
                    if lines.commented(start) or before.count('"') % 2:
                        continue
                    sites.append((rel, lines.line(start)))
        return sites

    def _code_texts(self) -> list[tuple[str, str]]:
        return [(h.path, h.text) for h in self.host_files] + [(p, self.read(p)) for p in self.mps_headers] + [
            (m.path, m.text) for m in self.metal_files
        ]

    def paired(self, rel: str) -> str | None:
        """The host file of a kernel file and back, by the tree's convention of one stem:
        ``kernels/UnaryKernel.metal`` <-> ``operations/UnaryKernel.mm`` (None if absent)."""
        stem, _, ext = rel.rpartition("/")[2].rpartition(".")
        if ext == "metal":
            other = f"{OPERATIONS_DIR}/{stem}.mm"
            return other if any(h.path == other for h in self.host_files) else None
        if ext == "mm":
            other = f"{KERNELS_DIR}/{stem}.metal"
            return other if any(m.path == other for m in self.metal_files) else None
        return None

    def _resolve_include(self, name: str, from_path: str) -> str | None:
        key = (name, os.path.dirname(from_path))
        if key not in self._includes:
            found = None
            for cand in (name, f"aten/src/{name}", os.path.normpath(os.path.join(key[1], name)).replace(os.sep, "/")):
                if not cand.startswith("..") and os.path.isfile(os.path.join(self._root_str, cand)):
                    found = cand
                    break
            self._includes[key] = found
        return self._includes[key]

    def _header(self, rel: str) -> HeaderInfo | None:
        if rel in self._headers:
            return self._headers[rel]
        self._headers[rel] = None  # include cycles
        text = self.read(rel)
        macros, _ = scan_defines(text, Lines(text))
        functors = set()
        if "_functor" in text:
            for m in _FUNCTOR_ANY_FAST.finditer(text):
                before = text[m.start() - 1 : m.start()]
                if not (before.isalnum() or before == "_"):  # \b: a word starts there
                    functors.add(m.group(1))
        includes = [r for r in (self._resolve_include(n, rel) for n in _INCLUDE.findall(text)) if r]
        info = HeaderInfo(macros, functors, includes)
        self._headers[rel] = info
        return info

    def _included(self, path: str, text: str) -> list[HeaderInfo]:
        seen: set[str] = set()
        todo = [r for r in (self._resolve_include(n, path) for n in _INCLUDE.findall(text)) if r]
        infos = []
        while todo:
            rel = todo.pop(0)
            if rel in seen or rel.endswith(".metal"):
                continue
            seen.add(rel)
            info = self._header(rel)
            if info is not None:
                infos.append(info)
                todo += info.includes
        return infos

    def _metal_context(self, headers: list[HeaderInfo]) -> MetalContext:
        """What the given includes provide; built once per distinct set of includes."""
        key = tuple(id(h) for h in headers)
        ctx = self._contexts.get(key)
        if ctx is None:
            macros: dict[str, MacroDef] = {}
            functors: set[str] = set()
            for h in headers:
                macros.update(h.macros)
                functors |= h.functors
            base = {n for n, d in macros.items() if n.startswith("REGISTER_") and d.params and d.params[0] == "NAME"}
            table = MacroTable(macros, stop=base, memo=self._memo)
            defining = frozenset(
                n for n, d in macros.items() if d.params is not None and n not in base and "_functor" in d.body and table.findall(n, _FUNCTOR_ANY)
            )
            calls = re.compile(r"\n(" + "|".join(sorted(defining)) + r")[ \t]*(\()") if defining else None
            ctx = self._contexts[key] = MetalContext(macros, base, functors, table, defining, calls)
        return ctx

    def _scan_metal(self, path: str) -> MetalFile:
        text = self.read(path)
        lines = Lines(text)
        own, macro_spans = raw_defines(text, lines)
        headers = self._included(path, text)
        if not headers and self.tree.exists(INDEXING_HEADER):
            info = self._header(INDEXING_HEADER)
            headers = [info] if info else []
        ctx = self._metal_context(headers)
        mf = MetalFile(path, text, lines, own, ctx, self._memo, self._needs)
        base = mf.base

        functors = mf.functors
        if "_functor" in text:
            for m in _FUNCTOR.finditer(text):
                start = lines.line_start(m.start())
                fm = _FUNCTOR_LINE.match(text, start)
                if fm and fm.end() == m.end() and not _inside(macro_spans, start) and not lines.commented(start):
                    functors.setdefault(fm.group(1) or fm.group(2), lines.line(start))
        comments = bool(lines.comments)
        # statements of the file's own macros count only if such a macro can register (or
        # define a functor); otherwise only REGISTER_* lines are looked at
        pattern = _REGISTER_CALL0
        if own and not mf.all_inert():
            for name in own:
                if not name.startswith("REGISTER_") and _UPPER_NAME.match(name) and not mf.inert(name):
                    pattern = _UPPER_CALL0
                    break
        for m in pattern.finditer("\n" + text):
            name = m.group(1)
            if name in base:
                pass
            elif name in own:
                if mf.inert(name):
                    continue
            elif not name.startswith("REGISTER_"):
                continue
            start = m.start()  # in text: the statement starts its line
            if (macro_spans and _inside(macro_spans, start)) or (comments and lines.in_block_comment(start)):
                continue
            arglist = m.group(3)
            if arglist is None:  # parentheses inside, or none closing
                st = _statement_at(text, lines, name, m.start(2) - 1, start)
                if st is None:
                    continue
                args, line = st.args, st.line
            else:  # what _statement_at does, inline
                close = m.end() - 2
                rest = text[close + 1 : close + 41].lstrip(" \t")
                if rest and not rest.startswith((";", "\n", "//", "\r")):
                    continue  # a definition or declaration, not a statement
                args, line = tuple(fast_split_args(arglist)), lines.line(start)
            if not args:
                continue
            if name in base:
                mf.add(RegStatement(name, args, line, False, (args[0],)))
                continue
            if name not in own:
                if not base and name.endswith("_OP"):
                    # no registration header in sight: take REGISTER_*_OP at its word
                    mf.add(RegStatement(name, args, line, False, (args[0],)))
                continue
            st = Statement(name, args, line)
            table = mf.table
            getters, varying = table.op_getters(name, base)
            if getters:
                if varying:
                    try:
                        ops = tuple(dict.fromkeys(g if type(g) is str else g(st.args) for g in getters))
                    except IndexError:
                        ops = tuple(dict.fromkeys(r.op for r in _expand_ops(table, name, base, st.args)))
                else:
                    ops = tuple(getters)
                mf.add(RegStatement(name, st.args, st.line, True, ops))
            if "_functor" in (table.text(name) or ""):
                for (fn,) in table.findall(name, _FUNCTOR_ANY):
                    functors.setdefault(substitute(fn, st.args), st.line)
        if ctx.functor_calls is not None:
            # instances of the includes' functor-defining macros (a macro of the file's own
            # by the same name shadows it, and was handled above)
            for m in ctx.functor_calls.finditer("\n" + text):
                name = m.group(1)
                start = m.start()
                if name in own or (macro_spans and _inside(macro_spans, start)) or (comments and lines.in_block_comment(start)):
                    continue
                st = _statement_at(text, lines, name, m.start(2) - 1, start)
                if st is None or not st.args:
                    continue
                for (fn,) in mf.table.findall(name, _FUNCTOR_ANY):
                    functors.setdefault(substitute(fn, st.args), st.line)
        return mf


def needs_functor(name: str, macros: dict[str, MacroDef], memo: dict[tuple[str, int], bool], depth: int = 0) -> bool:
    """Whether a registration macro instantiates ``NAME##_functor`` (directly or through
    the macros it calls with NAME); a macro nobody defines is taken to."""
    d = macros.get(name)
    if d is None:
        return True
    key = (name, id(d))
    if key in memo:
        return memo[key]
    result = False
    if d.params and depth <= MAX_EXPANSION_DEPTH:
        p0 = d.params[0]
        if re.search(rf"\b{re.escape(p0)}\s*##\s*_functor", d.body):
            result = True
        else:
            for inner, inner_args in parse_calls(d.body):
                if inner in macros and inner_args and inner_args[0] == p0 and needs_functor(inner, macros, memo, depth + 1):
                    result = True
                    break
    memo[key] = result
    return result


class _Op(NamedTuple):
    op: str


def _expand_ops(table: MacroTable, name: str, base: set[str], args: tuple[str, ...]) -> list[_Op]:
    return [_Op(substitute(bargs[0], args)) for _, bargs in table.base_calls(name, base) if bargs]


def _body_line(text_lines: list[str], macros: dict[str, MacroDef], macro: str, op: str, depth: int = 0) -> int | None:
    """1-based line, inside the definition of ``macro`` (or a file macro it uses), naming ``op``."""
    d = macros.get(macro)
    if d is None or depth > MAX_EXPANSION_DEPTH:
        return None
    pat = re.compile(rf"(?<!\w){re.escape(op)}(?!\w)")
    for i in range(d.start_line, min(d.end_line + 1, len(text_lines))):
        if pat.search(text_lines[i]):
            return i + 1
    for inner, _ in parse_calls(d.body):
        if inner in macros and inner != macro:
            found = _body_line(text_lines, macros, inner, op, depth + 1)
            if found:
                return found
    return None
