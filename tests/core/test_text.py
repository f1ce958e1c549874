"""shorten: text quoted in messages is whole, or cut between words with an ellipsis."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mpsgen.core.text import ELLIPSIS, shorten

CALL = "DecorateInfo(unittest.expectedFailure, 'TestCommon', 'test_out', device_type='mps', dtypes=(torch.complex64,))"


def test_whole_when_it_fits_and_white_space_made_one_line():
    assert shorten(CALL, len(CALL)) == CALL
    assert shorten("a\n    b  c", 20) == "a b c"


def test_cut_at_a_space_else_between_a_name_and_punctuation():
    assert shorten(CALL, 100) == "DecorateInfo(unittest.expectedFailure, 'TestCommon', 'test_out', device_type='mps', " + ELLIPSIS
    assert shorten(CALL.replace(" ", ""), 63) == "DecorateInfo(unittest.expectedFailure,'TestCommon','test_out'" + ELLIPSIS


@given(st.lists(st.sampled_from(["torch.complex64", "dtypes=(", "x", "'TestCommon',", "reason:", "a_b_c"]), max_size=40), st.integers(20, 120))
def test_never_longer_than_asked_and_never_inside_a_name(words: list[str], width: int):
    text = " ".join(words)
    out = shorten(text, width)
    assert len(out) <= width
    if out == text:
        return
    assert out.endswith(ELLIPSIS)
    head = out[: -len(ELLIPSIS)].rstrip()
    assert text.startswith(head)
    before, after = head[-1:], text[len(head) : len(head) + 1]
    assert not (before.isalnum() or before == "_") or not (after.isalnum() or after == "_")
