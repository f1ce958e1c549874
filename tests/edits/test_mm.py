"""Golden tests for the .mm edit: helper macro instance, explicit kernel, conventions, wrapping."""

from __future__ import annotations

from mpsgen.edits.mm import KernelAddition, add_kernel, render_kernel_function
from mpsgen.report.practice import PRACTICE_TREE
from mpsgen.tree.mm import scan_mm
from tests.golden import assert_golden

OPS = PRACTICE_TREE / "aten/src/ATen/native/mps/operations"


def test_binary_kernel_and_register_dispatch_follow_file_conventions():
    text = (OPS / "BinaryKernel.mm").read_text()
    out = add_kernel(text, KernelAddition("heaviside", "heaviside_stub", "binary", False, None))
    assert "static void heaviside_mps_kernel(TensorIteratorBase& iter) {\n  lib.exec_binary_kernel(iter, \"heaviside\");\n}\n" in out
    # most REGISTER_DISPATCH lines of the file use '&' and no ';'
    assert "REGISTER_DISPATCH(heaviside_stub, &heaviside_mps_kernel)\n} // namespace at::native" in out
    assert_golden("mm/binary_heaviside.mm", out)


def test_unary_uses_the_tree_helper_macro():
    text = (OPS / "UnaryKernel.mm").read_text()
    out = add_kernel(text, KernelAddition("special_ndtri", "special_ndtri_stub", "unary", False, "REGISTER_UNARY_TI_DISPATCH"))
    assert "REGISTER_UNARY_TI_DISPATCH(abs);\nREGISTER_UNARY_TI_DISPATCH(special_ndtri);\n" in out
    assert_golden("mm/unary_special_ndtri.mm", out)


def test_alpha_kernel_takes_a_scalar():
    text = (OPS / "BinaryKernel.mm").read_text()
    out = add_kernel(text, KernelAddition("sub_alpha", "sub_stub", "binary", True, None))
    assert "static void sub_alpha_mps_kernel(TensorIteratorBase& iter, const Scalar& alpha) {" in out
    assert 'lib.exec_binary_kernel(iter, "sub_alpha", alpha);' in out


def test_already_registered_stub_is_left_alone():
    text = (OPS / "BinaryKernel.mm").read_text()
    assert add_kernel(text, KernelAddition("hypot", "hypot_stub", "binary", False, None)) == text
    text = (OPS / "UnaryKernel.mm").read_text()
    assert add_kernel(text, KernelAddition("exp", "exp_stub", "unary", False, "REGISTER_UNARY_TI_DISPATCH")) == text


def test_long_names_wrap_at_120_columns_like_clang_format():
    name = "x" * 70
    code = render_kernel_function(KernelAddition(name, f"{name}_stub", "binary", True, None), "lib")
    first, second = code.split("\n")[:2]
    assert len(first) <= 120 and first.endswith("(TensorIteratorBase& iter,")
    assert second.strip() == "const Scalar& alpha) {" and second.index("const") == first.index("(") + 1
    assert all(len(line) <= 120 for line in code.split("\n"))
    longer = render_kernel_function(KernelAddition("y" * 100, "s", "binary", True, None), "lib").split("\n")
    # even `static void <name>(` overflows: the name moves to its own line, as clang-format does
    assert longer[0] == "static void" and longer[1].endswith("_mps_kernel(") and longer[2] == "    TensorIteratorBase& iter,"
    assert longer[4:7] == ["  lib.exec_binary_kernel(", "      iter,", '      "' + "y" * 100 + '",']


def test_scanner_sees_helper_instances_inside_namespace():
    src = scan_mm((OPS / "UnaryKernel.mm").read_text())
    assert ("REGISTER_UNARY_TI_DISPATCH", "exp", 23) in [(m, o, line) for m, o, line in src.helper_instances][:1] or any(
        o == "exp" for _m, o, _l in src.helper_instances
    )
    assert {d.stub for d in src.dispatches} >= {"exp_stub", "round_decimals_stub"}


def test_a_shader_library_is_declared_once():
    """A file that declares or already uses `lib` gets no second declaration (it would not
    compile); one without gets it after `namespace at::native {`."""
    from mpsgen.edits.mm import add_shader_library, before_namespace_end

    bare = "namespace at::native {\nvoid f();\n} // namespace at::native\n"
    lib = "static auto& lib = MetalShaderLibrary::getBundledLibrary();\n"
    assert add_shader_library(bare, "X.mm", lib) == "namespace at::native {\n\n" + lib + "void f();\n} // namespace at::native\n"
    using = bare.replace("void f();", "auto p = lib.getPipelineStateForFunc(name);")
    assert add_shader_library(using, "X.mm", lib) == using
    assert before_namespace_end(bare, "void g();") == "namespace at::native {\nvoid f();\n\nvoid g();\n\n} // namespace at::native\n"
