"""`mpsgen check` on the practice tree of each torch release: what it finds comes from the
practice sources, never from what a release added (XPU/MTIA keys, new test lists)."""

from __future__ import annotations

import re
from pathlib import Path

from mpsgen.check import run_check
from mpsgen.tree import NATIVE_FUNCTIONS, PytorchTree


def test_the_same_findings_on_both_releases(real_tree: Path):
    """2.13 and 2.14.1 give the one finding of the practice sources themselves (pow's
    half-migrated rows), nothing caused by 2.14.1's keys."""
    result = run_check(PytorchTree(real_tree))
    assert [(f.code, f.path, f.symbols[0] if f.symbols else "") for f in result.findings] == [
        ("MPS008", NATIVE_FUNCTIONS, "pow.Tensor_Tensor_out"),
    ]


def test_strict_findings_are_the_rows_whose_kernels_no_source_defines(real_tree: Path):
    """With --strict, the MPS001 findings a practice tree (a sample of the sources) gives are
    exactly the MPS-only rows whose kernel no .mm of the tree names, read independently."""
    result = run_check(PytorchTree(real_tree), strict=True, codes=frozenset({"MPS001"}))
    sources = "\n".join(p.read_text() for p in (real_tree / "aten/src/ATen/native/mps").rglob("*.mm"))
    yaml_lines = (real_tree / NATIVE_FUNCTIONS).read_text().split("\n")
    expected = set()
    for number, line in enumerate(yaml_lines, 1):
        m = re.match(r"    MPS: (\w+)$", line)
        if m and not re.search(rf"\b{m.group(1)}\b", sources):
            expected.add(number)
    found = {f.line for f in result.findings if f.path == NATIVE_FUNCTIONS}
    assert found == expected and len(found) > 100
