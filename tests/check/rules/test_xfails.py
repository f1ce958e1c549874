"""Fault injection for the test-list rule (mpsgen/check/rules/xfails.py: MPS009)."""

from __future__ import annotations

from mpsgen.tree import COMMON_MPS

from ..conftest import edit, found, line_of


def test_stale_xfail_is_mps009(check_tree):
    edit(check_tree, COMMON_MPS, '            "cummax": None,\n', '            "cummax": None,\n            "hypot": None,\n            "exp": [torch.float16],\n            "fmin": [torch.float64],\n')
    assert found(check_tree) == [
        ("MPS009", COMMON_MPS, line_of(check_tree, COMMON_MPS, '"hypot": None'), 0),
        ("MPS009", COMMON_MPS, line_of(check_tree, COMMON_MPS, '"exp": [torch.float16]'), 0),
    ]
