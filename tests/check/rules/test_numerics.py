"""Fault injection for the functor math rules (mpsgen/check/rules/numerics.py: MPS010, MPS011)."""

from __future__ import annotations

from ..conftest import UNARY_METAL, edit, found, line_of


def test_nan_dropping_min_max_is_mps010_only_in_float_overloads(check_tree):
    edit(check_tree, UNARY_METAL, "    return T(precise::sin(float(x)));", "    return T(max(precise::sin(float(x)), -1.0f));")
    line = line_of(check_tree, UNARY_METAL, "return T(max(precise::sin")
    assert found(check_tree) == [("MPS010", UNARY_METAL, line, 0)]
    edit(check_tree, UNARY_METAL, "return T(max(precise::sin", "return T(metal::max(precise::sin")
    assert found(check_tree) == [("MPS010", UNARY_METAL, line, 0)]
    edit(check_tree, UNARY_METAL, "return T(metal::max(precise::sin", "return T(c10::metal::max(precise::sin")
    assert found(check_tree) == []
    # in the integer overload (and in a comment) a plain max is fine
    edit(check_tree, UNARY_METAL, "    return precise::sin(float(x));", "    // max(a, b) would drop NaN\n    return precise::sin(float(max(x, T(0))));")
    assert found(check_tree) == []


def test_fast_math_is_mps011(check_tree):
    edit(check_tree, UNARY_METAL, "    return T(precise::sin(float(x)));", "    return T(fast::sin(float(x)));")
    assert found(check_tree) == [("MPS011", UNARY_METAL, line_of(check_tree, UNARY_METAL, "return T(fast::sin"), 0)]
