"""check's child process (mpsgen.tree.prefetch) scans a share of the host files: which files,
and that the index is the same whoever scanned them, or when the child listed other files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mpsgen.check.index import Index
from mpsgen.tree import PytorchTree, prefetch
from mpsgen.tree.forked import usable_cpus
from mpsgen.tree.listing import TreeFiles

from tests.check.conftest import check_in_fresh_process


MPS_OPS = "aten/src/ATen/native/mps/operations"


def host_facts(index: Index) -> list[tuple]:
    return [(h.path, h.text, h.definitions, h.dispatches, h.uses) for h in index.host_files]


def test_the_share_is_the_last_files_within_its_part_of_the_bytes(tmp_path: Path):
    ops = tmp_path / MPS_OPS
    ops.mkdir(parents=True)
    sizes = {"A.mm": 500, "B.mm": 100, "C.mm": 200, "D.mm": 120, "E.mm": 80}  # 1,000 bytes
    for name, size in sizes.items():
        (ops / name).write_text("x" * size)
    files = TreeFiles.__new__(TreeFiles)
    files._safe = {f"{MPS_OPS}/{n}": str(ops / n) for n in sizes}
    hosts = sorted(files._safe)
    # 30% = 300 bytes, from the end: E (80), D (120), C does not fit (200 > 100), B (100)
    assert prefetch.HOST_SHARE == 0.3
    assert prefetch.host_share(files, hosts) == [f"{MPS_OPS}/{n}" for n in ("B.mm", "D.mm", "E.mm")]
    assert prefetch.host_share(files, hosts[:1]) == []  # one file over the share: none
    (ops / "E.mm").unlink()  # a file gone since the listing: the parent scans them all (and reports it)
    assert prefetch.host_share(files, hosts) == []


@pytest.mark.skipif(not hasattr(os, "fork") or usable_cpus() < 2, reason="no child process here")
def test_host_files_scanned_by_the_child_are_those_scanned_in_process(check_tree: Path, monkeypatch):
    """The same HostFile facts and texts, in the same order, whether the child or the parent
    scanned a file (here the child takes them all); a file the child gives up (CRLF line
    ends: the parent's reader handles them) is scanned by the parent."""
    monkeypatch.setattr(prefetch, "HOST_SHARE", 1.0)
    serial = Index(PytorchTree(check_tree))
    assert all(h.definitions for h in serial.host_files) and any(h.uses for h in serial.host_files)
    forked = Index(PytorchTree(check_tree), prefetch=True)
    try:
        share, plain = forked.prefetched("hosts")
        assert len(share) == len(plain) == len(serial.host_files)  # the child scanned them all
        assert host_facts(forked) == host_facts(serial)
    finally:
        forked.close()
    # the last-listed host files are the child's: give one CRLF line ends
    last = sorted(h.path for h in serial.host_files)[-1]
    raw = (check_tree / last).read_bytes()
    (check_tree / last).write_bytes(raw.replace(b"\n", b"\r\n"))
    serial = Index(PytorchTree(check_tree))
    forked = Index(PytorchTree(check_tree), prefetch=True)
    try:
        share, plain = forked.prefetched("hosts")
        assert plain and plain[share.index(last)] is None  # the child gave that file up...
        assert host_facts(forked) == host_facts(serial)  # ...and the parent scanned it
    finally:
        forked.close()


@pytest.mark.skipif(not hasattr(os, "fork") or usable_cpus() < 2, reason="no child process here")
def test_the_check_process_leaves_its_childs_patterns_uncompiled(check_tree: Path):
    """`mpsgen check` compiles the patterns of what its child reads (yaml rows, .cpp candidate
    lines, functor structs, xfail sets) only in the child (mpsgen.lazyre)."""
    then = (
        "from mpsgen.tree import functors, native_rows, resolver, xfails\n"
        "pats = [native_rows._TOKEN, resolver._DEFINITION_LINE_BYTES, functors._STRUCT, xfails._COMPLEX_SET]\n"
        "print(code, [p._compiled is None for p in pats])\n"
    )
    proc = check_in_fresh_process(then, str(check_tree))
    assert proc.stdout.splitlines()[-1] == "0 [True, True, True, True]", proc.stderr


@pytest.mark.skipif(not hasattr(os, "fork") or usable_cpus() < 2, reason="no child process here")
def test_what_the_child_read_of_other_files_is_not_used(check_tree: Path, monkeypatch):
    """The child lists the tree itself (mpsgen check forks it before the index exists): when a
    file appears between its listing and the index's, its host share, .cpp candidates and
    functor structs (read from the other listing) are not used, and the index reads those
    files itself: the same facts and findings as without a child."""
    from mpsgen.check import run_check

    monkeypatch.setattr(prefetch, "HOST_SHARE", 1.0)
    tree = PytorchTree(check_tree)
    child = prefetch.start(tree)
    assert child is not None and child.result(prefetch.JOBS.index("cpp")) is not None  # listed and read
    ops, kernels = check_tree / MPS_OPS, check_tree / "aten/src/ATen/native/mps/kernels"
    (ops / "Zeta.mm").write_text('TORCH_IMPL_FUNC(zeta_out_mps)(const Tensor& self) {\n  exec_binary_kernel(iter, "zeta");\n}\n')
    (kernels / "Zeta.metal").write_text("struct zeta_functor {\n  template <typename T>\n  T operator()(T a) { return a; }\n};\n")
    (check_tree / "aten/src/ATen/native/Zeta.cpp").write_text("Tensor& zeta_out(const Tensor& self) {\n  zeta_stub(self);\n}\n")
    forked = Index(tree, prefetch=child)
    try:
        assert forked.prefetched("hosts")[0] != prefetch.host_share(forked, forked.hosts)
        assert forked.cpp_scan() is None and forked.functor_structs()
        serial = Index(PytorchTree(check_tree))
        assert host_facts(forked) == host_facts(serial) and "aten/src/ATen/native/mps/operations/Zeta.mm" in forked.hosts
        assert [(m.path, m.functor_structs) for m in forked.metal_files] == [(m.path, m.functor_structs) for m in serial.metal_files]
    finally:
        forked.close()
    child = prefetch.start(tree)
    (ops / "Zeta.mm").unlink()
    assert run_check(tree, strict=True, prefetch=child).findings == run_check(PytorchTree(check_tree), strict=True).findings
