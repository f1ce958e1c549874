"""edits.mpsgraph: removing an MPSGraph implementation and what only it needed (golden text)."""

from __future__ import annotations

import pytest

from mpsgen.edits.mpsgraph import StillUsed, remove_impls
from mpsgen.tree.mm import scan_mm

HEAD = """\
#include <ATen/native/mps/OperationUtils.h>

#ifndef AT_PER_OPERATOR_HEADERS
#include <ATen/NativeFunctions.h>
#else
#include <ATen/ops/cosh_native.h>
#include <ATen/ops/erf_native.h>
#include <ATen/ops/trunc_native.h>
#endif

"""


def run(text: str, kernels: set[str], ops: set[str]) -> str:
    impls = [i for i in scan_mm(text).impls if i.kernel in kernels]
    assert {i.kernel for i in impls} == kernels
    new, _removal = remove_impls(text, impls, ops)
    return new


MACRO_FILE = HEAD + """\
namespace at::native {
namespace mps {

static void one_input(const Tensor& self, const Tensor& out, const char* name) {
  run_graph(self, out, name);
}

} // namespace mps

#define UNARY_GRAPH_IMPL(func_out, graph_fn)                        \\
  TORCH_IMPL_FUNC(func_out)(const Tensor& self, const Tensor& out) { \\
    mps::one_input(self, out, #graph_fn);                           \\
  }

UNARY_GRAPH_IMPL(cosh_out_mps, cosh)
UNARY_GRAPH_IMPL(erf_out_mps, erf)

} // namespace at::native
"""


def test_macro_instance_goes_the_macro_stays_for_other_users():
    expected = MACRO_FILE.replace("#include <ATen/ops/cosh_native.h>\n", "").replace(
        "UNARY_GRAPH_IMPL(cosh_out_mps, cosh)\n", ""
    )
    assert run(MACRO_FILE, {"cosh_out_mps"}, {"cosh"}) == expected


def test_last_macro_instance_takes_macro_and_helper_along():
    once = run(MACRO_FILE, {"cosh_out_mps"}, {"cosh"})
    twice = run(once, {"erf_out_mps"}, {"erf"})
    assert twice == HEAD.replace("#include <ATen/ops/cosh_native.h>\n", "").replace(
        "#include <ATen/ops/erf_native.h>\n", ""
    ) + "namespace at::native {\n\n} // namespace at::native\n"
    assert "\n\n\n" not in twice


BLOCK_FILE = HEAD + """\
namespace at::native {
namespace mps {

typedef MPSGraphTensor* (^TwoBlock)(MPSGraph*, MPSGraphTensor*);

static void shared_driver(const Tensor& self, const Tensor& out, TwoBlock block) {
  drive(self, out, block);
}

} // namespace mps

// Truncation has a helper of its own.
static MPSGraphTensor* trunc_tensor(MPSGraph* g, MPSGraphTensor* x) {
  return [g truncateWithTensor:x name:nil];
}

TORCH_IMPL_FUNC(trunc_out_mps)(const Tensor& self, const Tensor& out) {
  mps::shared_driver(self, out, ^MPSGraphTensor*(MPSGraph* g, MPSGraphTensor* x) {
    return trunc_tensor(g, x);
  });
}

TORCH_IMPL_FUNC(erf_out_mps)
(const Tensor& self, const Tensor& out) {
  mps::shared_driver(self, out, ^MPSGraphTensor*(MPSGraph* g, MPSGraphTensor* x) {
    return [g erfWithTensor:x name:nil];
  });
}

} // namespace at::native
"""


def test_impl_func_block_and_its_own_helper_go_shared_helper_stays():
    expected = (
        BLOCK_FILE.replace("#include <ATen/ops/trunc_native.h>\n", "")
        .replace(
            """// Truncation has a helper of its own.
static MPSGraphTensor* trunc_tensor(MPSGraph* g, MPSGraphTensor* x) {
  return [g truncateWithTensor:x name:nil];
}

TORCH_IMPL_FUNC(trunc_out_mps)(const Tensor& self, const Tensor& out) {
  mps::shared_driver(self, out, ^MPSGraphTensor*(MPSGraph* g, MPSGraphTensor* x) {
    return trunc_tensor(g, x);
  });
}

""",
            "",
        )
    )
    assert run(BLOCK_FILE, {"trunc_out_mps"}, {"trunc"}) == expected


def test_split_signature_block_and_the_whole_mps_namespace_when_nothing_is_left():
    once = run(BLOCK_FILE, {"trunc_out_mps"}, {"trunc"})
    twice = run(once, {"erf_out_mps"}, {"erf"})
    assert "namespace mps" not in twice
    assert "TwoBlock" not in twice and "shared_driver" not in twice
    assert "erf_native.h" not in twice and "cosh_native.h" in twice
    assert "\n\n\n" not in twice
    assert twice.endswith("namespace at::native {\n\n} // namespace at::native\n")


PLAIN_FILE = HEAD + """\
namespace at::native {

static bool unused_before(const Tensor& t) {
  return t.numel() == 0;
}

Tensor& cosh_out_mps(const Tensor& self, Tensor& result) {
  // computed through exp
  return result;
}

Tensor cosh_mps(const Tensor& self) {
  Tensor result = at::empty_like(self);
  cosh_out_mps(self, result);
  return result;
}

} // namespace at::native
"""


def test_plain_functions_go_together_and_an_already_unused_helper_is_not_ours():
    out = run(PLAIN_FILE, {"cosh_out_mps", "cosh_mps"}, {"cosh"})
    assert out == PLAIN_FILE.replace("#include <ATen/ops/cosh_native.h>\n", "").replace(
        """Tensor& cosh_out_mps(const Tensor& self, Tensor& result) {
  // computed through exp
  return result;
}

Tensor cosh_mps(const Tensor& self) {
  Tensor result = at::empty_like(self);
  cosh_out_mps(self, result);
  return result;
}

""",
        "",
    )
    assert "unused_before" in out


def test_a_removed_function_still_called_by_code_that_stays_is_refused():
    with pytest.raises(StillUsed) as info:
        run(PLAIN_FILE, {"cosh_out_mps"}, {"cosh"})
    assert info.value.name == "cosh_out_mps"
    assert PLAIN_FILE.split("\n")[info.value.line - 1].strip() == "cosh_out_mps(self, result);"


def test_include_stays_while_the_op_is_still_named():
    text = MACRO_FILE.replace("UNARY_GRAPH_IMPL(erf_out_mps, erf)", "UNARY_GRAPH_IMPL(cosh_backward_out_mps, cosh)")
    out = run(text, {"cosh_out_mps"}, {"cosh"})
    assert "#include <ATen/ops/cosh_native.h>" in out


def test_comment_heading_a_group_stays():
    text = MACRO_FILE.replace(
        "UNARY_GRAPH_IMPL(cosh_out_mps, cosh)", "// hyperbolic and error functions\nUNARY_GRAPH_IMPL(cosh_out_mps, cosh)"
    )
    out = run(text, {"cosh_out_mps"}, {"cosh"})
    assert "// hyperbolic and error functions\nUNARY_GRAPH_IMPL(erf_out_mps, erf)" in out


def test_nothing_to_remove_is_identity():
    new, removal = remove_impls(MACRO_FILE, [], {"cosh"})
    assert new == MACRO_FILE and not removal.impls


RELU_FILE = HEAD + """\
namespace at::native {

Tensor relu_mps(const Tensor& self) {
  Tensor output = at::empty_like(self);
  mps::unary_op(self, output, "relu_out_mps", ^MPSGraphTensor*(MPSGraph* g, MPSGraphTensor* x) {
    return [g reLUWithTensor:x name:nil];
  });
  return output;
}

Tensor& relu_mps_(Tensor& self) {
  mps::unary_op(self, self, "relu_out_mps_", ^MPSGraphTensor*(MPSGraph* g, MPSGraphTensor* x) {
    return [g reLUWithTensor:x name:nil];
  });
  return self;
}

TORCH_IMPL_FUNC(erf_out_mps)(const Tensor& self, const Tensor& output) {
  mps::unary_op(self, output, "erf_out_mps", nil);
}

} // namespace at::native
"""


def test_an_in_place_row_s_plain_function_is_found_and_goes():
    """relu_'s MPS kernel is `relu_mps_` (2.13 and 2.14.1's yaml): a plain function whose name
    ends in `_mps_` is MPSGraph code as `_mps` ones are."""
    assert run(RELU_FILE, {"relu_mps", "relu_mps_"}, {"relu"}) == HEAD + """\
namespace at::native {

TORCH_IMPL_FUNC(erf_out_mps)(const Tensor& self, const Tensor& output) {
  mps::unary_op(self, output, "erf_out_mps", nil);
}

} // namespace at::native
"""
