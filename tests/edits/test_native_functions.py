"""native_functions.yaml edits on the real file of each torch release: byte-exact, verified, lint fixed point."""

from __future__ import annotations

import difflib
import io

import pytest
import yaml

from mpsgen.edits.native_functions import add_mps_to_rows, migrate_rows
from mpsgen.core.errors import Refused
from mpsgen.tree import NATIVE_FUNCTIONS
from tests.conftest import shared_dispatch


@pytest.fixture(scope="module")
def real_yaml(real_sources) -> str:
    return real_sources[NATIVE_FUNCTIONS].read_text(encoding="utf-8")


def changed_lines(before: str, after: str) -> list[str]:
    return [l for l in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0) if l[:1] in "+-" and not l.startswith(("+++", "---"))]


def test_mps_joins_shared_line_and_nothing_else_changes(real_yaml):
    out = add_mps_to_rows(real_yaml, ["heaviside.out", "special_ndtri.out"])
    # 2.13: `CPU, CUDA: heaviside_out`; 2.14.1: `CPU, CUDA, XPU: heaviside_out`. MPS goes last.
    heaviside, ndtri = (shared_dispatch(real_yaml, k).rstrip("\n") for k in ("heaviside_out", "special_ndtri_out"))
    assert changed_lines(real_yaml, out) == [
        f"-{heaviside}", f"+{heaviside.replace(': ', ', MPS: ')}", f"-{ndtri}", f"+{ndtri.replace(': ', ', MPS: ')}",
    ]
    assert len(out) == len(real_yaml) + 2 * len(", MPS")


def test_migrate_drops_the_mps_line(real_yaml):
    # logit_backward runs MPSGraph code in both releases (acosh, 2.13's case here before, does not in 2.14.1)
    out = migrate_rows(real_yaml, ["logit_backward.grad_input"])
    shared = shared_dispatch(real_yaml, "logit_backward_out").rstrip("\n")
    assert changed_lines(real_yaml, out) == [
        f"-{shared}",
        "-    MPS: logit_backward_out_mps",
        f"+{shared.replace(': ', ', MPS: ')}",
    ]


def test_row_already_on_mps_is_a_no_op(real_yaml):
    assert add_mps_to_rows(real_yaml, ["atan2.out"]) == real_yaml


def test_separate_mps_kernel_is_refused_for_new_op(real_yaml):
    with pytest.raises(Refused, match="already dispatches MPS to logit_backward_out_mps"):
        add_mps_to_rows(real_yaml, ["logit_backward.grad_input"])


def test_unknown_row_is_refused(real_yaml):
    with pytest.raises(Refused, match="no row 'nosuchop.out'"):
        add_mps_to_rows(real_yaml, ["nosuchop.out"])


def test_result_parses_with_the_c_loader(real_yaml):
    out = add_mps_to_rows(real_yaml, ["heaviside.out"])
    data = yaml.load(out, Loader=yaml.CSafeLoader)
    row = next(e for e in data if e["func"].startswith("heaviside.out("))
    keys = shared_dispatch(real_yaml, "heaviside_out").split(":")[0].strip()
    assert row["dispatch"] == {f"{keys}, MPS": "heaviside_out"}


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
