"""Fault injection for the dispatch rules (mpsgen/check/rules/dispatch.py: MPS001, MPS002, MPS005,
MPS007, MPS008, MPS015): each fault in the consistent check tree is reported with its code and
line, and nothing else is."""

from __future__ import annotations

from mpsgen.tree import NATIVE_FUNCTIONS

from ..conftest import BINARY_MM, BINARY_OPS_MM, UNARY_MM, UNARY_OPS_MM, edit, found, kernel_column, line_of, shared_line, without_mps

YAML = NATIVE_FUNCTIONS


def test_deleted_register_dispatch_is_mps002_at_the_yaml_row(check_tree):
    edit(check_tree, BINARY_MM, "REGISTER_DISPATCH(hypot_stub, &hypot_mps_kernel);\n", "")
    line = shared_line(check_tree, "hypot_out")
    row = line_of(check_tree, YAML, line.rstrip("\n"))
    assert found(check_tree) == [("MPS002", YAML, row, kernel_column(line))]


def test_deleted_helper_macro_dispatch_is_mps002(check_tree):
    edit(check_tree, UNARY_MM, "REGISTER_UNARY_TI_DISPATCH(exp);\n", "")
    line = shared_line(check_tree, "exp_out")
    row = line_of(check_tree, YAML, line.rstrip("\n"))
    assert found(check_tree) == [("MPS002", YAML, row, kernel_column(line))]


# kernels defined as upstream's .cpp files write them (our own code in their shapes): the stub
# is tied to the row through them, so a deleted registration is still MPS002
KERNELS_CPP = "aten/src/ATen/native/KernelShapes.cpp"


KERNEL_SHAPES = """\
namespace at::native {

template <typename Stub>
static Tensor& fill_through(Tensor& out, const Tensor& in, Stub& stub, bool widen) {
  auto it = widen ? TensorIterator::unary_float_op(out, in) : TensorIterator::unary_op(out, in);
  stub(it.device_type(), it);
  return out;
}

// abs.out: the stub is handed to a helper, never called here
Tensor& abs_out(const Tensor& self, Tensor& result) {
  return fill_through(result, self, abs_stub, /*widen=*/false);
}

// another row's kernel of the same name, first in the file
Tensor& bitwise_and_out(const Tensor& self, const Scalar& other, Tensor& result) {
  return at::bitwise_and_out(result, self, wrap_scalar(other));
}

#define TWO_INPUT_KERNEL(name, stub)                                                 \\
  TORCH_IMPL_FUNC(name)(const Tensor& self, const Tensor& other, const Tensor& out) { \\
    stub(device_type(), *this);                                                      \\
  }

// bitwise_and.Tensor_out (structured): a macro instance beside the overload above
TWO_INPUT_KERNEL(bitwise_and_out, bitwise_and_stub)

} // namespace at::native
"""


def test_deleted_registration_of_a_stub_handed_to_a_helper_is_mps002(check_tree):
    (check_tree / KERNELS_CPP).write_text(KERNEL_SHAPES)
    assert found(check_tree) == []
    edit(check_tree, UNARY_MM, "REGISTER_UNARY_TI_DISPATCH(abs);\n", "")
    line = shared_line(check_tree, "abs_out")
    assert found(check_tree) == [("MPS002", YAML, line_of(check_tree, YAML, line.rstrip("\n")), kernel_column(line))]


def test_deleted_registration_of_a_macro_made_kernel_beside_an_overload_is_mps002(check_tree):
    (check_tree / KERNELS_CPP).write_text(KERNEL_SHAPES)
    edit(check_tree, BINARY_MM, "REGISTER_DISPATCH(bitwise_and_stub, &bitwise_and_mps_kernel)\n", "")
    line = shared_line(check_tree, "bitwise_and_out")
    assert found(check_tree) == [("MPS002", YAML, line_of(check_tree, YAML, line.rstrip("\n")), kernel_column(line))]


def test_commented_out_registration_does_not_count(check_tree):
    edit(check_tree, BINARY_MM, "REGISTER_DISPATCH(hypot_stub, &hypot_mps_kernel);", "// REGISTER_DISPATCH(hypot_stub, &hypot_mps_kernel);")
    assert [c for c, *_ in found(check_tree)] == ["MPS002"]


def test_mps_row_pointing_at_a_deleted_impl_is_mps001(check_tree):
    text = (check_tree / UNARY_OPS_MM).read_text()
    start = text.index("TORCH_IMPL_FUNC(frac_out_mps)")
    end = text.index("\n}\n", start) + 3
    (check_tree / UNARY_OPS_MM).write_text(text[:start] + text[end:])
    row = line_of(check_tree, YAML, "    MPS: frac_out_mps")
    assert found(check_tree) == [("MPS001", YAML, row, 10)]


def test_deleted_macro_instance_impl_is_mps001(check_tree):
    edit(check_tree, BINARY_OPS_MM, "CREATE_MPS_STRUCTURED_BINARY_OP_FUNC(pow_tensor_tensor_out_mps, power, Tensor);\n", "")
    assert found(check_tree) == [("MPS001", YAML, line_of(check_tree, YAML, "    MPS: pow_tensor_tensor_out_mps"), 10)]


def test_yaml_migrated_but_not_the_host_code(check_tree):
    """sign.out moves to the shared line: its stub has no MPS kernel, and the MPSGraph code is dead."""
    shared = shared_line(check_tree, "sign_out")
    edit(check_tree, YAML, shared + "    MPS: sign_out_mps\n", shared.replace(": sign_out", ", MPS: sign_out"))
    line = shared_line(check_tree, "sign_out")
    row = line_of(check_tree, YAML, line.rstrip("\n"))
    assert found(check_tree) == [
        ("MPS007", UNARY_OPS_MM, line_of(check_tree, UNARY_OPS_MM, "TORCH_IMPL_FUNC(sign_out_mps)"), 0),
        ("MPS002", YAML, row, kernel_column(line)),
    ]


def test_dead_plain_function_is_mps007_unless_used_elsewhere(check_tree):
    # xlogy's rows name xlogy_out (its stub's Metal kernel): an MPSGraph xlogy_out_mps left behind is dead
    leftover = "Tensor& xlogy_out_mps(const Tensor& self, const Tensor& other, Tensor& output) {\n  return output;\n}\n\n"
    edit(check_tree, BINARY_OPS_MM, "} // namespace at::native", leftover + "} // namespace at::native")
    dead = ("MPS007", BINARY_OPS_MM, line_of(check_tree, BINARY_OPS_MM, "Tensor& xlogy_out_mps("), 0)
    assert dead in found(check_tree)
    # a caller elsewhere makes it a helper, not dead code
    edit(check_tree, BINARY_OPS_MM, "} // namespace at::native", "static void use_it(const Tensor& a, Tensor& r) {\n  xlogy_out_mps(a, a, r);\n}\n\n} // namespace at::native")
    assert dead not in found(check_tree)


def test_half_migrated_op_is_mps008_at_the_lagging_row(check_tree):
    line = shared_line(check_tree, "round_decimals_out")
    edit(check_tree, YAML, line, without_mps(line, "round_decimals_out"))
    edit(check_tree, UNARY_OPS_MM, "} // namespace at::native", "TORCH_IMPL_FUNC(round_decimals_out_mps)(const Tensor& self, int64_t decimals, const Tensor& output) {}\n\n} // namespace at::native")
    row = line_of(check_tree, YAML, "    MPS: round_decimals_out_mps")
    assert found(check_tree) == [("MPS008", YAML, row, 10)]


def test_duplicate_stub_registration_is_mps005(check_tree):
    edit(check_tree, BINARY_MM, "REGISTER_DISPATCH(polar_stub, &polar_mps_kernel);\n", "REGISTER_DISPATCH(polar_stub, &polar_mps_kernel);\nREGISTER_DISPATCH(hypot_stub, &hypot_mps_kernel);\n")
    assert found(check_tree) == [("MPS005", BINARY_MM, line_of(check_tree, BINARY_MM, "REGISTER_DISPATCH(hypot_stub", nth=2), 0)]


def test_duplicate_stub_through_a_helper_macro_is_mps005(check_tree):
    edit(check_tree, UNARY_MM, "REGISTER_UNARY_TI_DISPATCH(abs);\n", "REGISTER_UNARY_TI_DISPATCH(abs);\nREGISTER_UNARY_TI_DISPATCH(exp);\n")
    assert found(check_tree) == [("MPS005", UNARY_MM, line_of(check_tree, UNARY_MM, "REGISTER_UNARY_TI_DISPATCH(exp);", nth=2), 0)]


def test_a_dispatch_key_named_twice_is_mps015(check_tree):
    """`--row X --row X` used to write `CPU, CUDA, MPS, MPS`; a merge can leave a second MPS line."""
    line = shared_line(check_tree, "hypot_out")
    edit(check_tree, YAML, line, line.replace(": hypot_out", ", MPS: hypot_out"))
    doubled = shared_line(check_tree, "hypot_out")
    assert found(check_tree) == [("MPS015", YAML, line_of(check_tree, YAML, doubled.rstrip("\n")), kernel_column(doubled))]
    edit(check_tree, YAML, doubled, line + "    MPS: hypot_out_mps\n")
    row = line_of(check_tree, YAML, "    MPS: hypot_out_mps")
    assert ("MPS015", YAML, row, len("    MPS: ") + 1) in found(check_tree)
