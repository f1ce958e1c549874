"""The jobs ``mpsgen check``'s child process runs (:mod:`mpsgen.tree.forked`), and the
records the parent makes of their results.

A job reads a file as :meth:`mpsgen.check.index.Index.read` takes it as it is (UTF-8, no
CRLF, no conflict marker: :func:`~mpsgen.tree.source.text_as_is`) or gives it up (raises, or None for one file of many):
the parent then reads that file itself, with the tree scanners' checks and messages. Results
are plain tuples (what marshal carries); the parent builds the scanners' records from them
with ``tuple.__new__`` (their own ``__new__`` is a Python function: thousands of rows).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator

from mpsgen.errors import BadInput
from mpsgen.records import TYPE_CHECKING
from mpsgen.tree import COMMON_MPS, NATIVE_FUNCTIONS
from mpsgen.tree.forked import Forked
from mpsgen.tree.functors import FunctorStruct, Overload, scan_functors
from mpsgen.tree.host import Definition, Dispatch as HostDispatch, HostFile, KernelUse, scan_host
from mpsgen.tree.native_rows import Dispatch, Row, scan_rows
from mpsgen.tree.resolver import scan_candidates
from mpsgen.tree.source import read_bounded, text_as_is
from mpsgen.tree.xfails import XfailEntry, read_xfail_entries

if TYPE_CHECKING:
    from mpsgen.check.index import Index


# what the child reads, in the order it delivers them: the order they are needed (the host
# share, rows and stubs by the index; the rest by the rules that read them: Rule.reads)
ITEMS = ("hosts", "rows", "stubs", "cpp", "xfails", "functors")


def start_child(index: Index, metal_rel: list[str], host_share: list[str]) -> tuple[Forked | None, dict[str, int]]:
    """The child reading for ``index``, and which job gives which item; jobs in the order
    their results are needed (the share of host files and the rows, then the stubs, at the
    end of the index; the rest by rules)."""
    jobs = {
        "hosts": (plain_hosts, ([(rel, index._path(rel)) for rel in host_share],)),
        "rows": (plain_rows, (index._path(NATIVE_FUNCTIONS),)),
        "stubs": (index._declared_stubs, ()),
        "cpp": (scan_candidates, (index.cpp_files,)),
    }
    if index.common_mps_path is not None:
        try:
            jobs["xfails"] = (plain_xfails, (index._path(COMMON_MPS),))
        except BadInput:
            pass  # refused when a rule reads it (one may not)
    jobs["functors"] = (plain_functors, ([index._path(p) for p in metal_rel],))
    child = Forked.start(list(jobs.values()))
    return child, ({name: i for i, name in enumerate(jobs)} if child is not None else {})


def _as_is(path: str) -> str:
    """The file's text as :meth:`~mpsgen.check.index.Index.read` takes it as it is (else the
    parent reads it: raises)."""
    text = text_as_is(read_bounded(path, ""))
    if text is None:
        raise ValueError(f"{path}: read by the parent")
    return text


def _texts_as_is(paths: Iterable[str]) -> Iterator[str | None]:
    """Each file's text as :func:`_as_is` reads it, or None for one it gives up."""
    for path in paths:
        try:
            yield _as_is(path)
        except (BadInput, ValueError):
            yield None


def plain_rows(path: str) -> list[tuple]:
    """native_functions.yaml's rows (:func:`~mpsgen.tree.native_rows.scan_rows`)."""
    return scan_rows(_as_is(path), plain=True)


def rows_of(plain: list[tuple]) -> list[Row]:
    new = tuple.__new__
    return [new(Row, (b, o, line, tuple([new(Dispatch, d) for d in disp]))) for b, o, line, disp in plain]


# the part of the host files' bytes the child scans: the parent scans the rest and the .metal
# files meanwhile, and the child its other jobs, whose results are needed only later. On
# bench_check's tree the whole run took 95 ms (median) with none, 90 with 25-35%, 93 with
# 45-55%; once the rules reading the child's items ran last, the child was the one late
# (fastest runs 81 ms with 10-20%, 85 with 30%).
HOST_SHARE = 0.2


def host_share(index: Index, hosts: list[str]) -> list[str]:
    """The host files the child scans: from the last one listed, those that fit in
    :data:`HOST_SHARE` of all their bytes (none if one cannot be sized)."""
    try:
        sizes = [os.stat(index._path(rel)).st_size for rel in hosts]
    except (OSError, BadInput):
        return []
    budget = sum(sizes) * HOST_SHARE
    share = []
    for rel, size in zip(reversed(hosts), reversed(sizes)):
        if size <= budget:
            share.append(rel)
            budget -= size
    return share[::-1]


def plain_hosts(files: list[tuple[str, str]]) -> list[tuple | None]:
    """Each host file's text and facts (:func:`~mpsgen.tree.host.scan_host`) as plain
    tuples; None for a file not read as it is."""
    out: list[tuple | None] = []
    memo: dict = {}
    for (rel, _), text in zip(files, _texts_as_is(path for _, path in files)):
        if text is None:
            out.append(None)
            continue
        hf = scan_host(rel, text, memo)
        out.append((text, [tuple(d) for d in hf.definitions], [tuple(d) for d in hf.dispatches], [tuple(u) for u in hf.uses]))
    return out


def hosts_of(index: Index, share: list[str]) -> dict[str, HostFile]:
    """The child's share of the host files (:func:`host_share`), scanned in-process where it
    gave one up."""
    plain = index.prefetched("hosts")
    if not isinstance(plain, list) or len(plain) != len(share):
        plain = [None] * len(share)
    out = {}
    for rel, got in zip(share, plain):
        if got is not None:
            index._texts[rel] = got[0]
            out[rel] = host_of(rel, *got)
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


def plain_xfails(path: str) -> list[tuple]:
    """common_mps.py's xfail entries (:func:`~mpsgen.tree.xfails.read_xfail_entries`)."""
    return [tuple(e) for e in read_xfail_entries(_as_is(path))]


def xfails_of(plain: list[tuple]) -> list[XfailEntry]:
    return [XfailEntry(n, k, tuple(d) if d is not None else None, line) for n, k, d, line in plain]


def plain_functors(paths: list[str]) -> list[list[tuple] | None]:
    """Each .metal file's functor structs (:func:`~mpsgen.tree.functors.scan_functors`);
    None for a file not read as it is."""
    out: list[list[tuple] | None] = []
    for text in _texts_as_is(paths):
        if text is None:
            out.append(None)
            continue
        structs = scan_functors(text) if "_functor" in text else []
        out.append([(f.name, f.line, tuple(tuple(o) for o in f.overloads)) for f in structs])
    return out


def functors_of(plain: list[tuple]) -> list[FunctorStruct]:
    new = tuple.__new__
    return [new(FunctorStruct, (name, line, tuple([new(Overload, o) for o in overloads]))) for name, line, overloads in plain]
