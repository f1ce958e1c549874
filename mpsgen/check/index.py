"""Read the parts of a tree that ``mpsgen check`` cross-references, once and fast.

The tree scanners of :mod:`mpsgen.tree` lex every character in Python (exact, and fine
for the few files ``new-op`` edits); ``check`` reads ~200 C-like files per run, so this
module finds the same facts with line-anchored regular expressions over the raw text
(PyTorch's sources are clang-formatted: top-level statements start in column 0) and
only walks characters inside the short argument lists it needs. Macro instances are
expanded with the tree's own ``#define``s (:meth:`mpsgen.tree.metal.MacroDef.expand`,
:func:`mpsgen.registrations.parse_calls`), so helper, bulk and functor-defining macros
count like literal text. Lines are 1-based.
"""

from __future__ import annotations

import bisect
import os
import re
from dataclasses import dataclass, field
from typing import Iterable, NamedTuple

from mpsgen.errors import BadInput
from mpsgen.registrations import TORCH_DTYPES, parse_calls
from mpsgen.tree import COMMON_MPS, INDEXING_HEADER, KERNELS_DIR, NATIVE_FUNCTIONS, PytorchTree
from mpsgen.tree.metal import MacroDef
from mpsgen.tree.native_yaml import NativeFunctions, scan_native_functions
from mpsgen.tree.source import SourceFile, split_args
from mpsgen.tree.stubs import declared_stubs

MPS_DIR = "aten/src/ATen/native/mps"
HOST_SUFFIXES = (".mm", ".cpp")

_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_LINE_COMMENT = re.compile(r"//[^\n]*")
_DEFINE = re.compile(r"#[ \t]*define[ \t]+([A-Za-z_]\w*)(\(([^)]*)\))?((?:[^\n]*\\\n)*[^\n]*)")
_INCLUDE = re.compile(r'#[ \t]*include[ \t]*[<"]([^>"]+)[>"]')
_UPPER_CALL0 = re.compile(r"\n([A-Z_][A-Z0-9_]*)[ \t]*\(")
_PAREN = re.compile(r"[()]")
_REGISTER_DISPATCH = re.compile(r"REGISTER_DISPATCH[ \t]*\(")
_IMPL = re.compile(r"TORCH_IMPL_FUNC[ \t]*\([ \t]*(\w+)[ \t]*\)")
_MPS_NAME = re.compile(r"mps\w*[ \t]*\(")
_WORD_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"
_STATIC_FN = re.compile(r"static[ \t]+(?:inline[ \t]+)?void[ \t]+(\w+)[ \t]*\(")
_EXEC = re.compile(r"exec_(unary|binary|ternary)_kernel[ \t]*\(\s*[\w.\->*&()]*?\s*,\s*\"([^\"\n]*)\"")
_FUNCTOR = re.compile(r"_functor\b")
_FUNCTOR_LINE = re.compile(r"(?:struct|class)[ \t]+(\w+)_functor\b(?![ \t]*;)|using[ \t]+(\w+)_functor[ \t]*=")
_FUNCTOR_ANY = re.compile(r"\b(?:struct|class)\s+([\w\x00]+)_functor\b(?!\s*;)")
_EXPANDED_DISPATCH = re.compile(r"REGISTER_DISPATCH\s*\(\s*([\w\x00]+)\s*,\s*&?\s*([\w\x00]+)")
_EXPANDED_IMPL = re.compile(r"TORCH_IMPL_FUNC\s*\(\s*([\w\x00]+)\s*\)")
_EXPANDED_DEF = re.compile(r"([\w\x00]+)\s*\([^()]*\)\s*(?:const\s*)?\{")
_EXPANDED_EXEC = re.compile(r"exec_(unary|binary|ternary)_kernel\s*\(\s*[\w.\->*&()]*?\s*,\s*\"([^\"]*)\"")
_PLACEHOLDER = re.compile(r"\x00(\d+)\x00")
_BODY_FOLLOWS = re.compile(r"\s*(?:(?:const|override|noexcept|final)\b\s*)*(?:->[^{;]*)?\{")
_NOT_A_DEFINITION = re.compile(r"[(=;,{}.]|->|\breturn\b|^\s|^#|^//")
_KEYWORDS = frozenset({"if", "for", "while", "switch", "return", "sizeof", "catch", "TORCH_IMPL_FUNC", "defined"})
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

    def commented(self, offset: int) -> bool:
        """In a block comment, or after ``//`` on its line."""
        if self.comments:
            i = bisect.bisect_right(self._comment_starts, offset) - 1
            if i >= 0 and offset < self.comments[i][1]:
                return True
        return "//" in self.text[self.line_start(offset) : offset]

    def at_line_start(self, offset: int) -> bool:
        """Only blanks before ``offset`` on its line."""
        return not self.text[self.line_start(offset) : offset].strip()


def close_paren(text: str, open_pos: int) -> int:
    depth = 0
    for m in _PAREN.finditer(text, open_pos):
        if m.group() == "(":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return m.start()
    return -1


def _clean_body(raw: str) -> str:
    raw = _BLOCK_COMMENT.sub(" ", raw)
    parts = [_LINE_COMMENT.sub("", ln).rstrip().rstrip("\\") for ln in raw.split("\n")]
    return " ".join(p.strip() for p in parts).strip()


def scan_defines(text: str, lines: Lines) -> tuple[dict[str, MacroDef], list[tuple[int, int]]]:
    """``#define``s as :class:`MacroDef` (0-based lines, as the tree scanners keep them) and
    the offset spans they cover."""
    macros: dict[str, MacroDef] = {}
    spans: list[tuple[int, int]] = []
    if "define" not in text:
        return macros, spans
    for m in _DEFINE.finditer(text):
        if not lines.at_line_start(m.start()) or lines.commented(m.start()):
            continue
        first = lines.line(m.start())
        last = lines.line(m.end())
        spans.append((m.start(), m.end()))
        params = None
        if m.group(2) is not None:
            params = tuple(p.strip() for p in m.group(3).split(",")) if m.group(3).strip() else ()
        macros[m.group(1)] = MacroDef(m.group(1), params, _clean_body(m.group(4)), first - 1, last - 1)
    return macros, spans


def _inside(spans: list[tuple[int, int]], offset: int) -> bool:
    """Whether ``offset`` is in one of the sorted, disjoint ``spans``."""
    if not spans:
        return False
    i = bisect.bisect_right(spans, (offset, float("inf"))) - 1
    return i >= 0 and offset < spans[i][1]


def fast_split_args(arglist: str) -> list[str]:
    if "(" in arglist or "<" in arglist or "[" in arglist or "{" in arglist:
        return split_args(arglist)
    return [a.strip() for a in arglist.split(",")] if arglist.strip() else []


@dataclass(frozen=True)
class Statement:
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


def find_statements(text: str, lines: Lines, names: Iterable[str], macro_spans: list[tuple[int, int]]) -> list[Statement]:
    """Instances of the given macros at the start of a line, outside ``#define``s."""
    out = []
    for name in names:
        if name not in text:
            continue
        for m in re.finditer(rf"(?<![\w#]){re.escape(name)}[ \t]*\(", text):
            if lines.at_line_start(m.start()) and not _inside(macro_spans, m.start()) and not lines.commented(m.start()):
                st = _statement_at(text, lines, name, m.end() - 1, m.start())
                if st:
                    out.append(st)
    out.sort(key=lambda s: s.line)
    return out


class MacroTable:
    """A file's macros, each expanded once with placeholders for its parameters, so that an
    instance costs one substitution instead of a re-expansion."""

    def __init__(self, macros: dict[str, MacroDef], stop: set[str] = frozenset()):
        self.macros = macros
        self.stop = stop
        self._text: dict[str, str | None] = {}
        self._calls: dict[str, list[tuple[str, list[str]]]] = {}
        self._found: dict[tuple[str, str], list] = {}

    def _placeholders(self, d: MacroDef) -> list[str]:
        return [f"\x00{i}\x00" for i in range(len(d.params or ()))]

    def text(self, name: str, depth: int = 0) -> str | None:
        """The full expansion of ``name`` (nested known macros expanded too), in placeholders."""
        if name in self._text:
            return self._text[name]
        d = self.macros.get(name)
        if d is None or d.params is None or depth > MAX_EXPANSION_DEPTH:
            return None
        self._text[name] = None  # recursion guard
        body = d.expand(self._placeholders(d))
        pieces = [body]
        for inner, inner_args in parse_calls(body):
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
        for inner, inner_args in parse_calls(d.expand(self._placeholders(d))):
            if inner in base:
                out.append((inner, inner_args))
            elif inner in self.macros and inner != name:
                inner_d = self.macros[inner]
                if len(inner_d.params or ()) == len(inner_args):
                    for bm, bargs in self.base_calls(inner, base, depth + 1):
                        out.append((bm, [substitute(a, inner_args) for a in bargs]))
        self._calls[name] = out
        return out

    def findall(self, name: str, pattern: re.Pattern) -> list:
        """``pattern.finditer`` over the expansion of ``name``: lists of group tuples."""
        key = (name, pattern.pattern)
        if key not in self._found:
            text = self.text(name)
            self._found[key] = [m.groups() for m in pattern.finditer(text)] if text else []
        return self._found[key]


def substitute(template: str, args: list[str] | tuple[str, ...]) -> str:
    if "\x00" not in template:
        return template
    if template[0] == "\x00" and template.count("\x00") == 2 and template[-1] == "\x00":
        i = int(template[1:-1])
        return args[i] if i < len(args) else ""
    return _PLACEHOLDER.sub(lambda m: args[int(m.group(1))] if int(m.group(1)) < len(args) else "", template)


# -- host side ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Dispatch:
    stub: str
    function: str
    path: str
    line: int
    via: str | None = None


@dataclass(frozen=True)
class Definition:
    """A host definition: ``TORCH_IMPL_FUNC`` block, function, or macro instance producing one."""

    name: str
    form: str  # impl_func | function | impl_macro (instance producing TORCH_IMPL_FUNC) | function_macro
    path: str
    line: int
    static: bool = False
    macro: str | None = None


@dataclass(frozen=True)
class KernelUse:
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


def scan_host(path: str, text: str) -> HostFile:
    lines = Lines(text)
    macros, macro_spans = scan_defines(text, lines)
    hf = HostFile(path, text)
    defs = hf.definitions
    for m in _IMPL.finditer(text):
        if lines.at_line_start(m.start()) and not _inside(macro_spans, m.start()) and not lines.commented(m.start()):
            defs.append(Definition(m.group(1), "impl_func", path, lines.line(m.start())))
    # function definitions of MPS kernels: every yaml MPS-only kernel name contains "mps"
    for m in _MPS_NAME.finditer(text):
        open_pos = m.end() - 1
        name_end = m.start() + len(m.group().rstrip("( \t"))
        window = text[max(0, m.start() - 120) : name_end]
        name = window[len(window.rstrip(_WORD_CHARS)) :]
        if not name or name[0].isdigit():
            continue
        ident_start = name_end - len(name)
        start = lines.line_start(ident_start)
        head = text[start:ident_start]
        if name in _KEYWORDS or _NOT_A_DEFINITION.search(head) or text[start : start + 1] in (" ", "\t", "#", "/", "}", "\n"):
            continue
        if _inside(macro_spans, m.start()):
            continue
        close = close_paren(text, open_pos)
        if close < 0 or not _BODY_FOLLOWS.match(text, close + 1) or lines.commented(m.start()):
            continue
        defs.append(Definition(name, "function", path, lines.line(start), static="static" in head.split()))
    for m in _REGISTER_DISPATCH.finditer(text):
        if not lines.at_line_start(m.start()) or _inside(macro_spans, m.start()) or lines.commented(m.start()):
            continue
        close = close_paren(text, m.end() - 1)
        args = split_args(text[m.end() : close]) if close > 0 else []
        if len(args) >= 2:
            hf.dispatches.append(Dispatch(args[0], args[1].lstrip("&").strip(), path, lines.line(m.start())))
    for m in _EXEC.finditer(text):
        if lines.commented(m.start()) or _inside(macro_spans, m.start()):
            continue
        hf.uses.append(KernelUse(m.group(1), m.group(2), path, lines.line(m.start()), _enclosing_kernel_function(text, m.start())))
    function_macros = [n for n, d in macros.items() if d.params is not None]
    if function_macros:
        table = MacroTable(macros)
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
        return (self.macro.replace("OPMATH_", "").rstrip("_"), self.op, self.dtypes)

    @property
    def torch_input_dtype(self) -> str | None:
        return TORCH_DTYPES.get(self.dtypes[0]) if self.dtypes else None


@dataclass
class HeaderInfo:
    macros: dict[str, MacroDef]
    functors: set[str]
    includes: list[str]


@dataclass
class MetalFile:
    path: str
    text: str
    functors: dict[str, int]  # functors defined in the file (and its macro instances) -> line
    header_functors: set[str]  # functors its includes define
    registrations: list[Registration]
    needs_functor: dict[str, bool]  # registration macro -> whether it instantiates NAME##_functor


class Index:
    """Everything ``check`` knows about a tree; every file is read at most once."""

    def __init__(self, tree: PytorchTree):
        self.tree = tree
        self.root = tree.root
        self._headers: dict[str, HeaderInfo | None] = {}
        self._texts: dict[str, str] = {}
        self._mentions: dict[tuple[str, str], bool] = {}
        self._includes: dict[tuple[str, str], str | None] = {}
        self._contexts: dict[tuple[int, ...], tuple[dict[str, MacroDef], set[str], set[str]]] = {}
        self._needs: dict[tuple[str, int], bool] = {}
        self.yaml_path = NATIVE_FUNCTIONS
        self.native: NativeFunctions = scan_native_functions(self.read(NATIVE_FUNCTIONS))
        host_rel = tree.list_files(MPS_DIR, HOST_SUFFIXES + (".h",), recursive=True)
        self.host_files = [scan_host(p, self.read(p)) for p in host_rel if p.endswith(HOST_SUFFIXES)]
        self.mps_headers = [p for p in host_rel if p.endswith(".h")]
        self.metal_files = [self._scan_metal(p) for p in tree.list_files(KERNELS_DIR, (".metal",), recursive=True)]
        self.stubs = declared_stubs(tree)
        self.common_mps_path = COMMON_MPS if tree.exists(COMMON_MPS) else None

    # -- reading --------------------------------------------------------------------------
    def read(self, rel: str) -> str:
        text = self._texts.get(rel)
        if text is None:
            try:
                raw = self.tree.resolve(rel).read_bytes()
            except OSError as exc:
                raise BadInput(f"cannot read {rel} in {self.root}: {exc.strerror or exc}.") from None
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

    def mentions(self, rel: str, name: str) -> bool:
        """Whether host or Metal source ``rel`` names ``name`` (or ``name_functor``) as a word."""
        key = (rel, name)
        hit = self._mentions.get(key)
        if hit is None:
            text = self._texts.get(rel) if rel.endswith((".mm", ".cpp", ".metal", ".h")) else None
            hit = bool(text and name in text and re.search(rf"(?<!\w){re.escape(name)}(?:_functor)?(?!\w)", text))
            self._mentions[key] = hit
        return hit

    def _resolve_include(self, name: str, from_path: str) -> str | None:
        key = (name, os.path.dirname(from_path))
        if key not in self._includes:
            found = None
            for cand in (name, f"aten/src/{name}", os.path.normpath(os.path.join(key[1], name)).replace(os.sep, "/")):
                if not cand.startswith("..") and (self.root / cand).is_file():
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
        functors = {m.group(1) for m in _FUNCTOR_ANY.finditer(text)} if "_functor" in text else set()
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

    def _metal_context(self, headers: list[HeaderInfo]) -> tuple[dict[str, MacroDef], set[str], set[str]]:
        """(macros, base registration macros, functors) the given includes provide; cached."""
        key = tuple(id(h) for h in headers)
        ctx = self._contexts.get(key)
        if ctx is None:
            macros: dict[str, MacroDef] = {}
            functors: set[str] = set()
            for h in headers:
                macros.update(h.macros)
                functors |= h.functors
            base = {n for n, d in macros.items() if n.startswith("REGISTER_") and d.params and d.params[0] == "NAME"}
            ctx = self._contexts[key] = (macros, base, functors)
        return ctx

    def _scan_metal(self, path: str) -> MetalFile:
        text = self.read(path)
        lines = Lines(text)
        own, macro_spans = scan_defines(text, lines)
        headers = self._included(path, text)
        if not headers and self.tree.exists(INDEXING_HEADER):
            info = self._header(INDEXING_HEADER)
            headers = [info] if info else []
        header_macros, header_base, header_functors = self._metal_context(headers)
        base = header_base - own.keys()
        macros = {**header_macros, **own} if own else header_macros
        table = MacroTable(macros, stop=base)

        functors: dict[str, int] = {}
        if "_functor" in text:
            for m in _FUNCTOR.finditer(text):
                start = lines.line_start(m.start())
                fm = _FUNCTOR_LINE.match(text, start)
                if fm and fm.end() == m.end() and not _inside(macro_spans, start) and not lines.commented(start):
                    functors.setdefault(fm.group(1) or fm.group(2), lines.line(start))
        regs: list[Registration] = []
        body_lines: dict[tuple[str, str], int | None] = {}
        split: list[str] | None = None
        for m in _UPPER_CALL0.finditer("\n" + text):
            name = m.group(1)
            if name not in base and name not in own and not name.startswith("REGISTER_"):
                continue
            start = m.start(1) - 1
            if _inside(macro_spans, start) or lines.commented(start):
                continue
            st = _statement_at(text, lines, name, m.end() - 2, start)
            if st is None or not st.args:
                continue
            if name in base:
                regs.append(Registration(name, st.args[0], tuple(st.args[1:]), path, st.line, st.line))
                continue
            if name not in own:
                if not base and name.endswith("_OP"):
                    # no registration header in sight: take REGISTER_*_OP at its word
                    regs.append(Registration(name, st.args[0], tuple(st.args[1:]), path, st.line, st.line))
                continue
            for bm, bargs in table.base_calls(name, base):
                if not bargs:
                    continue
                op = substitute(bargs[0], st.args)
                line = st.line
                if "\x00" not in bargs[0]:  # a bulk macro listing the op in its body
                    if (name, op) not in body_lines:
                        split = split or text.split("\n")
                        body_lines[(name, op)] = _body_line(split, own, name, op)
                    line = body_lines[(name, op)] or st.line
                regs.append(Registration(bm, op, tuple(substitute(a, st.args) for a in bargs[1:]), path, line, st.line, via=name))
            if "_functor" in (table.text(name) or ""):
                for (fn,) in table.findall(name, _FUNCTOR_ANY):
                    functors.setdefault(substitute(fn, st.args), st.line)
        needs = {b: self._needs_functor(b, macros) for b in {r.macro for r in regs}}
        return MetalFile(path, text, functors, header_functors, regs, needs)

    def _needs_functor(self, name: str, macros: dict[str, MacroDef], depth: int = 0) -> bool:
        """Whether a registration macro instantiates ``NAME##_functor`` (directly or through
        the macros it calls with NAME); a macro nobody defines is taken to."""
        d = macros.get(name)
        if d is None:
            return True
        key = (name, id(d))
        if key in self._needs:
            return self._needs[key]
        result = False
        if d.params and depth <= MAX_EXPANSION_DEPTH:
            p0 = d.params[0]
            if re.search(rf"\b{re.escape(p0)}\s*##\s*_functor", d.body):
                result = True
            else:
                for inner, inner_args in parse_calls(d.body):
                    if inner in macros and inner_args and inner_args[0] == p0 and self._needs_functor(inner, macros, depth + 1):
                        result = True
                        break
        self._needs[key] = result
        return result


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
