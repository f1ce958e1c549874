"""Kernel facts of ``.metal`` files, as ``check``, ``explain`` and the edits read them: the
``<op>_functor`` structs a file defines (literal, or made by a macro of its own or of a
header it includes, such as ``DEFINE_UNARY_FLOATING_FUNCTOR(erf);``), and its registration
statements (``REGISTER_*_OP(op, ...)`` lines and instances of the file's bulk macros) with
the ops each registers; the (op, dtypes) registrations they expand to are built on demand
(:meth:`MetalFile.expand`). What a set of includes provides (macros, base registration
macros, functors) is a :class:`MetalContext`, built from :func:`scan_header` of each.
Lines are 1-based.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from typing import NamedTuple
from mpsgen.tree.clike import (
    IDENT_START,
    NOT_IDENT_START,
    REVERSED_RAW_CALL,
    Lines,
    MacroTable,
    RawDefine,
    body_line,
    expand_ops,
    inside_spans,
    registration_stem,
    statement_at,
    calls_a_macro,
    define,
    fast_split_args,
    needs_functor,
    raw_defines,
    scan_defines,
    substitute,
)
from mpsgen.tree.clike import MacroDef
from mpsgen.tree.dtypes import TORCH_DTYPES
from mpsgen.tree.functors import FunctorStruct, scan_functors

_INCLUDE = re.compile(r'#[ \t]*include[ \t]*[<"]([^>"]+)[>"]')
# searched in "\n" + text (a literal first: C speed); group 3 is the argument list when it
# holds no parenthesis (the common case, else statement_at walks it)
_UPPER_CALL0 = re.compile(r"\n([A-Z_][A-Z0-9_]*)[ \t]*(\()(?:([^()]*)\))?")
# the same, for a file whose own uppercase macros cannot register: only REGISTER_* can
_REGISTER_CALL0 = re.compile(r"\n(REGISTER_[A-Z0-9_]*)[ \t]*(\()(?:([^()]*)\))?")
_UPPER_NAME = re.compile(r"[A-Z_][A-Z0-9_]*\Z")
_FUNCTOR = re.compile(r"_functor\b")
_FUNCTOR_LINE = re.compile(r"(?:struct|class)[ \t]+(\w+)_functor\b(?![ \t]*;)|using[ \t]+(\w+)_functor[ \t]*=")
_FUNCTOR_ANY = re.compile(r"\b(?:struct|class)\s+([\w\x00]+)_functor\b(?!\s*;)")
# the same, searched from its literal alternatives (fast), the word boundary checked after
_FUNCTOR_ANY_FAST = re.compile(r"(?:struct|class)\s+([\w\x00]+)_functor\b(?!\s*;)")


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
        return (registration_stem(self.macro), self.op, self.dtypes)

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


class HeaderInfo(NamedTuple):
    macros: dict[str, MacroDef]
    functors: set[str]
    includes: list[str]


class MetalContext(NamedTuple):
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
        self._structs: list[FunctorStruct] | None = None
        self._expanded: dict[int, list[Registration]] = {}

    @property
    def functor_structs(self) -> list[FunctorStruct]:
        """The functor structs written out in the file, with their ``operator()`` overloads
        (:func:`mpsgen.tree.functors.scan_functors`), read on first use."""
        if self._structs is None:
            self._structs = scan_functors(self.text) if "_functor" in self.text else []
        return self._structs

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
        for w in set(REVERSED_RAW_CALL.findall(raw[::-1])):  # each word once (bodies repeat them)
            name = w[::-1]
            if name[0] not in IDENT_START:
                name = NOT_IDENT_START.sub("", name)
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
        """The registrations statement ``i`` makes, with the lines the rules report (a bulk
        statement is expanded once, however many of its ops are asked for)."""
        st = self.statements[i]
        if not st.bulk:
            return [Registration(st.macro, st.args[0], st.args[1:], self.path, st.line, st.line)]
        out = self._expanded.get(i)
        if out is not None:
            return out
        out = self._expanded[i] = []
        for bm, bargs in self.table.base_calls(st.macro, self.base):
            if not bargs:
                continue
            op = substitute(bargs[0], st.args)
            line = st.line
            if "\x00" not in bargs[0]:  # a bulk macro listing the op in its body
                if (st.macro, op) not in self._body_lines:
                    self._split = self._split or self.text.split("\n")
                    self._body_lines[(st.macro, op)] = body_line(self._split, self.own, st.macro, op)
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
            return [(registration_stem(st.macro), st.args[0], st.args[1:])]
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


def include_names(text: str) -> list[str]:
    """The names a file ``#include``s, in order (``c10/metal/indexing.h``)."""
    return _INCLUDE.findall(text)


def scan_header(text: str, includes: list[str]) -> HeaderInfo:
    """A header's macros and functors; ``includes`` are its includes, resolved in the tree."""
    macros, _ = scan_defines(text, Lines(text))
    functors = set()
    if "_functor" in text:
        for m in _FUNCTOR_ANY_FAST.finditer(text):
            before = text[m.start() - 1 : m.start()]
            if not (before.isalnum() or before == "_"):  # \b: a word starts there
                functors.add(m.group(1))
    return HeaderInfo(macros, functors, includes)


def metal_context(headers: list[HeaderInfo], memo: dict) -> MetalContext:
    """What the given includes provide (``memo``: macro expansions shared within a run)."""
    macros: dict[str, MacroDef] = {}
    functors: set[str] = set()
    for h in headers:
        macros.update(h.macros)
        functors |= h.functors
    base = {n for n, d in macros.items() if n.startswith("REGISTER_") and d.params and d.params[0] == "NAME"}
    table = MacroTable(macros, stop=base, memo=memo)
    defining = frozenset(
        n for n, d in macros.items() if d.params is not None and n not in base and "_functor" in d.body and table.findall(n, _FUNCTOR_ANY)
    )
    calls = re.compile(r"\n(" + "|".join(sorted(defining)) + r")[ \t]*(\()") if defining else None
    return MetalContext(macros, base, functors, table, defining, calls)


def scan_kernel_file(path: str, text: str, ctx: MetalContext, memo: dict, needs_memo: dict) -> MetalFile:
    """A ``.metal`` file's functors and registration statements, its includes being ``ctx``
    (``memo``/``needs_memo``: expansions and :func:`needs_functor` answers shared in a run)."""
    lines = Lines(text)
    own, macro_spans = raw_defines(text, lines)
    mf = MetalFile(path, text, lines, own, ctx, memo, needs_memo)
    base = mf.base

    functors = mf.functors
    if "_functor" in text:
        for m in _FUNCTOR.finditer(text):
            start = lines.line_start(m.start())
            fm = _FUNCTOR_LINE.match(text, start)
            if fm and fm.end() == m.end() and not inside_spans(macro_spans, start) and not lines.commented(start):
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
    new = tuple.__new__  # RegStatement without its Python-level __new__ (thousands in a tree)
    statements, ops_at = mf.statements, mf.ops
    defines_functors: dict[str, bool] = {}  # own macro -> whether its expansion names a functor
    line_of = lines.line
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
        if (macro_spans and inside_spans(macro_spans, start)) or (comments and lines.in_block_comment(start)):
            continue
        arglist = m.group(3)
        if arglist is None:  # parentheses inside, or none closing
            st = statement_at(text, lines, name, m.start(2) - 1, start)
            if st is None:
                continue
            args, line = st.args, st.line
        else:  # what statement_at does, inline
            close = m.end() - 2
            rest = text[close + 1 : close + 41].lstrip(" \t")
            if rest and not rest.startswith((";", "\n", "//", "\r")):
                continue  # a definition or declaration, not a statement
            args, line = tuple(fast_split_args(arglist)), line_of(start)
        if not args:
            continue
        if name in base or name not in own:
            if name in base or (not base and name.endswith("_OP")):
                # (no registration header in sight: REGISTER_*_OP is taken at its word)
                ops_at.setdefault(args[0], []).append(len(statements))  # what mf.add does
                statements.append(new(RegStatement, (name, args, line, False, (args[0],))))
            continue
        table = mf.table
        getters, varying = table.op_getters(name, base)
        if getters:
            if varying:
                try:
                    ops = tuple(dict.fromkeys(g if type(g) is str else g(args) for g in getters))
                except IndexError:
                    ops = tuple(dict.fromkeys(r.op for r in expand_ops(table, name, base, args)))
            else:
                ops = tuple(getters)
            mf.add(new(RegStatement, (name, args, line, True, ops)))
        names_functor = defines_functors.get(name)
        if names_functor is None:
            names_functor = defines_functors[name] = "_functor" in (table.text(name) or "")
        if names_functor:
            for (fn,) in table.findall(name, _FUNCTOR_ANY):
                functors.setdefault(substitute(fn, args), line)
    if ctx.functor_calls is not None:
        # instances of the includes' functor-defining macros (a macro of the file's own
        # by the same name shadows it, and was handled above)
        for m in ctx.functor_calls.finditer("\n" + text):
            name = m.group(1)
            start = m.start()
            if name in own or (macro_spans and inside_spans(macro_spans, start)) or (comments and lines.in_block_comment(start)):
                continue
            st = statement_at(text, lines, name, m.start(2) - 1, start)
            if st is None or not st.args:
                continue
            for (fn,) in mf.table.findall(name, _FUNCTOR_ANY):
                functors.setdefault(substitute(fn, st.args), st.line)
    return mf
