"""check's child process scans a share of the host files (mpsgen.check.prefetch_jobs): which
files, and that the index is the same whoever scanned them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mpsgen.check import prefetch_jobs
from mpsgen.check.index import Index
from mpsgen.tree import PytorchTree
from mpsgen.tree.forked import usable_cpus

from tests.check.conftest import check_in_fresh_process


MPS_OPS = "aten/src/ATen/native/mps/operations"


def host_facts(index: Index) -> list[tuple]:
    return [(h.path, h.text, h.definitions, h.dispatches, h.uses) for h in index.host_files]


def test_the_share_is_the_last_files_within_its_part_of_the_bytes(tmp_path: Path, monkeypatch):
    ops = tmp_path / MPS_OPS
    ops.mkdir(parents=True)
    sizes = {"A.mm": 500, "B.mm": 100, "C.mm": 200, "D.mm": 120, "E.mm": 80}  # 1,000 bytes
    for name, size in sizes.items():
        (ops / name).write_text("x" * size)
    index = Index.__new__(Index)
    index._safe = {f"{MPS_OPS}/{n}": str(ops / n) for n in sizes}
    hosts = sorted(index._safe)
    # 20% = 200 bytes, from the end: E (80), D (120), then nothing fits (C 200, B 100 > 0)
    assert prefetch_jobs.HOST_SHARE == 0.2
    assert prefetch_jobs.host_share(index, hosts) == [f"{MPS_OPS}/{n}" for n in ("D.mm", "E.mm")]
    monkeypatch.setattr(prefetch_jobs, "HOST_SHARE", 0.3)  # 300 bytes: E, D, C does not fit (200 > 100), B (100)
    assert prefetch_jobs.host_share(index, hosts) == [f"{MPS_OPS}/{n}" for n in ("B.mm", "D.mm", "E.mm")]
    assert prefetch_jobs.host_share(index, hosts[:1]) == []  # one file over the share: none
    (ops / "E.mm").unlink()  # a file gone since the listing: the parent scans them all (and reports it)
    assert prefetch_jobs.host_share(index, hosts) == []


@pytest.mark.skipif(not hasattr(os, "fork") or usable_cpus() < 2, reason="no child process here")
def test_host_files_scanned_by_the_child_are_those_scanned_in_process(check_tree: Path, monkeypatch):
    """The same HostFile facts and texts, in the same order, whether the child or the parent
    scanned a file (here the child takes them all); a file the child gives up (CRLF line
    ends: the parent's reader handles them) is scanned by the parent."""
    monkeypatch.setattr(prefetch_jobs, "HOST_SHARE", 1.0)
    serial = Index(PytorchTree(check_tree))
    assert all(h.definitions for h in serial.host_files) and any(h.uses for h in serial.host_files)
    forked = Index(PytorchTree(check_tree), prefetch=True)
    try:
        assert len(forked.prefetched("hosts")) == len(serial.host_files)  # the child scanned them all
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
        plain = forked.prefetched("hosts")
        assert plain and None in plain  # the child gave that file up...
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


def test_rules_run_in_any_order_with_the_same_findings(real_tree: Path):
    """run_check runs the rules that read what the child is still reading last (Rule.reads,
    in the order of prefetch_jobs.ITEMS, which is the child's job order); no rule depends on
    another having run first."""
    from mpsgen.check import RULES
    from mpsgen.check.prefetch_jobs import ITEMS
    from mpsgen.check.rules import Facts

    assert all(set(r.reads) <= set(ITEMS) for r in RULES.values())
    assert {c for c, r in RULES.items() if "cpp" in r.reads} >= {"MPS002", "MPS008", "MPS009"}
    in_order = Facts(Index(PytorchTree(real_tree)))
    backwards = Facts(Index(PytorchTree(real_tree)))
    first = {f for r in RULES.values() for f in r.run(in_order)}
    second = {f for r in reversed(list(RULES.values())) for f in r.run(backwards)}
    assert first == second and first


@pytest.mark.skipif(not hasattr(os, "fork") or usable_cpus() < 2, reason="no child process here")
def test_the_child_reads_in_the_order_of_items(check_tree: Path):
    index = Index(PytorchTree(check_tree), prefetch=True)
    try:
        assert list(index._jobs) == list(prefetch_jobs.ITEMS)
    finally:
        index.close()
