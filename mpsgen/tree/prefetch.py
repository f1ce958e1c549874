"""What ``mpsgen check``'s child process (:mod:`mpsgen.tree.forked`) reads of a tree while
the check process scans the rest: a share of the MPS host sources, the yaml rows, the
DECLARE_DISPATCH headers, the native ``.cpp`` candidate lines, the ``.metal`` functor
structs and common_mps.py's xfails, in that order (the order the check needs them).

The check process forks before it imports the scanners (:func:`start`): the child lists
the tree itself (:class:`~mpsgen.tree.listing.TreeFiles`, as the check index does) and
imports only what its jobs need, while the parent imports the rest; the pages the two
would otherwise share are not copied on every write (~3-5 us a page on a VM). So this
module imports nothing heavy at its top.

A job reads a file as :meth:`mpsgen.check.index.Index.read` takes it as it is (UTF-8, no
CRLF, no conflict marker: :func:`~mpsgen.tree.source.text_as_is`) or gives it up (raises,
or None for one file of many): the parent then reads that file itself, with the tree
scanners' checks and messages. Results are plain tuples, lists and dicts (what marshal
carries), with the file lists they were read from where the parent's listing must agree
(:mod:`mpsgen.check.prefetch_jobs` builds the scanners' records from them).
"""

from __future__ import annotations

import os

from mpsgen.records import TYPE_CHECKING
from mpsgen.tree.forked import Forked

if TYPE_CHECKING:
    from mpsgen.tree import PytorchTree
    from mpsgen.tree.listing import TreeFiles

JOBS = ("hosts", "rows", "stubs", "cpp", "functors", "xfails")

# the part of the host files' bytes the child scans: the parent scans the rest and the .metal
# files meanwhile, and the child its other jobs, whose results are needed only later. On
# bench_check's tree the whole run took 95 ms (median) with none, 90 with 25-35%, 93 with 45-55%.
HOST_SHARE = 0.3


def start(tree: PytorchTree) -> Forked | None:
    """A child process running :data:`JOBS` on ``tree`` (None where none can be started)."""
    return Forked.start([(run_job, (tree.root_dir, name)) for name in JOBS])


_LISTED: dict[str, TreeFiles] = {}  # (in the child) the tree's files, listed by the first job


def run_job(root: str, name: str) -> object:
    files = _LISTED.get(root)
    if files is None:
        from mpsgen.tree import PytorchTree
        from mpsgen.tree.listing import TreeFiles

        files = _LISTED[root] = TreeFiles(PytorchTree(root))
        files.list_tree()
    return _READERS[name](files)


def host_share(files: TreeFiles, hosts: list[str]) -> list[str]:
    """The host files the child scans: from the last one listed, those that fit in
    :data:`HOST_SHARE` of all their bytes (none if one cannot be sized)."""
    from mpsgen.errors import BadInput

    try:
        sizes = [os.stat(files._path(rel)).st_size for rel in hosts]
    except (OSError, BadInput):
        return []
    budget = sum(sizes) * HOST_SHARE
    share = []
    for rel, size in zip(reversed(hosts), reversed(sizes)):
        if size <= budget:
            share.append(rel)
            budget -= size
    return share[::-1]


def _as_is(path: str) -> str:
    """The file's text as the check index takes it as it is (else the parent reads it: raises)."""
    from mpsgen.tree.source import read_bounded, text_as_is

    text = text_as_is(read_bounded(path, ""))
    if text is None:
        raise ValueError(f"{path}: read by the parent")
    return text


def _hosts(files: TreeFiles) -> tuple[list[str], list[tuple | None]]:
    """The share's files, and each one's text and facts (:func:`~mpsgen.tree.host.scan_host`)
    as plain tuples, None for a file not read as it is."""
    from mpsgen.errors import BadInput
    from mpsgen.tree.host import scan_host

    share = host_share(files, files.hosts)
    out: list[tuple | None] = []
    memo: dict = {}
    for rel in share:
        try:
            text = _as_is(files._path(rel))
        except (BadInput, ValueError):
            out.append(None)
            continue
        hf = scan_host(rel, text, memo)
        out.append((text, [tuple(d) for d in hf.definitions], [tuple(d) for d in hf.dispatches], [tuple(u) for u in hf.uses]))
    return share, out


def _rows(files: TreeFiles) -> list[tuple]:
    """native_functions.yaml's rows (:func:`~mpsgen.tree.native_rows.scan_rows`)."""
    from mpsgen.tree import NATIVE_FUNCTIONS
    from mpsgen.tree.native_rows import scan_rows

    return scan_rows(_as_is(files._path(NATIVE_FUNCTIONS)), plain=True)


def _stubs(files: TreeFiles) -> dict[str, tuple[str, int]]:
    return files._declared_stubs()


def _cpp(files: TreeFiles) -> tuple[list[str], dict, list[int]]:
    """The native .cpp files' candidate definition lines (:func:`~mpsgen.tree.resolver.scan_candidates`),
    after the files they index."""
    from mpsgen.tree.resolver import scan_candidates

    return ([rel for rel, _ in files.cpp_files], *scan_candidates(files.cpp_files))


def _functors(files: TreeFiles) -> list[tuple[str, list[tuple] | None]]:
    """Each .metal file and its functor structs (:func:`~mpsgen.tree.functors.scan_functors`);
    None for a file not read as it is."""
    from mpsgen.errors import BadInput
    from mpsgen.tree.functors import scan_functors

    out: list[tuple[str, list[tuple] | None]] = []
    for rel in files.metal_rel:
        try:
            text = _as_is(files._path(rel))
        except (BadInput, ValueError):
            out.append((rel, None))
            continue
        structs = scan_functors(text) if "_functor" in text else []
        out.append((rel, [(f.name, f.line, tuple(tuple(o) for o in f.overloads)) for f in structs]))
    return out


def _xfails(files: TreeFiles) -> list[tuple] | None:
    """common_mps.py's xfail entries (:func:`~mpsgen.tree.xfails.read_xfail_entries`)."""
    from mpsgen.tree.xfails import read_xfail_entries

    if files.common_mps_path is None:
        return None
    return [tuple(e) for e in read_xfail_entries(_as_is(files._path(files.common_mps_path)))]


_READERS = {"hosts": _hosts, "rows": _rows, "stubs": _stubs, "cpp": _cpp, "functors": _functors, "xfails": _xfails}
assert tuple(_READERS) == JOBS
