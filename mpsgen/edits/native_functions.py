"""Edit ``native_functions.yaml`` line by line: MPS joins a row's shared CPU/CUDA kernel line.

No YAML round trip: only the touched dispatch lines change, every other byte stays. The
result is then proved: each touched entry, parsed alone with ``yaml.CSafeLoader`` before and
after, differs only in its dispatch table, exactly as intended.
"""

from __future__ import annotations

import re

import yaml

from mpsgen.core.errors import MpsgenError, Refused
from mpsgen.tree.native_yaml import NativeFunction, NativeFunctions, scan_native_functions
from mpsgen.tree.source import text_lines

_KEYS = re.compile(r"^(    )([A-Za-z0-9_, ]+?)(\s*:\s*)(\S.*)$")

try:  # the C loader is ~10x faster; fall back where libyaml is missing
    _Loader = yaml.CSafeLoader
except AttributeError:  # pragma: no cover
    _Loader = yaml.SafeLoader  # type: ignore[misc]


def _join_mps(line: str) -> str:
    m = _KEYS.match(line)
    assert m, line
    # appended after every other key, as upstream's migrations write it today
    # (`CPU, CUDA, XPU: acosh_out` -> `CPU, CUDA, XPU, MPS: acosh_out`)
    return f"{m.group(1)}{m.group(2)}, MPS{m.group(3)}{m.group(4)}"


def add_mps_to_rows(text: str, rows: list[str], scanned: NativeFunctions | None = None) -> str:
    """``CPU, CUDA: k`` -> ``CPU, CUDA, MPS: k`` on each named row (no-op where MPS is there).
    ``scanned`` is ``text`` already scanned, when the caller has it."""
    return _edit_rows(text, rows, migrate=False, scanned=scanned)


def migrate_rows(text: str, rows: list[str], scanned: NativeFunctions | None = None) -> str:
    """Drop a row's ``MPS: <x>_mps`` line and add MPS to its shared CPU/CUDA line."""
    return _edit_rows(text, rows, migrate=True, scanned=scanned)


def _edit_rows(text: str, rows: list[str], *, migrate: bool, scanned: NativeFunctions | None) -> str:
    table = (scanned or scan_native_functions(text)).by_name()
    lines = list(text_lines(text))
    drop: set[int] = set()
    touched: list[NativeFunction] = []
    for row in rows:
        entry = table.get(row)
        if entry is None:
            raise Refused(f"native_functions.yaml has no row {row!r}.")
        shared = entry.shared_entry
        if shared is None and migrate:
            split = _split_host_kernel(entry)
            if split is not None:
                # `CPU: k` / `CUDA: k` on their own lines: the MPS line names k (the fewest bytes)
                for d in entry.mps_entries:
                    if d.keys == ("MPS",) and d.kernel != split:
                        i = d.line - 1
                        head, _, rest = lines[i].partition(":")
                        lines[i] = head + ":" + rest.replace(d.kernel, split, 1)
                touched.append(entry)
                continue
        if shared is None:
            raise Refused(
                f"row {row} (native_functions.yaml:{entry.start_line}) has no shared `CPU, CUDA: <kernel>` line for MPS to join."
            )
        separate = [d for d in entry.mps_entries if d is not shared]
        if shared.has_mps and not separate:
            continue
        if separate and not migrate:
            raise Refused(
                f"row {row} already dispatches MPS to {separate[0].kernel} (native_functions.yaml:{separate[0].line}).",
                hint="Use `mpsgen migrate-from-mpsgraph` to move it onto the shared kernel.",
            )
        if not shared.has_mps:
            lines[shared.line - 1] = _join_mps(lines[shared.line - 1])
        for d in separate:
            if d.keys != ("MPS",):
                raise Refused(
                    f"row {row}: the MPS kernel line `{d.text.strip()}` (native_functions.yaml:{d.line}) also names "
                    f"{', '.join(k for k in d.keys if k != 'MPS')}; edit it by hand."
                )
            drop.add(d.line - 1)
        touched.append(entry)
    for i in sorted(drop, reverse=True):
        del lines[i]
    new_text = "\n".join(lines)
    verify(text, new_text, touched)
    return new_text


def _split_host_kernel(entry: NativeFunction) -> str | None:
    """The kernel a row's separate ``CPU:`` and ``CUDA:`` lines share, if they do."""
    cpu = [d.kernel for d in entry.dispatch if "CPU" in d.keys]
    cuda = [d.kernel for d in entry.dispatch if "CUDA" in d.keys]
    return cpu[0] if cpu and cuda and cpu[0] == cuda[0] else None


def _entry_text(lines: list[str], entry: NativeFunction, shift: int = 0, length: int | None = None) -> str:
    start = entry.start_line - 1 + shift
    end = start + (length if length is not None else entry.end_line - entry.start_line + 1)
    return "\n".join(lines[start:end]) + "\n"


def verify(before: str, after: str, touched: list[NativeFunction]) -> None:
    """Prove the edit: touched entries still parse and differ only in their dispatch; nothing else moved."""
    if not touched:
        if before != after:
            raise MpsgenError("internal error: native_functions.yaml changed without a touched row; nothing written.")
        return
    old_lines = text_lines(before)
    removed = len(old_lines) - 1 - after.count("\n")
    # the touched entries are re-read from the span of lines that holds them all (the edit
    # changes lines inside them only: the lines before the first one did not move): old lines
    # [first, end), new lines [first, last)
    first = min(e.start_line for e in touched) - 1
    end = max(e.end_line for e in touched)
    last = end - removed
    # the new span is read from where the unchanged lines before it end, the lines after it
    # compared as one string: the ~16k lines of the edited text are not split one by one
    at = sum(map(len, old_lines[:first])) + first  # offset of the span in both texts
    old_rest = before[at + sum(map(len, old_lines[first:end])) + end - first :]
    span = None
    if last > first and after.startswith(before[:at]):
        parts = after[at:].split("\n", last - first)
        if len(parts) == last - first + 1:
            span, new_rest, same_head = parts[:-1], parts[-1], True
    if span is None:  # lines moved before the span (refused below): read the whole text as lines
        new_lines = text_lines(after)
        span, new_rest, same_head = list(new_lines[first:last]), "\n".join(new_lines[last:]), old_lines[:first] == new_lines[:first]
    new_scan = scan_native_functions("\n".join(span) + "\n").by_name()
    for entry in touched:
        new_entry = new_scan.get(entry.name)
        if new_entry is None:
            raise MpsgenError(f"internal error: row {entry.name} vanished while editing; nothing written.")
        old = yaml.load(_entry_text(old_lines, entry), Loader=_Loader)
        new = yaml.load(_entry_text(span, new_entry), Loader=_Loader)
        old_map, new_map = old[0], new[0]
        if {k: v for k, v in old_map.items() if k != "dispatch"} != {k: v for k, v in new_map.items() if k != "dispatch"}:
            raise MpsgenError(f"internal error: editing {entry.name} changed more than its dispatch; nothing written.")
        kernels = {v for v in new_map["dispatch"].values()}
        mps_keys = [k for k in new_map["dispatch"] if "MPS" in [x.strip() for x in k.split(",")]]
        host = {v for k, v in new_map["dispatch"].items() if {"CPU", "CUDA"} & {x.strip() for x in k.split(",")}}
        if len(mps_keys) != 1 or not ("CPU" in mps_keys[0] or new_map["dispatch"][mps_keys[0]] in host):
            raise MpsgenError(f"internal error: {entry.name} did not end with MPS on the CPU/CUDA kernel.")
        if not kernels <= set(old_map["dispatch"].values()):
            raise MpsgenError(f"internal error: editing {entry.name} introduced a new kernel name; nothing written.")
    # every line outside the touched dispatch lines is unchanged, in order: the lines before
    # and after the span of the touched entries compared whole, those of the span one by one
    changed_old = {d.line - 1 for e in touched for d in e.dispatch if d.shared_cpu_cuda or d.has_mps}
    kept_old = [ln for i, ln in enumerate(old_lines[first:end], first) if i not in changed_old]
    changed_new = {d.line - 1 for e in touched for d in new_scan[e.name].dispatch if d.shared_cpu_cuda or d.has_mps}
    kept_new = [ln for i, ln in enumerate(span) if i not in changed_new]
    if removed < 0 or kept_old != kept_new or not same_head or old_rest != new_rest:
        raise MpsgenError("internal error: native_functions.yaml changed outside the touched rows; nothing written.")
