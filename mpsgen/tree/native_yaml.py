"""A fast, line-based scanner of native_functions.yaml.

Reads the ~600 KB file in tens of milliseconds without building a YAML tree: every entry
starts at a ``- func:`` line in column 0 and its dispatch table is the block of
4-space-indented ``KEYS: kernel`` lines under ``  dispatch:``. Line numbers are 1-based.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

FUNC_HEADER = re.compile(r"- func: ([A-Za-z0-9_]+)(?:\.([A-Za-z0-9_]+))?\(")
_DISPATCH_LINE = re.compile(r"    ([A-Za-z0-9_, ]+):\s*([A-Za-z0-9_:]+)\s*(#.*)?$")


@dataclass(frozen=True)
class DispatchEntry:
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


@dataclass(frozen=True)
class NativeFunction:
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
