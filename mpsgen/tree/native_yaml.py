"""A fast, line-based scanner of native_functions.yaml.

Reads the ~600 KB file in tens of milliseconds without building a YAML tree: every entry
starts at a ``- func:`` line in column 0 and its dispatch table is the block of
4-space-indented ``KEYS: kernel`` lines under ``  dispatch:``. Line numbers are 1-based.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, NamedTuple

from mpsgen.errors import BadInput, Location
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


class NativeFunctions(NamedTuple):
    entries: tuple[NativeFunction, ...]

    def by_name(self) -> dict[str, NativeFunction]:
        return {e.name: e for e in self.entries}

    def of_op(self, op: str) -> list[NativeFunction]:
        """Rows of ``op``: its overloads and its in-place variant ``op_``."""
        return [e for e in self.entries if e.base == op or e.base == f"{op}_"]


def scan_native_functions(text: str) -> NativeFunctions:
    entries: list[NativeFunction] = []
    lines = text.split("\n")
    n = len(lines)
    i = 0
    while i < n:
        line = lines[i]
        if not line.startswith("- func:"):
            i += 1
            continue
        start = i
        m = FUNC_HEADER.match(line)
        j = i + 1
        while j < n and not lines[j].startswith("- func:"):
            j += 1
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
        i = j
    return NativeFunctions(tuple(entries))


def native_yaml_problem(source: SourceFile) -> BadInput | None:
    """Why ``native_functions.yaml`` is not one mpsgen may edit, or None.

    The edits work on lines, so they would go on through a file YAML cannot read; torchgen
    then fails at the start of the build. This parses the whole file once (libyaml, ~0.1 s)
    and asks what torchgen asks of its shape: a list of mappings, each with a ``func``."""
    import yaml  # not at module level: check scans the file without it

    text = source.text
    if text and not text.endswith("\n"):
        last = text.count("\n") + 1
        return BadInput(
            "the file does not end with a newline: it looks truncated (an interrupted copy or a full disk).",
            location=Location(source.relpath, last),
            hint="Restore it (`git checkout -- aten/src/ATen/native/native_functions.yaml`) and run mpsgen again.",
        )
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        data = yaml.load(text, Loader=loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        return BadInput(
            f"not valid YAML ({exc.problem or exc}); torchgen could not read it either.",
            location=Location(source.relpath, mark.line + 1 if mark else 0),
            hint="Fix or restore the file (git diff / git checkout) before running mpsgen.",
        )
    except yaml.YAMLError as exc:
        return BadInput(f"not valid YAML ({exc}).", location=Location(source.relpath), hint="Fix or restore the file before running mpsgen.")
    if not isinstance(data, list):
        return BadInput(
            "not a YAML list of `- func:` entries.", location=Location(source.relpath, 1), hint="Point --root at a PyTorch checkout."
        )
    first_of: dict[str, int] = {}
    for i, item in enumerate(data):
        if not isinstance(item, dict) or not isinstance(item.get("func"), str):
            line = _nth_entry_line(text, i)
            return BadInput(
                f"entry {i + 1} is not a mapping with a `func:` schema, as every entry of the file must be.",
                location=Location(source.relpath, line),
                hint="Fix or restore the file before running mpsgen.",
            )
        name = item["func"].partition("(")[0].strip()
        if name in first_of:  # torchgen refuses it too; an edit would touch one copy only
            first, again = _nth_entry_line(text, first_of[name]), _nth_entry_line(text, i)
            return BadInput(
                f"`- func: {name}` is there twice (lines {first} and {again}); torchgen refuses a duplicated "
                "function, and mpsgen would edit only one of them.",
                location=Location(source.relpath, again),
                hint="Remove one (a merge gone wrong?) before running mpsgen.",
            )
        first_of[name] = i
    return None


def _nth_entry_line(text: str, index: int) -> int:
    seen = -1
    for number, line in enumerate(text.split("\n"), 1):
        if line.startswith("-"):
            seen += 1
            if seen == index:
                return number
    return 0


def read_native_functions(tree: PytorchTree) -> tuple[SourceFile, NativeFunctions]:
    """The yaml as read and its rows, refusing a file that is not valid (see :func:`native_yaml_problem`)."""
    from mpsgen.tree import NATIVE_FUNCTIONS

    source = tree.read(NATIVE_FUNCTIONS)
    memo = tree.memo.get(NATIVE_FUNCTIONS)
    if memo is None or memo[0] is not source:
        problem = native_yaml_problem(source)
        if problem is not None:
            raise problem
        memo = tree.memo[NATIVE_FUNCTIONS] = (source, scan_native_functions(source.text))
    return memo
