"""Remove an op's keys from the xfail/skip dicts of ``mps_ops_modifier`` in common_mps.py.

The dicts are found in the file's syntax tree (``ast``: the one parse the syntax check and
the readers of :mod:`mpsgen.tree.xfails` share): every dict literal assigned inside
``mps_ops_modifier`` to a name containing XFAIL or SKIP. An entry listing dtypes the new
kernel does not cover stays, cut down to those dtypes. The edit itself is textual at the
positions the tree gives, and touches only the entries it changes: comments and layout
around them are kept.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from mpsgen.core.text import shorten
from mpsgen.tree.dtypes import MPS_DTYPE_ORDER
from mpsgen.tree.reasons import comment_above, is_unimplemented_reason
from mpsgen.tree.source import parse_python
from mpsgen.tree.xfails import XfailEntry, canonical_dtype, is_list_name, modifier_assignments, read_xfail_entries

__all__ = ["XfailEntry", "canonical_dtype", "remove_op_entries", "xfail_entries"]

BLACK_LINE_LENGTH = 88  # common_mps.py is black-formatted


@dataclass
class _Element:
    dict_name: str
    key: ast.expr  # the key's string literal
    value: ast.expr
    dtype_nodes: list[ast.expr] | None


def _find(module: ast.Module) -> tuple[list[_Element], ast.Set | None]:
    """The elements of the xfail/skip dict literals assigned in ``mps_ops_modifier``, and the
    set literal naming the ops tested with complex inputs (SUPPORTED_COMPLEX_OPS today)."""
    elements: list[_Element] = []
    complex_set = None
    for name, value in modifier_assignments(module):
        if isinstance(value, ast.Set) and "COMPLEX" in name:
            complex_set = complex_set or value
        elif isinstance(value, ast.Dict) and is_list_name(name):
            for k, v in zip(value.keys, value.values):
                if isinstance(k, ast.Constant) and isinstance(k.value, str):
                    dtypes = list(v.elts) if isinstance(v, (ast.List, ast.Tuple)) else None
                    elements.append(_Element(name, k, v, dtypes))
    return elements, complex_set


def xfail_entries(text: str) -> tuple[list[str], list[XfailEntry]]:
    """Dict names and their entries, as read from the file."""
    names = [n for n, v in modifier_assignments(parse_python(text)) if isinstance(v, ast.Dict) and is_list_name(n)]
    return names, read_xfail_entries(text)


class _Offsets:
    """Offsets into the text of the positions ``ast`` gives: 1-based lines and columns counted
    in UTF-8 bytes."""

    def __init__(self, text: str) -> None:
        self.lines = text.split("\n")
        self.starts = [0]
        for ln in self.lines[:-1]:
            self.starts.append(self.starts[-1] + len(ln) + 1)

    def column(self, line: int, col: int) -> int:
        text = self.lines[line - 1]
        return col if text.isascii() else len(text.encode("utf-8")[:col].decode("utf-8", "replace"))

    def start(self, node: ast.AST) -> int:
        return self.starts[node.lineno - 1] + self.column(node.lineno, node.col_offset)

    def end(self, node: ast.AST) -> int:
        return self.starts[node.end_lineno - 1] + self.column(node.end_lineno, node.end_col_offset)


def remove_op_entries(
    text: str,
    keys: set[str],
    covered_dtypes: set[str],
    complex_keys: set[str] = frozenset(),
    kept: list[tuple[int, str]] | None = None,
    tested_dtypes: set[str] = frozenset(),
) -> str:
    """Drop entries for ``keys``; an entry naming dtypes outside ``covered_dtypes`` is cut down.
    A whole-op entry (``None``) becomes the list of ``tested_dtypes`` (the dtypes the op's
    OpInfos test on MPS) the kernel does not cover, when there are any: those tests still
    fail. ``complex_keys`` (OpInfo names of an op whose kernel now takes complex inputs) join
    the set of complex-supporting ops, after its last element, where they are not there yet."""
    # (an OpInfo claim of float64 or complex128 is never a test of an MPS kernel)
    uncovered = [d for d in MPS_DTYPE_ORDER if d in tested_dtypes and d not in covered_dtypes]
    if not complex_keys and not any(f'"{k}"' in text or f"'{k}'" in text for k in keys):
        return text  # fast path: nothing to look for
    elements, complex_set = _find(parse_python(text))
    at = _Offsets(text)
    lines, starts = at.lines, at.starts
    if complex_set is not None and not complex_keys:
        # an op outside the complex-supporting set has its complex tests xfailed by that rule
        # already: a cut-down entry need not list them again
        if not keys & _members(complex_set):
            uncovered = [d for d in uncovered if d not in ("torch.complex64", "torch.complex32")]

    cuts: list[tuple[int, int, str]] = []  # (start, end, replacement)
    for el in elements:
        if el.key.value not in keys:
            continue
        first_line, last_line = el.key.lineno, el.value.end_lineno  # 1-based: the element's
        if el.dtype_nodes is None and "UNIMPLEMENTED" not in el.dict_name:
            # a whole-op entry outside the "unimplemented" list goes only when its reason is a missing kernel
            reason = comment_above(lines, first_line - 1) + " " + lines[last_line - 1].partition("#")[2]
            if not is_unimplemented_reason(reason):
                if kept is not None:
                    why = shorten(reason.strip().lstrip("# "), 90) or "no reason given"
                    kept.append((first_line, f"{el.dict_name}[{el.key.value!r}] kept ({why}); check whether it still fails"))
                continue
        if el.dtype_nodes is None and uncovered:
            listed = "[" + ", ".join(uncovered) + "]"
            line = lines[el.value.lineno - 1]
            replacement = listed
            if len(line) - len("None") + len(listed) > BLACK_LINE_LENGTH:  # exploded, as black lays it out
                indent = " " * (len(line) - len(line.lstrip(" ")))
                replacement = "[\n" + "".join(f"{indent}    {d},\n" for d in uncovered) + f"{indent}]"
            cuts.append((at.start(el.value), at.end(el.value), replacement))
            if kept is not None:
                kept.append((first_line, f"{el.dict_name}[{el.key.value!r}] cut down to {listed}: the kernel does not take those dtypes its OpInfo tests on MPS"))
            continue
        keep = None
        if el.dtype_nodes is not None:
            keep = [n for n in el.dtype_nodes if canonical_dtype(text[at.start(n) : at.end(n)]) not in covered_dtypes]
            if len(keep) == len(el.dtype_nodes):
                continue  # the kernel covers none of the listed dtypes: the entry stays as is
        if keep:
            cuts.append(_cut_down(text, el.value, keep, at))
            continue
        s, e = at.start(el.key), at.end(el.value)
        # the comma belongs to the element
        rest = text[e:]
        stripped = rest.lstrip(" \t")
        if stripped.startswith(","):
            e += len(rest) - len(stripped) + 1
        first, last = first_line - 1, last_line - 1
        line_end = starts[last] + len(lines[last])
        before = text[starts[first] : s]
        after = text[e:line_end]
        if not before.strip() and (not after.strip() or after.strip().startswith("#")):
            s, e = starts[first], min(line_end + 1, len(text))
            s = _with_comment_above(lines, starts, first, last, s)
            cuts.append((s, e, ""))
        else:
            tail = len(text[e:]) - len(text[e:].lstrip(" "))
            cuts.append((s, e + tail, ""))
    if complex_keys and complex_set is not None:
        present = _members(complex_set)
        missing = sorted(complex_keys - present)
        if missing and complex_set.elts:
            last = complex_set.elts[-1]
            line = lines[last.end_lineno - 1]
            indent = line[: len(line) - len(line.lstrip())]
            where = starts[last.end_lineno - 1] + len(line) + 1
            quote = text[at.start(last)]
            block = "".join(f"{indent}{quote}{k}{quote},\n" for k in missing)
            if "\n" in text[at.start(complex_set) : at.end(complex_set)] and not line.rstrip().endswith(","):
                cuts.append((starts[last.end_lineno - 1] + len(line.rstrip()), starts[last.end_lineno - 1] + len(line.rstrip()), ","))
            cuts.append((where, where, block))
    if not cuts:
        return text
    out, last_end = [], 0
    for s, e, repl in sorted(cuts):
        out.append(text[last_end:s])
        out.append(repl)
        last_end = e
    out.append(text[last_end:])
    return "".join(out)


def _with_comment_above(lines: list[str], starts: list[int], first: int, last: int, s: int) -> int:
    """Extend a whole-line removal upwards over a comment block that explains only this entry."""
    top = first
    while top - 1 >= 0 and lines[top - 1].lstrip().startswith("#"):
        top -= 1
    if top == first:
        return s
    below = lines[last + 1].strip() if last + 1 < len(lines) else ""
    # the block heads only this entry when no entry of its group follows
    heads_only_this = below == "" or below.startswith("}") or below.startswith("#")
    return starts[top] if heads_only_this else s


def _members(node: ast.Set) -> set[str]:
    """The string elements of a set literal (the op names of the complex-supporting set)."""
    return {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}


def _cut_down(text: str, value: ast.expr, keep: list[ast.expr], at: _Offsets) -> tuple[int, int, str]:
    s, e = at.start(value), at.end(value)
    original = text[s:e]
    opener, closer = original[0], original[-1]
    kept_src = [text[at.start(n) : at.end(n)] for n in keep]
    if "\n" not in original:
        return s, e, opener + ", ".join(kept_src) + (",)" if opener == "(" and len(kept_src) == 1 else closer)
    # multi-line: one element a line, as black lays it out
    first_el = value.elts[0]
    indent = " " * at.column(first_el.lineno, first_el.col_offset)
    line_start = text.rfind("\n", 0, s) + 1
    base_indent = text[line_start : line_start + len(text[line_start:]) - len(text[line_start:].lstrip(" "))]
    body = "".join(f"{indent}{src},\n" for src in kept_src)
    return s, e, f"{opener}\n{body}{base_indent}{closer}"
