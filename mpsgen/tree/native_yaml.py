"""A fast, line-based scanner of native_functions.yaml.

Reads the ~600 KB file in tens of milliseconds without building a YAML tree: every entry
starts at a ``- func:`` line in column 0 and its dispatch table is the block of
4-space-indented ``KEYS: kernel`` lines under ``  dispatch:``. Line numbers are 1-based.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from mpsgen.core.errors import BadInput, Location
from mpsgen.core.text import shorten
from mpsgen.tree import NATIVE_FUNCTIONS
from mpsgen.tree.source import SourceFile

if TYPE_CHECKING:
    from mpsgen.tree import PytorchTree

FUNC_HEADER = re.compile(r"- func: ([A-Za-z0-9_]+)(?:\.([A-Za-z0-9_]+))?\(")
_DISPATCH_LINE = re.compile(r"    ([A-Za-z0-9_, ]+):\s*([A-Za-z0-9_:]+)\s*(#.*)?$")


class DispatchEntry(NamedTuple):
    """One ``    CPU, CUDA: heaviside_out`` line."""

    keys: tuple[str, ...]
    kernel: str
    line: int
    text: str

    @property
    def shared_cpu_cuda(self) -> bool:
        return "CPU" in self.keys and "CUDA" in self.keys

    @property
    def has_mps(self) -> bool:
        return "MPS" in self.keys


class NativeFunction(NamedTuple):
    """One entry (row) of native_functions.yaml."""

    base: str  # "heaviside"
    overload: str  # "out", or "" for the default overload
    func: str  # the whole schema
    start_line: int
    end_line: int  # last non-blank line of the entry
    dispatch: tuple[DispatchEntry, ...]
    structured: bool
    structured_delegate: str | None
    tags: tuple[str, ...]
    python_module: str | None = None

    @property
    def name(self) -> str:
        return f"{self.base}.{self.overload}" if self.overload else self.base

    @property
    def mps_entries(self) -> tuple[DispatchEntry, ...]:
        return tuple(d for d in self.dispatch if d.has_mps)

    @property
    def shared_entry(self) -> DispatchEntry | None:
        for d in self.dispatch:
            if d.shared_cpu_cuda:
                return d
        return None


@dataclass(frozen=True)
class NativeFunctions:
    entries: tuple[NativeFunction, ...]

    def by_name(self) -> dict[str, NativeFunction]:
        """name -> row (made once per table and shared: read it only)."""
        return self._by_name

    @functools.cached_property
    def _by_name(self) -> dict[str, NativeFunction]:
        return {e.name: e for e in self.entries}

    @functools.cached_property
    def _by_base(self) -> dict[str, list[int]]:
        """base name -> the indices of its entries (coverage asks of_op for every op)."""
        found: dict[str, list[int]] = {}
        for i, e in enumerate(self.entries):
            found.setdefault(e.base, []).append(i)
        return found

    def of_op(self, op: str) -> list[NativeFunction]:
        """Rows of ``op``: its overloads and its in-place variant ``op_``, in file order."""
        at = self._by_base.get(op, []) + self._by_base.get(f"{op}_", [])
        return [self.entries[i] for i in sorted(at)]


# the keys of an entry the scan reads (any other line is stepped over with one test)
_READ_KEYS = ("  dispatch:", "  structured: True", "  structured_delegate:", "  python_module:", "  tags:")


def scan_native_functions(text: str) -> NativeFunctions:
    entries: list[NativeFunction] = []
    lines = text.split("\n")
    n = len(lines)
    heads = [i for i, line in enumerate(lines) if line.startswith("- func:")]
    for start, j in zip(heads, heads[1:] + [n]):
        line = lines[start]
        m = FUNC_HEADER.match(line)
        # entry spans [start, j); trim trailing blank and comment-only lines
        end = j - 1
        while end > start and (not lines[end].strip() or lines[end].startswith("#")):
            end -= 1
        dispatch: list[DispatchEntry] = []
        structured = False
        delegate = None
        tags: tuple[str, ...] = ()
        python_module = None
        k = start + 1
        while k <= end:
            ln = lines[k]
            if not ln.startswith(_READ_KEYS):
                k += 1
                continue
            if ln.startswith("  dispatch:"):
                k += 1
                while k <= end and (lines[k].startswith("    ") or not lines[k].strip()):
                    dm = _DISPATCH_LINE.match(lines[k])
                    if dm:
                        keys = tuple(x.strip() for x in dm.group(1).split(","))
                        dispatch.append(DispatchEntry(keys, dm.group(2), k + 1, lines[k]))
                    k += 1
                continue
            if ln.startswith("  structured: True"):
                structured = True
            elif ln.startswith("  structured_delegate:"):
                delegate = ln.split(":", 1)[1].split("#")[0].strip()
            elif ln.startswith("  python_module:"):
                python_module = ln.split(":", 1)[1].split("#")[0].strip()
            elif ln.startswith("  tags:"):
                raw = ln.split(":", 1)[1].split("#")[0].strip().strip("[]")
                tags = tuple(t.strip() for t in raw.split(",") if t.strip())
            k += 1
        if m:
            func = line[len("- func:") :].strip()
            entries.append(
                NativeFunction(
                    base=m.group(1),
                    overload=m.group(2) or "",
                    func=func,
                    start_line=start + 1,
                    end_line=end + 1,
                    dispatch=tuple(dispatch),
                    structured=structured,
                    structured_delegate=delegate,
                    tags=tags,
                    python_module=python_module,
                )
            )
    return NativeFunctions(tuple(entries))


# The lines native_functions.yaml is made of, as upstream writes it and as the scan above
# and the line edits read it: a file of these lines only is a YAML list of mappings, each
# starting with its ``func`` schema. A line of any other shape is what native_yaml_problem
# reports. (A plain YAML value starts with no indicator and holds no ': ', which would start
# a mapping; a line that has its value is not followed by a line indented under it.)
_NO_MAPPING = r"[^:\n]*(?::(?![ ]|$)[^:\n]*)*"  # the rest of a line that holds no ': ' (nor ends with ':')
_PLAIN = rf"""(?:[^\s\#\[\]{{}}'"&*!|>%@`,?:-]|[?:-]\S){_NO_MAPPING}"""
_ONE_LINE = r"""(?:\[[^\n]*\]|\{[^\n]*\}|'[^'\n]*'|"(?:[^"\\\n]|\\.)*")[ ]*(?:\#.*)?"""
_UNDER = r"(?:\n[ ]*(?:\#.*)?(?=\n))*\n[ ]{4}[^\s\#]"  # (comments and blank lines, then) a line indented under
_NOTHING_UNDER = rf"(?!{_UNDER})"
_LINE_SHAPES = rf"""
      [ ]*(?:\#.*)?$                                                    # blank, or a comment
    | -[ ]func:[ ][A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)?\({_NO_MAPPING}$ {_NOTHING_UNDER}   # `- func: name.overload(`
    | [ ][ ][A-Za-z_]\w*:[ ]+(?:{_PLAIN}|{_ONE_LINE})$ {_NOTHING_UNDER}  # a key of the entry and its value,
    | [ ][ ][A-Za-z_]\w*:[ ]*(?:\#.*)?$                                 #   or a key heading a block
    | [ ][ ]-(?:[ ].*)?$                                                # an item of a block list under a key
    | [ ]{{4}}(?:\#.*|-(?:[ ].*)?|[A-Za-z_][\w, ]*:[ ]+{_PLAIN})$        # a dispatch line, a list item
"""
_ODD_LINE = re.compile(rf"^(?!{_LINE_SHAPES}).*", re.M | re.X)
_FIRST_LINE = re.compile(r"^(?![ ]*(?:#.*)?$).*", re.M)  # the first line that is not blank or a comment


def native_yaml_problem(source: SourceFile, table: NativeFunctions | None = None) -> BadInput | None:
    """Why ``native_functions.yaml`` is not one mpsgen may edit, or None.

    The edits work on lines, so they would go on through a file torchgen cannot read, which then
    fails at the start of the build. Asked of the line scan mpsgen reads the rows with (``table``,
    when the caller has it), not of a second, full YAML parse: the file ends with a newline,
    every line has one of the shapes upstream's file is made of (:data:`_LINE_SHAPES`), the
    first is an entry's, and no schema name comes twice (torchgen refuses that too, and an edit
    would touch one copy only)."""
    text = source.text
    if text and not text.endswith("\n"):
        last = text.count("\n") + 1
        return BadInput(
            "the file does not end with a newline: it looks truncated (an interrupted copy or a full disk).",
            location=Location(source.relpath, last),
            hint="Restore it (`git checkout -- aten/src/ATen/native/native_functions.yaml`) and run mpsgen again.",
        )
    first = _FIRST_LINE.search(text)
    if first is None or not first.group().startswith("-"):
        line = text.count("\n", 0, first.start()) + 1 if first else 1
        return BadInput(
            "not a YAML list of `- func:` entries.", location=Location(source.relpath, line), hint="Point --root at a PyTorch checkout."
        )
    odd = _ODD_LINE.search(text)
    if odd is not None:
        return _odd_line_problem(source.relpath, text, odd.start(), odd.group())
    table = table if table is not None else scan_native_functions(text)
    first_of: dict[str, int] = {}
    for e in table.entries:
        if e.name in first_of:
            return BadInput(
                f"`- func: {e.name}` is there twice (lines {first_of[e.name]} and {e.start_line}); torchgen refuses a duplicated "
                "function, and mpsgen would edit only one of them.",
                location=Location(source.relpath, e.start_line),
                hint="Remove one (a merge gone wrong?) before running mpsgen.",
            )
        first_of[e.name] = e.start_line
    return None


_YAML_INDICATORS = "[]{}&*!|>'\"%@`,"
_INVALID = "not valid YAML; torchgen could not read the file either"


def _odd_line_problem(relpath: str, text: str, at: int, line: str) -> BadInput:
    """What is wrong with ``line`` (at offset ``at``), the first of no shape of :data:`_LINE_SHAPES`."""
    number = text.count("\n", 0, at) + 1
    indent = len(line) - len(line.lstrip(" "))
    head, colon, value = line.strip().partition(":")
    value = value.strip()
    under = re.compile(_UNDER).match(text, at + len(line))
    if line[indent : indent + 1] == "\t":
        why = f"it is indented with a tab: {_INVALID} (YAML indents with spaces)"
    elif indent == 0 and not line.startswith("- func:"):
        if line.startswith("-"):
            entry = text.count("\n-", 0, at) + text.startswith("-") + 1
            return BadInput(
                f"entry {entry} does not start with a `func:` schema, as every entry of the file must.",
                location=Location(relpath, number),
                hint="Fix or restore the file before running mpsgen.",
            )
        why = f"it is neither a `- func:` entry nor indented under one: {_INVALID}"
    elif indent not in (0, 2, 4):
        why = f"it is indented by {indent} spaces where the file indents by 0, 2 or 4 (an entry, its keys, their dispatch lines), as mpsgen reads it"
    elif not colon:
        why = f"indented as {'a key of its entry' if indent == 2 else 'a dispatch line'}, it is no `key: value`: {_INVALID}"
    elif indent and not re.fullmatch(r"[A-Za-z_]\w*" if indent == 2 else r"[A-Za-z_][\w, ]*", head):
        why = f"its key {head!r} is not a plain name, as mpsgen reads keys"
    elif ": " in value or value.endswith(":"):
        why = f"its value holds ': ', which would start a mapping there: {_INVALID}"
    elif indent == 0 and value[:1] in tuple(_YAML_INDICATORS):
        why = f"its `func:` opens YAML syntax ({value[0]!r}) where a schema string belongs: {_INVALID}"
    elif value[:1] in tuple(_YAML_INDICATORS):
        why = f"its value opens YAML syntax ({value[0]!r}) that its line does not close: mpsgen reads one-line values, as upstream writes them"
    elif under is not None and value:
        why = f"line {text.count(chr(10), 0, under.end()) + 1} is indented under it, yet it has its value: {_INVALID}"
    elif indent == 0:
        why = "its `func:` is not a schema `name(args) -> returns` after a single space, as mpsgen reads it"
    else:
        why = "mpsgen reads plain keys and one-line values, as upstream writes them, and this line is neither"
    return BadInput(
        f"line {number} ({shorten(line, 60)!r}): {why}.",
        location=Location(relpath, number),
        hint="Fix or restore the file (git diff / git checkout) before running mpsgen.",
    )


def scanned_native_functions(tree: PytorchTree) -> tuple[SourceFile, NativeFunctions]:
    """The yaml as read and its rows, scanned once per tree (a plan, explain and coverage ask
    the same rows), not validated: readers that report on the tree as it is."""
    source = tree.read(NATIVE_FUNCTIONS)
    memo = tree.memo.get(_SCANNED)
    if memo is None or memo[0] is not source:
        memo = tree.memo[_SCANNED] = (source, scan_native_functions(source.text))
    return memo


_SCANNED = "native_functions.yaml: rows"  # in PytorchTree.memo; the validated ones under NATIVE_FUNCTIONS


def read_native_functions(tree: PytorchTree) -> tuple[SourceFile, NativeFunctions]:
    """The yaml as read and its rows, refusing a file that is not valid (see :func:`native_yaml_problem`)."""
    source, table = scanned_native_functions(tree)
    memo = tree.memo.get(NATIVE_FUNCTIONS)
    if memo is None or memo[0] is not source:
        problem = native_yaml_problem(source, table)
        if problem is not None:
            raise problem
        memo = tree.memo[NATIVE_FUNCTIONS] = (source, table)
    return memo
