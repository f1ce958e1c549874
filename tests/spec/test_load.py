"""spec/load: which spec a command runs, and what it says when there is none."""

from __future__ import annotations

import pytest

from mpsgen.core.errors import BadInput
from mpsgen.spec.load import kernel_spec_for, try_spec_path


def test_try_of_a_misspelt_op_names_the_spec_it_is_close_to(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(BadInput) as info:
        try_spec_path("heavyside")
    assert info.value.hint == "Did you mean heaviside?"
    with pytest.raises(BadInput) as info:
        try_spec_path("zzzqqq")
    assert info.value.hint is None


def test_new_kernel_of_a_misspelt_op_names_the_kernel_spec_it_is_close_to():
    with pytest.raises(BadInput, match=r"mpsgen ships no kernel spec for _pdist_foward\. Did you mean _pdist_forward\? "):
        kernel_spec_for("_pdist_foward", None, None, None)
