"""Property tests: for generated valid specs, the emitted patch applies with git, leaves
parseable files, and `git apply -R` restores every byte."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpsgen.core.errors import Refused
from mpsgen.plan.newop import plan_new_op
from mpsgen.report.practice import build_practice_tree
from mpsgen.spec.op import FunctorSource, OpSpec
from mpsgen.tree import NATIVE_FUNCTIONS, PytorchTree
from mpsgen.tree.native_yaml import scan_native_functions
from tests.conftest import REAL, git_init, snapshot


@pytest.fixture(scope="module")
def tree_root(tmp_path_factory) -> Path:
    if not REAL:
        pytest.fail("torch==2.13.0 must be installed for the tests")
    root, _ = build_practice_tree(tmp_path_factory.mktemp("prop") / "pytorch", sources=REAL)
    git_init(root)
    return root


def candidate_ops() -> list[str]:
    table = scan_native_functions(REAL[NATIVE_FUNCTIONS].read_text())
    ops = sorted({e.base for e in table.entries if e.shared_entry is not None and not e.mps_entries and e.structured})
    return ops[:: max(1, len(ops) // 60)]


OPS = candidate_ops() if REAL else ["heaviside"]

specs = st.builds(
    lambda op, kind, groups, functor: OpSpec(op, kind, functor, groups),
    st.sampled_from(OPS),
    st.sampled_from(["unary", "binary"]),
    st.sampled_from([(), ("int2float",), ("integer",), ("integer_no_bool",), ("complex",), ("int2float", "complex")]),
    st.sampled_from([FunctorSource(), FunctorSource(expr="x", origin="t"), FunctorSource(body="  // hand-written\n", origin="t")]),
)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spec=specs)
def test_patch_round_trips(tree_root: Path, tmp_path_factory, spec: OpSpec):
    before = snapshot(tree_root)
    try:
        changeset = plan_new_op(PytorchTree(tree_root), spec)
    except Refused:
        return  # e.g. an op whose rows cannot take MPS: refused before anything is written
    patch = tmp_path_factory.mktemp("p") / "op.patch"
    changeset.write_patch(patch)
    assert snapshot(tree_root) == before
    subprocess.run(["git", "-C", tree_root, "apply", patch], check=True)
    for e in changeset.changed:
        assert (tree_root / e.relpath).read_bytes() == e.new_bytes
        if e.relpath.endswith(".py"):
            ast.parse(e.new_bytes)
    subprocess.run(["git", "-C", tree_root, "apply", "-R", patch], check=True)
    assert snapshot(tree_root) == before
