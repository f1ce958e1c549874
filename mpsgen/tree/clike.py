"""A fast reader of C-like sources (``.mm``, ``.cpp``, ``.metal``, ``.h``): line numbers,
comments, ``#define``s, top-level macro statements, and macro expansion with placeholders.

It is the lexical layer under :mod:`mpsgen.tree.host` (host facts of ``.mm``/``.cpp``
files) and :mod:`mpsgen.tree.kernels` (registrations and functors of ``.metal`` files),
which ``check``, ``explain`` and the edits' scanners (:mod:`mpsgen.tree.mm`,
:mod:`mpsgen.tree.metal`) read. PyTorch's sources are clang-formatted (top-level
statements start in column 0), so it searches for literals with regular expressions at C
speed and does the Python checks (line start, comments, ``#define`` bodies) only at the few
matches. Lines are 1-based unless a name says otherwise.
"""

from __future__ import annotations

import bisect
import re
from operator import itemgetter
from collections.abc import Callable, Iterable

from typing import NamedTuple
from mpsgen.tree.source import close_bracket, split_args

_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_LINE_COMMENT = re.compile(r"//[^\n]*")
_DEFINE = re.compile(r"#[ \t]*define[ \t]+([A-Za-z_]\w*)(\(([^)]*)\))?((?:[^\n]*\\\n)*[^\n]*)")
# in a reversed text: "(", blanks, and the (reversed) word before them
_REVERSED_CALL = re.compile(r"\(\s*(\w+)")
REVERSED_RAW_CALL = re.compile(r"\([\s\\]*(\w+)")
IDENT_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
NOT_IDENT_START = re.compile(r"^[^A-Za-z_]+")
_PLACEHOLDER = re.compile(r"\x00(\d+)\x00")
_PURE_PLACEHOLDER = re.compile(r"\x00(\d+)\x00\Z")
MAX_EXPANSION_DEPTH = 8


_STRINGIZE = re.compile(r"(?<!#)#\s*([A-Za-z_]\w*)")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_PASTE = re.compile(r"\s*##\s*")


def _identifiers(names: tuple[str, ...]) -> re.Pattern:
    """The whole identifiers ``names`` (as ``\\b([A-Za-z_]\\w*)\\b`` tokenises a body),
    compiled once per parameter list (re's cache)."""
    return re.compile(r"(?<![\w])(" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)) + r")(?![\w])")


class MacroDef(NamedTuple):
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
        if "#" in body:  # stringize #P (but not ##)
            body = _STRINGIZE.sub(lambda m: f'"{values[m.group(1)]}"' if m.group(1) in values else m.group(0), body)
        names = tuple(n for n in values if _IDENTIFIER.fullmatch(n))  # not "..."
        if names:  # each whole identifier that is a parameter (one search for them all)
            body = _identifiers(names).sub(lambda m: values[m.group(1)], body)
        return _PASTE.sub("", body) if "##" in body else body



_CALL = re.compile(r"([A-Za-z_]\w*)\s*\(")
_BRACKETS = re.compile(r"[()\[\]{}<>]")


def close_paren(text: str, open_pos: int) -> int:
    """Offset of the ``)`` closing the ``(`` at ``open_pos`` (-1 if none)."""
    return close_bracket(text, open_pos)


def parse_calls(body: str) -> list[tuple[str, list[str]]]:
    """``A(x, y); B(z)`` -> [("A", ["x", "y"]), ("B", ["z"])] (top-level calls only).
    Parentheses are matched and plain argument lists split by C-speed searches: ``check``
    runs this over every macro body of a PyTorch-sized tree."""
    out = []
    pos = 0
    while True:
        m = _CALL.search(body, pos)
        if not m:
            return out
        j = close_paren(body, m.end() - 1)
        if j < 0:
            j = len(body)
        inner = body[m.end() : j]
        if _BRACKETS.search(inner):
            args = split_args(inner)
        else:
            args = [a.strip() for a in inner.split(",")] if inner.strip() else []
        out.append((m.group(1), args))
        pos = j + 1


class Lines:
    """1-based line numbers of offsets (counted incrementally: queries mostly ascend), and
    the comments to ignore."""

    def __init__(self, text: str):
        self.text = text
        self._pos = 0
        self._line = 1
        # one regex pass (a ``"/*" in text`` test first would be a second: two-character
        # substring searches scan at a third of a regex's speed when the text has none)
        self.comments: list[tuple[int, int]] = [m.span() for m in _BLOCK_COMMENT.finditer(text)]
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
    new, rfind, commented = tuple.__new__, text.rfind, lines.in_block_comment  # (RawDefine's own __new__ is Python)
    starts, ends = spans.starts, spans.ends
    for m in _DEFINE.finditer(text):
        start = m.start()
        line_start = rfind("\n", 0, start) + 1
        if line_start != start and text[line_start:start].strip():
            continue  # not at the start of its line
        if commented(start):
            continue
        end = m.end()
        starts.append(start)  # spans.add
        ends.append(end)
        name, has_params, params, body = m.group(1, 2, 3, 4)
        found[name] = new(RawDefine, (name, params if has_params is not None else None, body, start, end))
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
        if name[0] not in IDENT_START:
            name = NOT_IDENT_START.sub("", name)
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


def inside_spans(spans: Spans, offset: int) -> bool:
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


def statement_at(text: str, lines: Lines, name: str, open_pos: int, start: int) -> Statement | None:
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
    find, rfind = text.find, text.rfind
    for name in names:
        # the matches of NAME[ \t]*\( (a regex compiled per name would cost more than the search)
        start = find(name)
        while start >= 0:
            paren = start + len(name)
            while text[paren : paren + 1] in (" ", "\t"):
                paren += 1
            if text[paren : paren + 1] != "(":
                start = find(name, start + 1)
                continue
            line_start = rfind("\n", 0, start) + 1
            if (line_start == start or not text[line_start:start].strip()) and not (
                inside_spans(macro_spans, start) or lines.in_block_comment(start)
            ):
                st = statement_at(text, lines, name, paren, start)
                if st:
                    out.append(st)
            start = find(name, paren + 1)
    out.sort(key=lambda s: s.line)
    return out


# -- macro expansion ----------------------------------------------------------------------
def registration_stem(macro: str) -> str:
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
            calls = [(registration_stem(bm), bargs[0], list(bargs[1:])) for bm, bargs in self.base_calls(name, base) if bargs]
            templates = [KeyTemplate(n, _getter(op), _tuple_getter(dts)) for n, op, dts in calls]
            got = self._keys[name] = (templates, _may_collide(calls))
        return got

    def findall(self, name: str, pattern: re.Pattern | ReversedPattern) -> list:
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
                    found = self._memo[mkey] = (
                        pattern.groups_in(text) if isinstance(pattern, ReversedPattern) else [m.groups() for m in pattern.finditer(text)]
                    )
            self._found[key] = found
        return found


class ReversedPattern:
    """A pattern whose one literal comes last (``word ( ... ) {``), searched in the reversed
    text from that literal (a C-speed search) instead of tried at every offset: on macro
    expansions that was ~150 us a KB. :meth:`groups_in` gives what ``re.findall`` of the
    forward pattern gives (groups turned back, in text order; a test holds them equal)."""

    __slots__ = ("_reversed", "pattern")

    def __init__(self, forward: str, reversed_pattern: str):
        self.pattern = forward  # what it stands for (and the key of memoised searches)
        self._reversed = re.compile(reversed_pattern)

    def groups_in(self, text: str) -> list[tuple]:
        found = [tuple(g[::-1] if g is not None else None for g in m.groups()) for m in self._reversed.finditer(text[::-1])]
        found.reverse()
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


def expand_ops(table: MacroTable, name: str, base: set[str], args: tuple[str, ...]) -> list[_Op]:
    return [_Op(substitute(bargs[0], args)) for _, bargs in table.base_calls(name, base) if bargs]


def _has_word(line: str, word: str) -> bool:
    """Whether ``word`` is in ``line`` as a whole word (what a ``(?<!\\w)word(?!\\w)`` search
    finds, without compiling a pattern per word)."""
    at = line.find(word)
    while at >= 0:
        before, after = line[at - 1 : at] if at else "", line[at + len(word) : at + len(word) + 1]
        if not (before and (before.isalnum() or before == "_")) and not (after and (after.isalnum() or after == "_")):
            return True
        at = line.find(word, at + 1)
    return False


def body_line(text_lines: list[str], macros: dict[str, MacroDef], macro: str, op: str, depth: int = 0) -> int | None:
    """1-based line, inside the definition of ``macro`` (or a file macro it uses), naming ``op``."""
    d = macros.get(macro)
    if d is None or depth > MAX_EXPANSION_DEPTH:
        return None
    for i in range(d.start_line, min(d.end_line + 1, len(text_lines))):
        if _has_word(text_lines[i], op):
            return i + 1
    for inner, _ in parse_calls(d.body):
        if inner in macros and inner != macro:
            found = body_line(text_lines, macros, inner, op, depth + 1)
            if found:
                return found
    return None
