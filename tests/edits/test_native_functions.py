"""native_functions.yaml edits on the real torch 2.13 file: byte-exact, verified, lint fixed point."""

from __future__ import annotations

import difflib
import io

import pytest
import yaml

from mpsgen.edits.native_functions import add_mps_to_rows, migrate_rows
from mpsgen.errors import Refused
from mpsgen.tree import NATIVE_FUNCTIONS


@pytest.fixture(scope="module")
def real_yaml(real_sources) -> str:
    return real_sources[NATIVE_FUNCTIONS].read_text(encoding="utf-8")


def changed_lines(before: str, after: str) -> list[str]:
    return [l for l in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0) if l[:1] in "+-" and not l.startswith(("+++", "---"))]


def test_mps_joins_shared_line_and_nothing_else_changes(real_yaml):
    out = add_mps_to_rows(real_yaml, ["heaviside.out", "special_ndtri.out"])
    assert changed_lines(real_yaml, out) == [
        "-    CPU, CUDA: heaviside_out",
        "+    CPU, CUDA, MPS: heaviside_out",
        "-    CPU, CUDA: special_ndtri_out",
        "+    CPU, CUDA, MPS: special_ndtri_out",
    ]
    assert len(out) == len(real_yaml) + 2 * len(", MPS")


def test_migrate_drops_the_mps_line(real_yaml):
    out = migrate_rows(real_yaml, ["acosh.out"])
    assert changed_lines(real_yaml, out) == [
        "-    CPU, CUDA: acosh_out",
        "-    MPS: acosh_out_mps",
        "+    CPU, CUDA, MPS: acosh_out",
    ]


def test_row_already_on_mps_is_a_no_op(real_yaml):
    assert add_mps_to_rows(real_yaml, ["atan2.out"]) == real_yaml


def test_separate_mps_kernel_is_refused_for_new_op(real_yaml):
    with pytest.raises(Refused, match="already dispatches MPS to acosh_out_mps"):
        add_mps_to_rows(real_yaml, ["acosh.out"])


def test_unknown_row_is_refused(real_yaml):
    with pytest.raises(Refused, match="no row 'nosuchop.out'"):
        add_mps_to_rows(real_yaml, ["nosuchop.out"])


def test_result_parses_with_the_c_loader(real_yaml):
    out = add_mps_to_rows(real_yaml, ["heaviside.out"])
    data = yaml.load(out, Loader=yaml.CSafeLoader)
    row = next(e for e in data if e["func"].startswith("heaviside.out("))
    assert row["dispatch"] == {"CPU, CUDA, MPS": "heaviside_out"}


def test_result_is_a_fixed_point_of_the_nativefunctions_lint(real_yaml):
    """PyTorch's NATIVEFUNCTIONS lint round-trips the file through ruamel (preserve_quotes,
    width 1000, booleans False/True) and requires it unchanged."""
    from ruamel.yaml import YAML

    out = migrate_rows(add_mps_to_rows(real_yaml, ["heaviside.out", "special_ndtri.out"]), ["acosh.out", "asinh.out"])
    ruamel = YAML()
    ruamel.preserve_quotes = True
    ruamel.width = 1000
    ruamel.boolean_representation = ["False", "True"]
    data = ruamel.load(out)
    buf = io.StringIO()
    ruamel.dump(data, buf)
    assert buf.getvalue() == out
