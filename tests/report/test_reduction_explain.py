"""explain and the migration list tell reductions apart: an op whose rows run a reduction stub,
are tagged `reduction` or take `int reduction` / `bool keepdim` (and none tagged pointwise) is
never given an elementwise kind's hint; the ones a shipped reduction spec serves say so."""

from __future__ import annotations

from pathlib import Path

import pytest

from mpsgen.spec.reduction import reduction_evidence


@pytest.mark.parametrize(
    "func,tags,stub,declared,said",
    [
        ("prod(Tensor self, *, ScalarType? dtype=None) -> Tensor", (), "prod_stub", "aten/src/ATen/native/ReduceOps.h:23",
         "runs prod_stub, a reduction stub (aten/src/ATen/native/ReduceOps.h:23)"),
        ("var(Tensor self, bool unbiased=True) -> Tensor", ("core", "reduction"), None, None, "is tagged `reduction`"),
        ("mse_loss(Tensor self, Tensor target, int reduction=Mean) -> Tensor", (), None, None, "takes `int reduction`"),
        ("amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor", (), None, None, "takes `bool keepdim`"),
        ("mse_loss_backward(Tensor grad_output, Tensor self, Tensor target, int reduction) -> Tensor", (), None, None, None),
        ("glu(Tensor self, int dim=-1) -> Tensor", (), None, None, None),
        ("abs(Tensor self) -> Tensor", ("pointwise",), "abs_stub", "aten/src/ATen/native/UnaryOps.h:40", None),
    ],
)
def test_reduction_evidence(func, tags, stub, declared, said):
    assert reduction_evidence(func, tags, stub, declared) == said


def test_explain_never_gives_a_reduction_an_elementwise_hint(real_tree: Path, run):
    res = run("explain", "mse_loss", "--root", real_tree)
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "--kind" not in text and "binary_alpha" not in text
    assert "mse_loss is a reduction (row mse_loss.out" in text and "takes `int reduction`" in text


@pytest.mark.parametrize("op,spec", [("prod", "prod.yaml"), ("var", "std_var.yaml"), ("std_mean", "std_var.yaml")])
def test_explain_names_the_reduction_spec(real_tree: Path, run, op, spec):
    res = run("explain", op, "--root", real_tree)
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert f"specs/reductions/{spec}" in text and "fits no kind mpsgen writes" not in text
    # its rows run MPSGraph code: the migration, planned (prod's loses dtypes MPSGraph served)
    flag = " --allow-dtype-loss" if op == "prod" else ""
    assert f"`mpsgen migrate-from-mpsgraph {op}{flag} --dry-run`" in text
    if op == "prod":
        assert "without the flag it is refused: complex" in text
    else:
        assert f"ready: `mpsgen migrate-from-mpsgraph {op} --dry-run` shows the change ({op} is a reduction" in text
