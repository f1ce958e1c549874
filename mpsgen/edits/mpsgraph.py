"""Remove an op's legacy MPSGraph implementation from an ``operations/*.mm`` file.

The implementation comes in one of three forms (``tree.mm.scan_mm().impls``): a
``TORCH_IMPL_FUNC(<x>_out_mps)`` block, a one-line instance of a macro that expands to
one, or a plain ``Tensor& <x>_mps(...)`` function. Removing it may leave behind:

- the ``#include <ATen/ops/<op>_native.h>`` line, removed when nothing left in the file
  names the op;
- static helpers (functions, typedefs, ``using`` aliases) and macros that only the removed
  code used, removed in turn (a helper that was already unused is not ours to touch; a
  macro other ops still instantiate stays);
- a ``namespace mps {}`` left empty.

A comment block directly above a removed definition goes with it when it heads only that
definition (a blank line or the end of a block follows). Where a removal leaves two blank
lines, or a blank line against a brace, one goes; blank lines elsewhere are untouched.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from mpsgen.tree.mm import MPSGraphImpl, scan_mm
from mpsgen.tree.source import line_of, line_starts, mask_c_comments_and_strings, match_close

_STATIC_FN = re.compile(r"^[ \t]*static[ \t]+(?:inline[ \t]+)?[\w:<>,\s*&^]*?\b(\w+)\s*\(", re.M)
_TYPEDEF = re.compile(r"^[ \t]*typedef\b[^;]*?\(\s*[\^*]\s*(\w+)\s*\)[^;]*;", re.M)
_TYPEDEF_PLAIN = re.compile(r"^[ \t]*typedef\b[^;()]*?\b(\w+)\s*;", re.M)
_USING = re.compile(r"^[ \t]*using[ \t]+(\w+)\s*=[^;]*;", re.M)
_NAMESPACE_MPS = re.compile(r"^namespace[ \t]+mps[ \t]*\{[ \t]*$", re.M)
_IDENT = re.compile(r"[A-Za-z_]\w*")
_PASTED = re.compile(r"\b(\w+)\s*##")
_WORD = re.compile(r"\w+")


class StillUsed(Exception):
    """A definition to remove is still referenced by code that stays."""

    def __init__(self, name: str, line: int):
        super().__init__(name)
        self.name = name
        self.line = line  # 1-based


@dataclass(frozen=True)
class Removal:
    """What ``remove_impls`` took out (for the user's notes)."""

    impls: tuple[str, ...]
    helpers: tuple[str, ...]
    macros: tuple[str, ...]
    includes: tuple[str, ...]

    def describe(self, rel: str) -> str:
        """``<file>: removed <impls>; helpers ...; macro ...; #include <...>``."""
        parts = [", ".join(self.impls)]
        if self.helpers:
            parts.append("helpers " + ", ".join(self.helpers))
        if self.macros:
            parts.append("macro " + ", ".join(self.macros))
        if self.includes:
            parts.append("#include " + ", ".join(f"<{i}>" for i in self.includes))
        return f"{rel}: removed " + "; ".join(parts)


@dataclass(frozen=True)
class _Def:
    name: str
    kind: str  # "function" | "typedef" | "using" | "macro"
    start: int  # 0-based lines, inclusive
    end: int


def _definitions(text: str, masked: str, starts: list[int]) -> list[_Def]:
    """Static functions, typedefs, using-aliases and function-like macros of the file."""
    source = scan_mm(text)
    macro_lines = {i for d in source.macros.values() for i in range(d.start_line, d.end_line + 1)}
    defs: list[_Def] = []
    for m in _STATIC_FN.finditer(masked):
        first = line_of(starts, m.start())
        if first in macro_lines:
            continue
        brace = masked.find("{", m.end())
        semi = masked.find(";", m.end())
        if brace < 0 or 0 <= semi < brace:
            continue  # a declaration or a static variable
        # `static auto& lib = ...getBundledLibrary()` has '=' before '(': not a function
        if "=" in masked[m.start() : m.end()]:
            continue
        close = match_close(masked, brace)
        if close > 0:
            defs.append(_Def(m.group(1), "function", first, line_of(starts, close)))
    for rx, kind in ((_TYPEDEF, "typedef"), (_TYPEDEF_PLAIN, "typedef"), (_USING, "using")):
        for m in rx.finditer(masked):
            first = line_of(starts, m.start())
            if first in macro_lines:
                continue
            defs.append(_Def(m.group(1), kind, first, line_of(starts, m.end() - 1)))
    for d in source.macros.values():
        if d.params is not None:
            defs.append(_Def(d.name, "macro", d.start_line, d.end_line))
    return defs


class _Names:
    """Where each name occurs in masked lines: the lines holding it as a whole word, and the
    lines that may make it by token pasting (``mps::binaryOp##other_type`` in a macro body
    makes binaryOpTensor). Listed in one pass over the file, so asking for a name does not
    search every line again (the fixed point below asks for each definition, round after round)."""

    def __init__(self, masked_lines: list[str]):
        self.lines: dict[str, list[int]] = {}
        self.pasting: list[tuple[int, list[str]]] = []
        for i, ln in enumerate(masked_lines):
            for word in set(_WORD.findall(ln)):
                self.lines.setdefault(word, []).append(i)
            if "##" in ln:
                self.pasting.append((i, _PASTED.findall(ln)))

    def uses(self, removed: set[int], name: str, own: range) -> list[int]:
        """0-based lines outside ``removed`` and ``own`` that name ``name``, or may make it by
        token pasting."""
        found = set(self.lines.get(name, ()))
        found.update(i for i, prefixes in self.pasting if any(name.startswith(p) for p in prefixes))
        return sorted(i for i in found if i not in removed and i not in own)


def _comment_above(lines: list[str], first: int, last: int, removed: set[int]) -> int:
    """First line of the removal, extended over a ``//`` comment block heading only it."""
    top = first
    while top - 1 >= 0 and top - 1 not in removed and lines[top - 1].lstrip().startswith("//"):
        top -= 1
    if top == first:
        return first
    below = last + 1
    while below < len(lines) and below in removed:
        below += 1
    after = lines[below].strip() if below < len(lines) else ""
    heads_only_this = after == "" or after.startswith("}")
    return top if heads_only_this else first


_ATEN_OPS_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include[ \t]*<ATen/ops/([^>\n]*)>", re.M)


@dataclass(frozen=True)
class _FileFacts:
    """What a removal reads of a file's text, whichever kernels it removes."""

    masked: str
    masked_lines: list[str]
    starts: list[int]
    names: _Names
    defs: list[_Def]
    used_before: dict[str, list[int]]  # definition -> the lines using it, before any removal
    includes: dict[str, int]  # header under ATen/ops/ -> the first line including it
    included_ops: list[str]  # ops whose <ATen/ops/<op>_native.h> the file includes


@functools.lru_cache(maxsize=128)
def _file_facts(text: str) -> _FileFacts:
    """The facts of ``text``, found once per text (shared: read them only). Coverage plans the
    migration of every candidate: on the upstream-sized tree, 92 removals from 30 files."""
    masked = mask_c_comments_and_strings(text)
    masked_lines = masked.split("\n")
    names = _Names(masked_lines)
    starts = line_starts(text)
    defs = _definitions(text, masked, starts)
    used_before = {d.name: names.uses(set(), d.name, range(d.start, d.end + 1)) for d in defs}
    includes: dict[str, int] = {}
    for m in _ATEN_OPS_INCLUDE.finditer(text):
        includes.setdefault(m.group(1), line_of(starts, m.start()))
    included_ops = re.findall(r"^[ \t]*#[ \t]*include[ \t]*<ATen/ops/(\w+)_native\.h>", text, re.M)
    return _FileFacts(masked, masked_lines, starts, names, defs, used_before, includes, included_ops)


def impl_header(text: str, impl: MPSGraphImpl) -> str:
    """A ``TORCH_IMPL_FUNC`` block's text up to and with the ``{`` that opens its body."""
    lines = text.split("\n")
    block = "\n".join(lines[impl.start_line : impl.end_line + 1])
    masked = mask_c_comments_and_strings(block)
    close = masked.find(")")  # TORCH_IMPL_FUNC(name)
    brace = masked.find("{", match_close(masked, masked.find("(", close + 1)) if "(" in masked[close + 1 :] else close)
    return block[: brace + 1]


def remove_impls(
    text: str, impls: list[MPSGraphImpl], ops: set[str], replacements: dict[str, str] | None = None
) -> tuple[str, Removal]:
    """Remove ``impls`` (found in this very text) and what only they needed.

    ``ops`` are the aten op names whose ``<op>_native.h`` include may go. ``replacements``:
    kernel -> the text its definition becomes, in its place (the comment above it stays), for
    a kernel that calls a stub now; what only its old body needed goes all the same. Raises
    ``StillUsed`` if code that stays still calls one of the removed functions.
    """
    replacements = replacements or {}
    if not impls:
        return text, Removal((), (), (), ())
    lines = text.split("\n")
    facts = _file_facts(text)
    masked, masked_lines, starts, names = facts.masked, facts.masked_lines, facts.starts, facts.names
    removed: set[int] = set()
    removal_points: list[tuple[int, int]] = []

    def cut(first: int, last: int) -> None:
        top = _comment_above(lines, first, last, removed)
        removed.update(range(top, last + 1))
        removal_points.append((top, last))

    inserts: dict[int, list[str]] = {}
    for impl in impls:
        if impl.kernel in replacements:
            removed.update(range(impl.start_line, impl.end_line + 1))
            inserts[impl.start_line] = replacements[impl.kernel].split("\n")
        else:
            cut(impl.start_line, impl.end_line)
    # a plain function may be called by code that stays: never leave a dangling call
    for impl in impls:
        if impl.form == "function":
            users = names.uses(removed, impl.kernel, range(0))
            if users:
                raise StillUsed(impl.kernel, users[0] + 1)

    # helpers and macros that only the removed code used, to a fixed point
    defs, before = facts.defs, facts.used_before
    gone_helpers: list[str] = []
    gone_macros: list[str] = []
    changed = True
    while changed:
        changed = False
        for d in defs:
            if d.start in removed or not before[d.name]:
                continue  # already removed, or unused before we came: not ours
            if not names.uses(removed, d.name, range(d.start, d.end + 1)):
                cut(d.start, d.end)
                (gone_macros if d.kind == "macro" else gone_helpers).append(d.name)
                changed = True

    # includes of the ops' native headers that nothing left needs
    gone_includes: list[str] = []
    included_ops = facts.included_ops
    for op in sorted(ops):
        header = f"{op}_native.h"
        at = facts.includes.get(header)
        if at is None:
            continue
        # what <op>_native.h declares: the op's kernels (threshold_out_mps) and structured
        # classes; a bare `threshold` is a variable, an at::threshold call needs ATen/ops/threshold.h
        rx = re.compile(rf"\b(?:structured_)?{re.escape(op)}_\w+")
        # a name of a longer op whose own header the file includes (softplus_backward_out_mps
        # for softplus) needs that header, not this one
        longer = [o for o in included_ops if o.startswith(op + "_")]
        needed = any(
            not any(m.group().removeprefix("structured_").startswith(o) for o in longer)
            for i, ln in enumerate(masked_lines)
            if i not in removed and not ln.lstrip().startswith("#")
            for m in rx.finditer(ln)
        )
        if not needed:
            removed.add(at)
            gone_includes.append(f"ATen/ops/{header}")

    # a namespace mps left with nothing but blank lines
    for m in _NAMESPACE_MPS.finditer(masked):
        open_line = line_of(starts, m.start())
        close = match_close(masked, masked.find("{", m.start()))
        if close < 0:
            continue
        close_line = line_of(starts, close)
        inner = [i for i in range(open_line + 1, close_line) if i not in removed and lines[i].strip()]
        if not inner and any(open_line < i < close_line for i in removed):
            cut(open_line, close_line)

    out = _drop_lines(lines, removed, inserts)
    return "\n".join(out), Removal(
        tuple(i.kernel for i in impls), tuple(gone_helpers), tuple(gone_macros), tuple(gone_includes)
    )


def _drop_lines(lines: list[str], removed: set[int], inserts: dict[int, list[str]] | None = None) -> list[str]:
    """Drop ``removed`` lines, putting ``inserts`` (line -> new lines) in place of the run
    they start; where a run sat between two blank lines, one of those goes too. Blank lines
    elsewhere are left as they are."""
    inserts = inserts or {}
    out: list[str] = []
    i, n = 0, len(lines)
    while i < n:
        if i not in removed:
            out.append(lines[i])
            i += 1
            continue
        while i < n and i in removed:
            out.extend(inserts.get(i, ()))
            i += 1
        prev_blank = not out or not out[-1].strip()
        if not prev_blank or i >= n or lines[i].strip():
            continue
        if i == n - 1 and out:
            out.pop()  # the blank before the removal would become the file's last line
        else:
            i += 1  # two blank lines (or a blank first line) would meet: keep one
    return out
