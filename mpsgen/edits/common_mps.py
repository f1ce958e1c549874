"""Remove an op's keys from the xfail/skip dicts of ``mps_ops_modifier`` in common_mps.py.

The dicts are found by reading the file (libcst): every dict literal assigned inside
``mps_ops_modifier`` to a name containing XFAIL or SKIP. An entry listing dtypes the new
kernel does not cover stays, cut down to those dtypes. The edit itself is textual at the
positions libcst reports, so comments and layout around the entry are kept.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from mpsgen.text import shorten
from mpsgen.tree.dtypes import MPS_DTYPE_ORDER
from mpsgen.tree.reasons import comment_above, is_unimplemented_reason
from mpsgen.tree.xfails import XfailEntry, canonical_dtype

__all__ = ["XfailEntry", "canonical_dtype", "remove_op_entries", "xfail_entries"]

BLACK_LINE_LENGTH = 88  # common_mps.py is black-formatted


@dataclass
class _Element:
    dict_name: str
    key: str
    node: cst.DictElement
    dtype_nodes: list[cst.BaseExpression] | None


class _Finder:
    """Collects the xfail/skip dict literals assigned inside ``mps_ops_modifier``.

    Walks statement bodies directly instead of visiting every node: the dicts sit a few
    statement levels down, and a full visitor pass costs a quarter second on this file."""

    def __init__(self) -> None:
        self.elements: list[_Element] = []
        self.dict_names: list[str] = []
        # the set literal naming the ops tested with complex inputs (SUPPORTED_COMPLEX_OPS today)
        self.complex_set: tuple[str, cst.Set] | None = None

    def walk(self, statements, inside: bool = False) -> None:
        for stmt in statements:
            if isinstance(stmt, cst.SimpleStatementLine):
                if inside:
                    for small in stmt.body:
                        if isinstance(small, cst.Assign):
                            for t in small.targets:
                                self._take(t.target, small.value)
                        elif isinstance(small, cst.AnnAssign):
                            self._take(small.target, small.value)
                continue
            now_inside = inside or (isinstance(stmt, cst.FunctionDef) and stmt.name.value == "mps_ops_modifier")
            body = getattr(stmt, "body", None)
            if isinstance(body, cst.IndentedBlock):
                self.walk(body.body, now_inside)
            orelse = getattr(stmt, "orelse", None)
            while orelse is not None:
                if isinstance(getattr(orelse, "body", None), cst.IndentedBlock):
                    self.walk(orelse.body.body, now_inside)
                orelse = getattr(orelse, "orelse", None)

    def _take(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        if isinstance(target, cst.Name) and isinstance(value, cst.Set) and "COMPLEX" in target.value:
            if self.complex_set is None:
                self.complex_set = (target.value, value)
            return
        if not isinstance(target, cst.Name) or not isinstance(value, cst.Dict):
            return
        name = target.value
        if "XFAIL" not in name and "SKIP" not in name:
            return
        self.dict_names.append(name)
        for el in value.elements:
            if not isinstance(el, cst.DictElement) or not isinstance(el.key, cst.SimpleString):
                continue
            dtypes = None
            if isinstance(el.value, (cst.List, cst.Tuple)):
                dtypes = [e.value for e in el.value.elements]
            self.elements.append(_Element(name, el.key.evaluated_value, el, dtypes))


_SCANNED: dict[str, tuple[_Finder, MetadataWrapper, dict]] = {}  # the last text scanned


def _scan(text: str) -> tuple[_Finder, MetadataWrapper, dict]:
    """The file's xfail dicts, its libcst tree and their positions: parsed once per text (a run
    that plans several ops, as coverage's readiness check does, edits the same file each time;
    nothing here mutates the tree)."""
    scanned = _SCANNED.get(text)
    if scanned is None:
        wrapper = MetadataWrapper(cst.parse_module(text), unsafe_skip_copy=True)
        finder = _Finder()
        finder.walk(wrapper.module.body)
        scanned = (finder, wrapper, wrapper.resolve(PositionProvider))
        _SCANNED.clear()
        _SCANNED[text] = scanned
    return scanned


def xfail_entries(text: str) -> tuple[list[str], list[XfailEntry]]:
    """Dict names and their entries, as read from the file."""
    finder, wrapper, positions = _scan(text)
    module = wrapper.module
    entries = []
    for el in finder.elements:
        dts = None
        if el.dtype_nodes is not None:
            dts = tuple(canonical_dtype(module.code_for_node(n)) for n in el.dtype_nodes)
        entries.append(XfailEntry(el.dict_name, el.key, dts, positions[el.node].start.line))
    return finder.dict_names, entries


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
    finder, wrapper, positions = _scan(text)
    module = wrapper.module
    lines = text.split("\n")
    if finder.complex_set is not None and not complex_keys:
        # an op outside the complex-supporting set has its complex tests xfailed by that rule
        # already: a cut-down entry need not list them again
        if not keys & _members(finder.complex_set[1]):
            uncovered = [d for d in uncovered if d not in ("torch.complex64", "torch.complex32")]
    # offsets of line starts, to turn (line, col) into offsets
    starts = [0]
    for ln in lines[:-1]:
        starts.append(starts[-1] + len(ln) + 1)

    def off(pos: cst.metadata.CodePosition) -> int:
        return starts[pos.line - 1] + pos.column

    cuts: list[tuple[int, int, str]] = []  # (start, end, replacement)
    for el in finder.elements:
        if el.key not in keys:
            continue
        node = el.node
        rng = positions[node]
        if el.dtype_nodes is None and "UNIMPLEMENTED" not in el.dict_name:
            # a whole-op entry outside the "unimplemented" list goes only when its reason is a missing kernel
            first_line = rng.start.line - 1
            reason = comment_above(lines, first_line) + " " + lines[rng.end.line - 1].partition("#")[2]
            if not is_unimplemented_reason(reason):
                if kept is not None:
                    why = shorten(reason.strip().lstrip("# "), 90) or "no reason given"
                    kept.append((rng.start.line, f"{el.dict_name}[{el.key!r}] kept ({why}); check whether it still fails"))
                continue
        if el.dtype_nodes is None and uncovered:
            rng_value = positions[node.value]
            listed = "[" + ", ".join(uncovered) + "]"
            line = lines[rng_value.start.line - 1]
            replacement = listed
            if len(line) - len("None") + len(listed) > BLACK_LINE_LENGTH:  # exploded, as black lays it out
                indent = " " * (len(line) - len(line.lstrip(" ")))
                replacement = "[\n" + "".join(f"{indent}    {d},\n" for d in uncovered) + f"{indent}]"
            cuts.append((off(rng_value.start), off(rng_value.end), replacement))
            if kept is not None:
                kept.append((rng.start.line, f"{el.dict_name}[{el.key!r}] cut down to {listed}: the kernel does not take those dtypes its OpInfo tests on MPS"))
            continue
        keep = None
        if el.dtype_nodes is not None:
            keep = [n for n in el.dtype_nodes if canonical_dtype(module.code_for_node(n)) not in covered_dtypes]
            if len(keep) == len(el.dtype_nodes):
                continue  # the kernel covers none of the listed dtypes: the entry stays as is
        if keep:
            cuts.append(_cut_down(text, node.value, keep, positions, off))
            continue
        s, e = off(rng.start), off(rng.end)
        # the comma belongs to the element
        rest = text[e:]
        stripped = rest.lstrip(" \t")
        if stripped.startswith(","):
            e += len(rest) - len(stripped) + 1
        first, last = rng.start.line - 1, rng.end.line - 1
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
    if complex_keys and finder.complex_set is not None:
        _name, node = finder.complex_set
        present = _members(node)
        missing = sorted(complex_keys - present)
        if missing and node.elements:
            last = positions[node.elements[-1]]
            line = lines[last.end.line - 1]
            indent = line[: len(line) - len(line.lstrip())]
            at = starts[last.end.line - 1] + len(line) + 1
            quote = module.code_for_node(node.elements[-1].value)[0]
            block = "".join(f"{indent}{quote}{k}{quote},\n" for k in missing)
            if "\n" in text[off(positions[node].start) : off(positions[node].end)] and not line.rstrip().endswith(","):
                cuts.append((starts[last.end.line - 1] + len(line.rstrip()), starts[last.end.line - 1] + len(line.rstrip()), ","))
            cuts.append((at, at, block))
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


def _members(node: cst.Set) -> set[str]:
    """The string elements of a set literal (the op names of the complex-supporting set)."""
    return {e.value.evaluated_value for e in node.elements if isinstance(e.value, cst.SimpleString)}


def _cut_down(text, value: cst.BaseExpression, keep, positions, off) -> tuple[int, int, str]:
    rng = positions[value]
    s, e = off(rng.start), off(rng.end)
    original = text[s:e]
    opener, closer = original[0], original[-1]
    kept_src = [text[off(positions[n].start) : off(positions[n].end)] for n in keep]
    if "\n" not in original:
        return s, e, opener + ", ".join(kept_src) + (",)" if opener == "(" and len(kept_src) == 1 else closer)
    # multi-line: one element a line, as black lays it out
    first_el = positions[value.elements[0].value]
    indent = " " * first_el.start.column
    line_start = text.rfind("\n", 0, s) + 1
    base_indent = text[line_start : line_start + len(text[line_start:]) - len(text[line_start:].lstrip(" "))]
    body = "".join(f"{indent}{src},\n" for src in kept_src)
    return s, e, f"{opener}\n{body}{base_indent}{closer}"
