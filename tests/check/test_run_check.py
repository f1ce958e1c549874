"""run_check over the whole consistent check tree: a clean tree reports nothing, and PATHS keep
the findings located in them (by the places a finding's symbols are, never by words). Each
rule family's faults are tested in tests/check/rules/."""

from __future__ import annotations

from pathlib import Path

from mpsgen.check import run_check
from mpsgen.tree import NATIVE_FUNCTIONS, PytorchTree

from .conftest import BINARY_METAL, BINARY_MM, UNARY_METAL, UNARY_OPS_MM, edit, found, line_of

YAML = NATIVE_FUNCTIONS


def test_clean_tree_reports_nothing(check_tree):
    assert found(check_tree) == []


def test_paths_report_only_findings_touching_them(check_tree, monkeypatch):
    edit(check_tree, BINARY_MM, "REGISTER_DISPATCH(hypot_stub, &hypot_mps_kernel);\n", "")
    edit(check_tree, UNARY_METAL, "struct sin_functor {", "struct sine_functor {")
    assert [c for c, *_ in found(check_tree)] == ["MPS004", "MPS002"]
    assert [c for c, *_ in found(check_tree, [BINARY_MM], cwd=check_tree)] == ["MPS002"]  # where the REGISTER_DISPATCH goes
    assert [c for c, *_ in found(check_tree, [str(check_tree / UNARY_METAL)])] == ["MPS004"]
    assert [c for c, *_ in found(check_tree, ["UnaryKernel.mm"], cwd=check_tree / "aten/src/ATen/native/mps/operations")] == []
    assert [c for c, *_ in found(check_tree, [YAML], cwd=check_tree)] == ["MPS002"]
    (check_tree / "README.md").write_text("not an MPS source\n")
    assert found(check_tree, ["README.md"], cwd=check_tree) == []


def test_paths_keep_findings_by_location_never_by_word(real_tree: Path):
    """A comment naming trunc.out and code using std::string and std::max in UnaryOps.mm do not pull
    in the findings about the trunc.out row or max.dim_max (-> max_out_mps) of the whole-tree run."""
    whole = run_check(PytorchTree(real_tree), strict=True).findings
    assert any("max.dim_max" in f.message for f in whole) and any(f.message.startswith("trunc.out") for f in whole)

    def found(root, paths, cwd):
        return [(f.code, f.path, f.line) for f in run_check(PytorchTree(root), paths, cwd, strict=True).findings]

    before = found(real_tree, [UNARY_OPS_MM], cwd=real_tree)
    mm = real_tree / UNARY_OPS_MM
    mm.write_text(
        mm.read_text() + "\n// trunc.out, std and max are handled elsewhere\nstatic std::string describe_std(int x) { return std::to_string(std::max(x, 0)); }\n"
    )
    assert found(real_tree, [UNARY_OPS_MM], cwd=real_tree) == before


def test_findings_carry_symbols_and_locations(check_tree):
    edit(check_tree, BINARY_MM, "REGISTER_DISPATCH(hypot_stub, &hypot_mps_kernel);\n", "")
    (f,) = run_check(PytorchTree(check_tree)).findings
    assert f.code == "MPS002" and f.symbols == ("hypot.out", "hypot_stub")
    paths = {p for p, _ in f.locations}
    # the stub's declaration, the Metal kernel's registrations and functor, and the host file paired with them
    assert {"aten/src/ATen/native/BinaryOps.h", BINARY_METAL, BINARY_MM} <= paths
    # a registration left in a comment is not a use of the stub
    edit(check_tree, BINARY_MM, "static void hypot_mps_kernel", "// REGISTER_DISPATCH(hypot_stub, &hypot_mps_kernel);\nstatic void hypot_mps_kernel")
    (g,) = run_check(PytorchTree(check_tree)).findings
    assert (BINARY_MM, line_of(check_tree, BINARY_MM, "// REGISTER_DISPATCH(hypot_stub")) not in g.locations
