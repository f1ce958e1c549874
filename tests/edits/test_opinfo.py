"""OpInfo decorator removal on the real 1.4 MB common_methods_invocations.py and special.py."""

from __future__ import annotations

import ast

import pytest

from mpsgen.edits.opinfo import remove_mps_decorators
from mpsgen.tree import COMMON_METHODS
from mpsgen.tree.opinfo import find_op_entries, find_ref_entries


@pytest.fixture(scope="module")
def cmi(real_sources) -> str:
    return real_sources[COMMON_METHODS].read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def special(real_sources) -> str:
    return real_sources["torch/testing/_internal/opinfo/definitions/special.py"].read_text(encoding="utf-8")


def edit(text: str, op: str, extra: set[str]) -> str:
    entries = find_op_entries("f", text, op, extra)
    refs = find_ref_entries("f", text, {e.name for e in entries})
    return remove_mps_decorators(text, [(e.open_paren, e.close_paren) for e in entries + refs])


def test_heaviside_opinfo_and_ref_lose_mps_decorators_only(cmi):
    out = edit(cmi, "heaviside", set())
    start = out.index("BinaryUfuncInfo('heaviside'")
    body = out[start : out.index("BinaryUfuncInfo('lcm'")]
    assert "device_type='mps'" not in body and "MPS device" not in body
    assert "'test_reference_numerics_extremal_values'" in body  # non-MPS decorators stay
    ref = out[out.index('"_refs.heaviside"') : out.index('"_refs.hypot"')]
    assert "device_type='mps'" not in ref and "PyTorch's heaviside does not appear to propagate NaNs" in ref
    removed = len(cmi.splitlines()) - len(out.splitlines())
    assert removed == 6 + 3
    # every other MPS decorator of the file is still there
    assert cmi.count("device_type='mps'") - out.count("device_type='mps'") == 7


def test_special_ndtri_empty_skips_argument_removed(special):
    out = edit(special, "special_ndtri", {"special.ndtri"})
    entry = out[out.index('"special.ndtri",') : out.index('"special.log_ndtr",')]
    assert "skips" not in entry and "DecorateInfo" not in entry
    log_ndtr = out[out.index('"special.log_ndtr",') :]
    assert 'device_type="mps"' in log_ndtr[:800]  # the neighbour keeps its own
    ast.parse(out)


def test_op_without_mps_decorators_unchanged(cmi):
    assert edit(cmi, "lcm", set()) == cmi


def test_only_decorators_for_the_missing_kernel_go(cmi):
    """logit: the NotImplementedError xfail goes with its comment; the test_out xfail, whose
    reason is an unsafe-cast check, stays with its comment (the new kernel does not fix it)."""
    out = edit(cmi, "logit", set())
    entry = out[out.index("UnaryUfuncInfo('logit',") : out.index("OpInfo('where',")]
    assert "is not currently implemented for the MPS device" not in entry
    assert "'test_variant_consistency_eager'" not in entry
    assert "AssertionError: RuntimeError not raised" in entry
    assert "DecorateInfo(unittest.expectedFailure, 'TestCommon', 'test_out', device_type='mps')" in entry
    assert "precisionOverride" in entry


def test_tolerance_override_for_mps_stays(cmi):
    out = edit(cmi, "asinh", set())
    entry = out[out.index("UnaryUfuncInfo('asinh',") : out.index("UnaryUfuncInfo('atan',")]
    assert 'toleranceOverride' in entry and '"TestConsistency", "test_output_match", device_type="mps"' in entry
    assert out == cmi


def test_comment_heading_a_kept_decorator_stays():
    text = (
        "op_db = [\n"
        "    OpInfo('foo',\n"
        "           skips=(\n"
        "               # NotImplementedError: not currently implemented for the MPS device\n"
        "               DecorateInfo(unittest.expectedFailure, 'TestCommon', 'test_out', device_type='mps'),\n"
        "               DecorateInfo(unittest.skip('x'), 'TestCommon', 'test_out'),\n"
        "           )),\n"
        "]\n"
    )
    out = edit(text, "foo", set())
    assert "# NotImplementedError" in out and "device_type='mps'" not in out and "unittest.skip('x')" in out


def test_a_kept_decorator_is_quoted_whole_or_cut_between_words():
    """The `kept:` line names the decorator (whole when it fits, dtypes included) and its
    reason, never cut inside a word."""
    long_reason = "# " + " ".join(["complex inputs give results that differ from the CPU in the last place"] * 3)
    text = (
        "op_db = [\n"
        "    OpInfo('foo',\n"
        "           skips=(\n"
        f"               {long_reason}\n"
        "               DecorateInfo(unittest.expectedFailure, 'TestCommon', 'test_variant_consistency_eager',\n"
        "                            device_type='mps', dtypes=(torch.complex64,)),\n"
        "           )),\n"
        "]\n"
    )
    kept: list[tuple[int, str]] = []
    entries = find_op_entries("f", text, "foo", set())
    assert remove_mps_decorators(text, [(e.open_paren, e.close_paren) for e in entries], kept) == text
    [(line, why)] = kept
    assert line == 5
    assert why.startswith("DecorateInfo(unittest.expectedFailure, 'TestCommon', 'test_variant_consistency_eager', device_type='mps', dtypes=(torch.complex64,)) (")
    reason = why.split("its reason is not a missing kernel: ", 1)[1]
    assert reason.endswith(" …)") and len(reason) <= 92
    assert long_reason.lstrip("# ").startswith(reason[: -len(" …)")])
    assert long_reason[2:][len(reason) - 3] == " "  # the cut falls between two words


def test_a_kept_decorator_laid_out_over_lines_is_quoted_as_one_line():
    text = (
        "op_db = [\n"
        "    OpInfo('foo',\n"
        "           skips=(\n"
        "               # flaky on MPS\n"
        "               DecorateInfo(\n"
        "                   unittest.expectedFailure, 'TestCommon', 'test_out', device_type='mps',\n"
        "                   dtypes=(\n"
        "                       torch.uint8,\n"
        "                   ),\n"
        "               ),\n"
        "           )),\n"
        "]\n"
    )
    kept: list[tuple[int, str]] = []
    entries = find_op_entries("f", text, "foo", set())
    remove_mps_decorators(text, [(e.open_paren, e.close_paren) for e in entries], kept)
    assert kept == [(5, "DecorateInfo(unittest.expectedFailure, 'TestCommon', 'test_out', device_type='mps', dtypes=(torch.uint8,),) (its reason is not a missing kernel: flaky on MPS)")]


def test_an_mps_xfail_of_a_test_the_cpu_also_fails_stays():
    """With the kernel, a test whose CPU run is an expected failure (its reference's numerics)
    most likely fails on MPS too: its MPS entry stays, and says why."""
    text = (
        "op_db = [\n"
        "    PythonRefInfo('_refs.foo',\n"
        "           skips=(\n"
        "               DecorateInfo(unittest.expectedFailure, 'TestCommon', 'test_python_ref_torch_fallback',\n"
        "                            dtypes=(torch.float32,), device_type='cpu'),\n"
        "               # NotImplementedError: not currently implemented for the MPS device\n"
        "               DecorateInfo(unittest.expectedFailure, 'TestCommon', 'test_python_ref_torch_fallback', device_type='mps'),\n"
        "               # NotImplementedError: not currently implemented for the MPS device\n"
        "               DecorateInfo(unittest.expectedFailure, 'TestCommon', 'test_out', device_type='mps'),\n"
        "           )),\n"
        "]\n"
    )
    kept: list = []
    from mpsgen.edits.opinfo import remove_mps_decorators

    start = text.index("PythonRefInfo(") + len("PythonRefInfo")
    out = remove_mps_decorators(text, [(start, text.rindex(")),") + 1)], kept)
    assert "'test_python_ref_torch_fallback', device_type='mps'" in out and "'test_out', device_type='mps'" not in out
    assert len(kept) == 1 and "the CPU run of this test is expected to fail too (dtypes torch.float32)" in kept[0][1]
