"""MPS014 (stale-aoti-c-shim) on each release's real fallback_ops.py, c_shim_mps.h and
native_functions.yaml: silent on the files as shipped, and each injected mismatch is one
finding at the place it names."""

from __future__ import annotations

import re
from pathlib import Path

from mpsgen.check import run_check
from mpsgen.tree import NATIVE_FUNCTIONS, PytorchTree
from mpsgen.tree.aoti import C_SHIM_MPS, FALLBACK_OPS

from ..conftest import edit, line_of

MPS014 = frozenset({"MPS014"})


def found(root: Path, paths=None) -> list[tuple[str, int, tuple[str, ...]]]:
    return [(f.path, f.line, f.symbols) for f in run_check(PytorchTree(root), paths, root, codes=MPS014).findings]


def declaration(root: Path, name: str) -> str:
    """The header's line declaring ``aoti_torch_mps_<name>``, newline included."""
    m = re.search(rf"^AOTI_TORCH_EXPORT AOTITorchError aoti_torch_mps_{name}\(.*\n", (root / C_SHIM_MPS).read_text(), re.M)
    assert m, name
    return m.group(0)


def test_the_shipped_files_give_no_finding(real_tree: Path):
    assert found(real_tree) == []


def test_a_removed_declaration_is_reported_at_the_mps_line_of_its_op(real_tree: Path):
    edit(real_tree, C_SHIM_MPS, declaration(real_tree, "histc"), "")
    row = line_of(real_tree, NATIVE_FUNCTIONS, "- func: histc(")
    mps = next(n for n in range(row, row + 12) if "MPS" in (real_tree / NATIVE_FUNCTIONS).read_text().split("\n")[n - 1])
    assert found(real_tree) == [(NATIVE_FUNCTIONS, mps, ("aten.histc.default", "aoti_torch_mps_histc"))]
    # kept by check PATHS of the yaml, the header or fallback_ops.py
    for path in (NATIVE_FUNCTIONS, C_SHIM_MPS, FALLBACK_OPS):
        assert len(found(real_tree, [path])) == 1


def test_a_removed_delegated_declaration_is_reported_at_the_out_rows_mps_line(real_tree: Path):
    """avg_pool2d has no dispatch of its own: it runs avg_pool2d.out's MPS kernel."""
    edit(real_tree, C_SHIM_MPS, declaration(real_tree, "avg_pool2d"), "")
    assert found(real_tree) == [
        (NATIVE_FUNCTIONS, line_of(real_tree, NATIVE_FUNCTIONS, "    MPS: avg_pool2d_out_mps"), ("aten.avg_pool2d.default", "aoti_torch_mps_avg_pool2d"))
    ]


def test_an_mps_key_taken_from_a_fallback_op_leaves_its_declaration_stale(real_tree: Path):
    edit(real_tree, NATIVE_FUNCTIONS, "    MPS: avg_pool2d_out_mps\n", "")
    assert found(real_tree) == [(C_SHIM_MPS, line_of(real_tree, C_SHIM_MPS, "aoti_torch_mps_avg_pool2d("), ("aten.avg_pool2d.default", "aoti_torch_mps_avg_pool2d"))]
    # and from a row with its own dispatch, on a shared line
    edit(real_tree, NATIVE_FUNCTIONS, "    CPU, MPS: histogram_histc\n", "    CPU: histogram_histc\n")
    assert len(found(real_tree)) == 2


def test_composite_ops_are_declared_without_an_mps_kernel(real_tree: Path):
    """abs has a CompositeExplicitAutograd kernel and no MPS one: torchgen's MPS shim calls
    the composite kernel, so its declaration is expected, not stale."""
    assert "aoti_torch_mps_abs(" in (real_tree / C_SHIM_MPS).read_text()
    edit(real_tree, C_SHIM_MPS, declaration(real_tree, "abs"), "")
    assert found(real_tree) == [(FALLBACK_OPS, line_of(real_tree, FALLBACK_OPS, '"aten.abs.default"'), ("aten.abs.default", "aoti_torch_mps_abs"))]


def test_version_guards_and_versions(real_tree: Path):
    header = real_tree / C_SHIM_MPS
    text = header.read_text()
    guarded = declaration(real_tree, "_grouped_mm")
    guard = "#if TORCH_FEATURE_VERSION >= TORCH_VERSION_2_12_0\n"
    endif = "#endif // TORCH_FEATURE_VERSION >= TORCH_VERSION_2_12_0\n"
    assert guard + guarded + endif in text
    header.write_text(text.replace(guard + guarded + endif, guarded))
    assert found(real_tree) == [(C_SHIM_MPS, line_of(real_tree, C_SHIM_MPS, "aoti_torch_mps__grouped_mm("), ("aten._grouped_mm.default", "aoti_torch_mps__grouped_mm"))]
    header.write_text(text)
    # the v2 declaration of a versioned entry, removed
    edit(real_tree, C_SHIM_MPS, declaration(real_tree, "_scaled_dot_product_attention_math_for_mps_v2"), "")
    assert [s for _p, _l, s in found(real_tree)] == [("aten._scaled_dot_product_attention_math_for_mps.default", "aoti_torch_mps__scaled_dot_product_attention_math_for_mps_v2")]


def test_a_declaration_of_no_fallback_op(real_tree: Path):
    line = declaration(real_tree, "histc")
    edit(real_tree, C_SHIM_MPS, line, line + line.replace("aoti_torch_mps_histc(", "aoti_torch_mps_histc_made_up("))
    assert found(real_tree) == [(C_SHIM_MPS, line_of(real_tree, C_SHIM_MPS, "aoti_torch_mps_histc_made_up("), ("aoti_torch_mps_histc_made_up",))]


def test_a_tree_without_the_files_says_nothing(real_tree: Path):
    (real_tree / C_SHIM_MPS).unlink()
    assert found(real_tree) == []
