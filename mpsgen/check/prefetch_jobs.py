"""The records the check index makes of what its child process read
(:mod:`mpsgen.tree.prefetch`): results come as plain tuples (what marshal carries), and the
scanners' records are built from them with ``tuple.__new__`` (their own ``__new__`` is a
Python function: thousands of rows). A result read from a listing of files that is not the
index's own (a file added or removed in between) is not used: the index reads those files
itself.
"""

from __future__ import annotations

from mpsgen.records import TYPE_CHECKING
from mpsgen.tree.functors import FunctorStruct, Overload
from mpsgen.tree.host import Definition, Dispatch as HostDispatch, HostFile, KernelUse, scan_host
from mpsgen.tree.native_rows import Dispatch, Row
from mpsgen.tree.xfails import XfailEntry

if TYPE_CHECKING:
    from mpsgen.check.index import Index


def rows_of(plain: list[tuple]) -> list[Row]:
    new = tuple.__new__
    return [new(Row, (b, o, line, tuple([new(Dispatch, d) for d in disp]))) for b, o, line, disp in plain]


def hosts_of(index: Index, share: list[str]) -> dict[str, HostFile]:
    """The child's share of the host files (:func:`mpsgen.tree.prefetch.host_share`),
    scanned in-process where it gave one up (or listed other files)."""
    got = index.prefetched("hosts")
    plain = got[1] if isinstance(got, tuple) and len(got) == 2 and got[0] == share and len(got[1]) == len(share) else [None] * len(share)
    out = {}
    for rel, facts in zip(share, plain):
        if facts is not None:
            index._texts[rel] = facts[0]
            out[rel] = host_of(rel, *facts)
        else:
            out[rel] = scan_host(rel, index.read(rel), index._memo)
    return out


def host_of(rel: str, text: str, definitions: list, dispatches: list, uses: list) -> HostFile:
    new = tuple.__new__
    hf = HostFile(rel, text)
    hf.definitions = [new(Definition, d) for d in definitions]
    hf.dispatches = [new(HostDispatch, d) for d in dispatches]
    hf.uses = [new(KernelUse, u) for u in uses]
    return hf


def cpp_of(index: Index) -> tuple | None:
    """The resolver's .cpp candidates, if the child indexed the index's own .cpp files."""
    got = index.prefetched("cpp")
    if isinstance(got, tuple) and len(got) == 3 and got[0] == [rel for rel, _ in index.cpp_files]:
        return got[1:]
    return None


def functors_of(index: Index) -> list[list[FunctorStruct] | None] | None:
    """Each .metal file's functor structs (None where the child gave the file up), if the
    child read the index's own .metal files."""
    got = index.prefetched("functors")
    if not isinstance(got, list) or [rel for rel, _ in got] != [m.path for m in index.metal_files]:
        return None
    new = tuple.__new__
    return [
        None if structs is None else [new(FunctorStruct, (name, line, tuple([new(Overload, o) for o in overloads]))) for name, line, overloads in structs]
        for _, structs in got
    ]


def xfails_of(plain: list[tuple]) -> list[XfailEntry]:
    return [XfailEntry(n, k, tuple(d) if d is not None else None, line) for n, k, d, line in plain]
