"""The jobs ``mpsgen check``'s child process runs (:mod:`mpsgen.tree.forked`), and the
records the parent makes of their results.

A job reads a file as :meth:`mpsgen.check.index.Index.read` takes it as it is (UTF-8, no
CRLF, no conflict marker: :func:`~mpsgen.tree.source.text_as_is`) or gives it up (raises, or None for one file of many):
the parent then reads that file itself, with the tree scanners' checks and messages. Results
are plain tuples (what marshal carries); the parent builds the scanners' records from them
with ``tuple.__new__`` (their own ``__new__`` is a Python function: thousands of rows).
"""

from __future__ import annotations

from mpsgen.errors import BadInput
from mpsgen.records import TYPE_CHECKING
from mpsgen.tree import COMMON_MPS, NATIVE_FUNCTIONS
from mpsgen.tree.forked import Forked
from mpsgen.tree.functors import FunctorStruct, Overload, scan_functors
from mpsgen.tree.native_rows import Dispatch, Row, scan_rows
from mpsgen.tree.resolver import scan_candidates
from mpsgen.tree.source import read_bounded, text_as_is
from mpsgen.tree.xfails import XfailEntry, read_xfail_entries

if TYPE_CHECKING:
    from mpsgen.check.index import Index


def start_child(index: Index, metal_rel: list[str]) -> tuple[Forked | None, dict[str, int]]:
    """The child reading for ``index``, and which job gives which item; jobs in the order
    their results are needed (rows and stubs at the end of the index, the rest by rules)."""
    jobs = {
        "rows": (plain_rows, (index._path(NATIVE_FUNCTIONS),)),
        "stubs": (index._declared_stubs, ()),
        "cpp": (scan_candidates, (index.cpp_files,)),
        "functors": (plain_functors, ([index._path(p) for p in metal_rel],)),
    }
    if index.common_mps_path is not None:
        try:
            jobs["xfails"] = (plain_xfails, (index._path(COMMON_MPS),))
        except BadInput:
            pass  # refused when a rule reads it (one may not)
    child = Forked.start(list(jobs.values()))
    return child, ({name: i for i, name in enumerate(jobs)} if child is not None else {})


def _as_is(path: str) -> str:
    """The file's text as :meth:`~mpsgen.check.index.Index.read` takes it as it is (else the
    parent reads it: raises)."""
    text = text_as_is(read_bounded(path, ""))
    if text is None:
        raise ValueError(f"{path}: read by the parent")
    return text


def plain_rows(path: str) -> list[tuple]:
    """native_functions.yaml's rows (:func:`~mpsgen.tree.native_rows.scan_rows`)."""
    return [(r.base, r.overload, r.start_line, tuple(tuple(d) for d in r.dispatch)) for r in scan_rows(_as_is(path))]


def rows_of(plain: list[tuple]) -> list[Row]:
    new = tuple.__new__
    return [new(Row, (b, o, line, tuple([new(Dispatch, d) for d in disp]))) for b, o, line, disp in plain]


def plain_xfails(path: str) -> list[tuple]:
    """common_mps.py's xfail entries (:func:`~mpsgen.tree.xfails.read_xfail_entries`)."""
    return [tuple(e) for e in read_xfail_entries(_as_is(path))]


def xfails_of(plain: list[tuple]) -> list[XfailEntry]:
    return [XfailEntry(n, k, tuple(d) if d is not None else None, line) for n, k, d, line in plain]


def plain_functors(paths: list[str]) -> list[list[tuple] | None]:
    """Each .metal file's functor structs (:func:`~mpsgen.tree.functors.scan_functors`);
    None for a file not read as it is."""
    out: list[list[tuple] | None] = []
    for path in paths:
        try:
            text = _as_is(path)
        except (BadInput, ValueError):
            out.append(None)
            continue
        structs = scan_functors(text) if "_functor" in text else []
        out.append([(f.name, f.line, tuple(tuple(o) for o in f.overloads)) for f in structs])
    return out


def functors_of(plain: list[tuple]) -> list[FunctorStruct]:
    new = tuple.__new__
    return [new(FunctorStruct, (name, line, tuple([new(Overload, o) for o in overloads]))) for name, line, overloads in plain]
