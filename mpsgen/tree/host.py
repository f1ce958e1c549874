"""Host facts of ``.mm``/``.cpp`` files, as ``check``, ``explain`` and the edits read them:
``REGISTER_DISPATCH`` statements (literal or made by a macro instance), definitions of MPS
kernels (``TORCH_IMPL_FUNC`` blocks, functions, macro instances producing either) and
``exec_*_kernel(iter, "<name>")`` calls with the static kernel function around them.
Lines are 1-based.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import NamedTuple

from mpsgen.tree.clike import Lines, close_paren, MacroTable, ReversedPattern, Spans, inside_spans, define, find_statements, raw_defines, substitute
from mpsgen.tree.source import split_args

_REGISTER_DISPATCH = re.compile(r"REGISTER_DISPATCH[ \t]*\(")
_IMPL = re.compile(r"TORCH_IMPL_FUNC[ \t]*\([ \t]*(\w+)[ \t]*\)")
_MPS_NAME = re.compile(r"mps\w*[ \t]*\(")
_WORD_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"
_STATIC_FN = re.compile(r"static[ \t]+(?:inline[ \t]+)?void[ \t]+(\w+)[ \t]*\(")
_EXEC = re.compile(r"exec_(unary|binary|ternary)_kernel[ \t]*\(\s*[\w.\->*&()]*?\s*,\s*\"([^\"\n]*)\"")
_EXPANDED_DISPATCH = re.compile(r"REGISTER_DISPATCH\s*\(\s*([\w\x00]+)\s*,\s*&?\s*([\w\x00]+)")
_EXPANDED_IMPL = re.compile(r"TORCH_IMPL_FUNC\s*\(\s*([\w\x00]+)\s*\)")
# a function definition in a macro's expansion: its name's word, "(", no parenthesis, ")",
# "const"?, "{"; searched backwards from the "{" (ReversedPattern)
_EXPANDED_DEF = ReversedPattern(r"([\w\x00]+)\s*\([^()]*\)\s*(?:const\s*)?\{", r"\{\s*(?:tsnoc\s*)?\)[^()]*\(\s*([\w\x00]+)")
_EXPANDED_EXEC = re.compile(r"exec_(unary|binary|ternary)_kernel\s*\(\s*[\w.\->*&()]*?\s*,\s*\"([^\"]*)\"")
_BODY_FOLLOWS = re.compile(r"\s*(?:(?:const|override|noexcept|final)\b\s*)*(?:->[^{;]*)?\{")
_NOT_A_DEFINITION = re.compile(r"[(=;,{}.]|->|\breturn\b|^\s|^#|^//")
_TEMPLATE_ARGS = re.compile(r"<[\w:&*, \t]*>")
_KEYWORDS = frozenset({"if", "for", "while", "switch", "return", "sizeof", "catch", "TORCH_IMPL_FUNC", "defined"})
_NOT_DEFINITION_START = (" ", "\t", "#", "/", "}", "\n")


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


class HostFile:
    """A host file's facts (filled in by :func:`scan_host`)."""

    __slots__ = ("definitions", "dispatches", "path", "text", "uses")

    def __init__(self, path: str, text: str):
        self.path = path
        self.text = text
        self.definitions: list[Definition] = []
        self.dispatches: list[Dispatch] = []
        self.uses: list[KernelUse] = []


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
        # (a template return type may hold commas: `std::tuple<Tensor, Tensor> var_mean_mps(`)
        if _NOT_A_DEFINITION.search(_TEMPLATE_ARGS.sub("<>", head)) or inside_spans(macro_spans, pos):
            continue
        close = close_paren(text, m.end() - 1)
        if close < 0 or not _BODY_FOLLOWS.match(text, close + 1) or lines.commented(pos):
            continue
        yield Definition(name, "function", path, lines.line(start), "static" in head.split())


def scan_host(path: str, text: str) -> HostFile:
    lines = Lines(text)
    raw, macro_spans = raw_defines(text, lines)
    # object-like macros make nothing here (no instance of them is a statement)
    macros = {name: define(d, lines) for name, d in raw.items() if d.params is not None}
    hf = HostFile(path, text)
    defs = hf.definitions
    if "TORCH_IMPL_FUNC" in text:
        rfind, line, comments = text.rfind, lines.line, bool(lines.comments)
        new = tuple.__new__  # Definition without its Python-level __new__ (thousands in a tree)
        for m in _IMPL.finditer(text):
            start = m.start()
            if start and text[start - 1] != "\n":  # clang-format's column 0 is the rule
                line_start = rfind("\n", 0, start) + 1
                if text[line_start:start].strip():
                    continue  # not at the start of its line
            if (macro_spans and inside_spans(macro_spans, start)) or (comments and lines.in_block_comment(start)):
                continue
            defs.append(new(Definition, (m.group(1), "impl_func", path, line(start), False, None)))
    defs += _function_definitions(text, path, lines, macro_spans)
    if "REGISTER_DISPATCH" in text:
        for m in _REGISTER_DISPATCH.finditer(text):
            if not lines.at_line_start(m.start()) or inside_spans(macro_spans, m.start()) or lines.in_block_comment(m.start()):
                continue
            close = close_paren(text, m.end() - 1)
            args = split_args(text[m.end() : close]) if close > 0 else []
            if len(args) >= 2:
                hf.dispatches.append(Dispatch(args[0], args[1].lstrip("&").strip(), path, lines.line(m.start())))
    if "_kernel" in text:
        for m in _EXEC.finditer(text):
            if lines.commented(m.start()) or inside_spans(macro_spans, m.start()):
                continue
            hf.uses.append(KernelUse(m.group(1), m.group(2), path, lines.line(m.start()), _enclosing_kernel_function(text, m.start())))
    function_macros = list(macros)
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


@functools.lru_cache(maxsize=256)
def host_file(path: str, text: str) -> HostFile:
    """:func:`scan_host` once per file and text (shared: read it only): check's and explain's
    index and migrate's listing of MPSGraph code ask for the same files in one run."""
    return scan_host(path, text)
