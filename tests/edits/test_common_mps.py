"""common_mps.py edits on the real file of each torch release."""

from __future__ import annotations

import ast
import difflib

import pytest

from mpsgen.edits.common_mps import remove_op_entries, xfail_entries
from mpsgen.tree import COMMON_MPS

FLOATS = {"torch.float32", "torch.float16", "torch.bfloat16"}


@pytest.fixture(scope="module")
def real(real_sources) -> str:
    return real_sources[COMMON_MPS].read_text(encoding="utf-8")


def diff(a: str, b: str) -> list[str]:
    return [l for l in difflib.unified_diff(a.splitlines(), b.splitlines(), lineterm="", n=0) if l[:1] in "+-" and l[:3] not in ("+++", "---")]


def test_dict_names_are_read_from_the_file(real):
    names, entries = xfail_entries(real)
    assert {"UNIMPLEMENTED_XFAILLIST", "UNDEFINED_XFAILLIST", "ON_MPS_XFAILLIST", "SKIPLIST"} <= set(names)
    assert "MPS_XFAILLIST" not in names  # the stale name from the in-tree recipe
    heaviside = [e for e in entries if e.key == "heaviside"]
    assert heaviside and heaviside[0].dict_name == "UNIMPLEMENTED_XFAILLIST" and heaviside[0].dtypes is None


def test_none_entry_removed_comment_below_kept(real):
    out = remove_op_entries(real, {"heaviside"}, FLOATS)
    assert diff(real, out) == ['-            "heaviside": None,']
    assert '            # "kthvalue": None,' in out
    ast.parse(out)


def test_whole_op_entry_becomes_the_tested_dtypes_the_kernel_does_not_take(real):
    """A float-only kernel for an op whose OpInfo tests integers on MPS: the integer tests
    still fail, so `"special.airy_ai": None` becomes the list of those dtypes (black's
    exploded layout, the line being too long), not a deleted entry."""
    tested = FLOATS | {"torch.float64", "torch.int64", "torch.int32", "torch.int16", "torch.int8", "torch.uint8", "torch.bool"}
    kept: list[tuple[int, str]] = []
    out = remove_op_entries(real, {"special.airy_ai"}, FLOATS, kept=kept, tested_dtypes=tested)
    assert (
        '            "special.airy_ai": [\n                torch.int64,\n                torch.int32,\n                torch.int16,\n'
        '                torch.int8,\n                torch.uint8,\n                torch.bool,\n            ],\n' in out
    )
    assert "float64" not in "".join(diff(real, out))  # MPS has no float64 kernel to test
    assert kept and "cut down to [torch.int64" in kept[0][1]
    ast.parse(out)
    # a kernel covering every tested dtype removes the entry, as before
    covered = FLOATS | {"torch.int64", "torch.int32", "torch.int16", "torch.int8", "torch.uint8", "torch.bool"}
    assert diff(real, remove_op_entries(real, {"special.airy_ai"}, covered, tested_dtypes=tested)) == ['-            "special.airy_ai": None,']
    # a short list stays on the key's line
    short = remove_op_entries(real, {"special.airy_ai"}, covered - {"torch.bool"}, tested_dtypes=tested)
    assert '            "special.airy_ai": [torch.bool],' in short


def test_dtype_entry_cut_down_to_uncovered_dtypes(real):
    out = remove_op_entries(real, {"argsort"}, FLOATS)
    tree = ast.parse(out)
    assert '"argsort": [\n                torch.int8,\n                torch.uint8,\n                torch.bool,\n            ],' in out
    assert tree


def test_entry_fully_covered_goes_with_its_own_comment(real):
    out = remove_op_entries(real, {"nn.functional.multi_head_attention_forward"}, FLOATS)
    removed = [l for l in diff(real, out) if l.startswith("-")]
    assert removed[0] == "-            # See https://github.com/pytorch/pytorch/issues/111479"
    assert "# zero to negative integer powers are undefined" in out


def test_inline_list_cut_down(real):
    out = remove_op_entries(real, {"stft"}, {"torch.float16"})
    assert '"stft": [torch.bfloat16],' in out


def test_entry_with_no_covered_dtype_stays(real):
    assert remove_op_entries(real, {"argsort"}, {"torch.complex64"}) == real


def test_unknown_key_is_a_no_op(real):
    assert remove_op_entries(real, {"no_such_op"}, FLOATS) == real


def test_complex_op_joins_the_complex_set_read_from_the_file(real):
    out = remove_op_entries(real, {"heaviside"}, FLOATS | {"torch.complex64"}, {"heaviside"})
    changes = diff(real, out)
    assert '-            "heaviside": None,' in changes and len(changes) == 2
    assert '+            "heaviside",' in changes
    tree = ast.parse(out)
    complex_set = next(
        node.value for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "SUPPORTED_COMPLEX_OPS"
    )
    assert "heaviside" in {e.value for e in complex_set.elts}
    # already there: nothing added twice
    assert remove_op_entries(out, set(), FLOATS, {"heaviside"}) == out
    assert remove_op_entries(real, set(), FLOATS, {"acosh"}) == real


SYNTHETIC = '''\
def mps_ops_modifier(ops):
    UNIMPLEMENTED_XFAILLIST = {
        "foo": None,
    }
    ON_MPS_XFAILLIST = {
        # crashes the test harness on macOS 14
        "foo": None,
        # NotImplementedError: aten::foo.out is not currently implemented for the MPS device
        "bar": None,
    }
    SKIPLIST = {
        "foo": None,  # flaky: compares NaN payloads
    }
'''


def test_only_missing_kernel_entries_go_and_the_rest_are_reported():
    kept: list[tuple[int, str]] = []
    out = remove_op_entries(SYNTHETIC, {"foo", "bar"}, FLOATS, kept=kept)
    assert '"bar"' not in out and "NotImplementedError" not in out  # reason: missing kernel
    assert out.count('"foo": None') == 2  # the unimplemented-list entry went; the other two stay
    assert "# crashes the test harness on macOS 14" in out
    assert [line for line, _ in kept] == [7, 12]
    assert "ON_MPS_XFAILLIST['foo'] kept (crashes the test harness" in kept[0][1]
    assert "SKIPLIST['foo'] kept (flaky: compares NaN payloads)" in kept[1][1]


def test_cut_down_entry_leaves_complex_to_the_complex_rule(real):
    """An op outside the complex-supporting set has its complex tests xfailed by that rule;
    its cut-down entry lists the real dtypes the kernel does not take, not complex64 again."""
    tested = FLOATS | {"torch.int64", "torch.complex64"}
    out = remove_op_entries(real, {"special.airy_ai"}, FLOATS, tested_dtypes=tested)
    assert '            "special.airy_ai": [torch.int64],' in out


def _independent_dict_names(text: str) -> list[str]:
    """Every name a dict literal is assigned to inside mps_ops_modifier whose name says XFAIL or
    SKIP, read with ast (not with mpsgen's reader)."""
    fn = next(n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.FunctionDef) and n.name == "mps_ops_modifier")
    names = []
    for node in ast.walk(fn):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Dict):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(target, ast.Name) and ("XFAIL" in target.id or "SKIP" in target.id):
                    names.append(target.id)
    return names


def test_the_lists_of_the_day_are_read_from_the_file(real, release):
    """No list name is written into mpsgen: 2.14.1 added MACOS_BEFORE_15_0_XFAILLIST, and it is
    read like the others."""
    names, entries = xfail_entries(real)
    assert sorted(names) == sorted(_independent_dict_names(real))
    assert ("MACOS_BEFORE_15_0_XFAILLIST" in names) == (release != "2.13.0")
    matrix_exp = [e for e in entries if e.key == "matrix_exp"]
    kept: list = []
    out = remove_op_entries(real, {"matrix_exp"}, FLOATS, kept=kept)
    if release == "2.13.0":  # a missing kernel: the entry goes
        assert [e.dict_name for e in matrix_exp] == ["UNIMPLEMENTED_XFAILLIST"] and not kept and out != real
    else:  # 2.14.1 disables it before macOS 15 on purpose: kept, saying why, in words
        assert [e.dict_name for e in matrix_exp] == ["MACOS_BEFORE_15_0_XFAILLIST"] and out == real
        assert len(kept) == 1 and kept[0][1].startswith("MACOS_BEFORE_15_0_XFAILLIST['matrix_exp'] kept (matrix_exp is disabled")
        assert "#" not in kept[0][1]


def test_an_unimplemented_entry_of_a_new_list_goes_too(real, release):
    """An entry whose reason is a missing kernel leaves whichever list holds it, new ones too."""
    if release == "2.13.0":
        pytest.skip("torch 2.13.0 has no MACOS_BEFORE_15_0_XFAILLIST")
    anchor = "        MACOS_BEFORE_15_0_XFAILLIST = {\n"
    assert real.count(anchor) == 1
    text = real.replace(anchor, anchor + '            # not implemented for MPS before macOS 15\n            "heaviside": None,\n')
    # (heaviside's UNIMPLEMENTED_XFAILLIST entry goes too: the file is the release's again but for it)
    out = remove_op_entries(text, {"heaviside"}, FLOATS)
    assert out == remove_op_entries(real, {"heaviside"}, FLOATS) != real
